// pybind11 definition of pyfxprof._C: clock, record buffer, drain to numpy, CUDA event timer.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "arguments.h"
#include "clock.h"
#include "fast_calls.h"
#include "hot_forward.h"
#include "logged_calls.h"
#include "python_table.h"
#include "session_state.h"

namespace py = pybind11;
using namespace pyfxprof;

namespace {

template <typename T>
py::array_t<T> empty_array(size_t n) {
  return py::array_t<T>(static_cast<py::ssize_t>(n));
}

py::dict drain_to_numpy() {
  std::vector<Record> records;
  const uint64_t dropped = g_buffer.drain(records);
  const size_t n = records.size();
  auto timestamps = empty_array<int64_t>(n);
  auto ids = empty_array<uint32_t>(n);
  auto threads = empty_array<uint32_t>(n);
  auto kinds = empty_array<uint16_t>(n);
  int64_t* ts_out = timestamps.mutable_data();
  uint32_t* id_out = ids.mutable_data();
  uint32_t* thread_out = threads.mutable_data();
  uint16_t* kind_out = kinds.mutable_data();
  for (size_t i = 0; i < n; ++i) {
    ts_out[i] = records[i].timestamp_ns;
    id_out[i] = records[i].id;
    thread_out[i] = records[i].thread;
    kind_out[i] = records[i].kind;
  }
  py::dict out;
  out["timestamp_ns"] = timestamps;
  out["id"] = ids;
  out["thread"] = threads;
  out["kind"] = kinds;
  out["dropped"] = dropped;
  return out;
}

py::dict clock_info_dict() {
  const ClockInfo& info = init_clock();
  py::dict out;
  out["name"] = clock_name(info.kind);
  out["tsc_hz"] = info.tsc_hz;
  out["resolution_ns"] = info.resolution_ns;
  out["read_cost_ns"] = info.read_cost_ns;
  out["reason"] = info.reason;
  return out;
}

py::dict buffer_stats_dict() {
  const BufferStats s = g_buffer.stats();
  py::dict out;
  out["capacity_records"] = s.capacity_records;
  out["chunk_records"] = s.chunk_records;
  out["allocated_chunks"] = s.allocated_chunks;
  out["pending_records"] = s.pending_records;
  out["dropped_total"] = s.dropped_total;
  out["record_bytes"] = sizeof(Record);
  return out;
}

// Arithmetic only, no clock reads: a workload of fixed length for accuracy benchmarks.
void busy_loop(int64_t iterations) {
  checked_range(iterations, 0, kMaxBusyIterations, "iterations");
  volatile uint64_t sink = 0;
  for (int64_t i = 0; i < iterations; ++i) sink = sink + i;
}

int64_t spin_ns(int64_t duration_ns) {
  checked_range(duration_ns, 0, kMaxSpinNs, "duration_ns");
  const int64_t start = now_ns();
  int64_t now = start;
  while (now - start < duration_ns) now = now_ns();
  return now - start;
}

void define_clock_and_buffer(py::module_& m) {
  m.def("clock_info", &clock_info_dict,
        "Clock name ('tsc' or 'steady_clock'), tsc_hz, resolution_ns, read_cost_ns, reason.");
  m.def(
      "mark_kind",
      [](uint32_t id, uint16_t kind) { g_buffer.push(id, kind, now_ns()); },
      py::arg("id"), py::arg("kind"),
      "Record a timestamp with an explicit kind (ranges, run boundaries). Slower than mark().");
  m.def(
      "_mark_pybind11", [](uint32_t id) { g_buffer.push(id, kKindMark, now_ns()); }, py::arg("id"),
      "mark() dispatched through pybind11; kept only so benchmarks can show why mark() is not.");
  m.def("drain", &drain_to_numpy,
        "Take every record so far as numpy arrays: timestamp_ns (int64), id (uint32),\n"
        "thread (uint32), kind (uint16), plus 'dropped' (records lost to a full buffer since\n"
        "the previous drain).");
  m.def("buffer_stats", &buffer_stats_dict, "Capacity, chunking, pending and dropped counts.");
  m.def(
      "configure_buffer",
      [](uint64_t capacity_records, uint64_t chunk_records) {
        try {
          g_buffer.reset(capacity_records, chunk_records);
        } catch (const std::invalid_argument& error) {
          throw py::value_error(error.what());
        } catch (const std::bad_alloc&) {
          throw py::value_error("cannot allocate a record buffer of that size; the buffer "
                                "was left as it was");
        }
      },
      py::arg("capacity_records"), py::arg("chunk_records") = uint64_t{1} << 16,
      "Discard all records and set the cap (rounded up to a power of two, at most 2**40).\n"
      "A refused size (ValueError) leaves the buffer as it was. Not thread-safe against\n"
      "concurrent marks.");
  m.def("thread_number", &current_thread_number, "The calling thread's record thread number.");
  m.def("_spin_ns", &spin_ns, py::arg("duration_ns"),
        "Busy-wait on the profiler clock for duration_ns; returns the ns actually spent.");
  m.def("_busy_loop", &busy_loop, py::arg("iterations"),
        "Run `iterations` additions without reading any clock (a fixed-work node for benchmarks).");
  m.attr("RECORD_BYTES") = sizeof(Record);
  m.attr("KIND_MARK") = static_cast<int>(kKindMark);
  m.attr("KIND_RANGE_BEGIN") = static_cast<int>(kKindRangeBegin);
  m.attr("KIND_RANGE_END") = static_cast<int>(kKindRangeEnd);
  m.attr("KIND_RUN_BEGIN") = static_cast<int>(kKindRunBegin);
  m.attr("KIND_RUN_END") = static_cast<int>(kKindRunEnd);
}

py::dict cuda_status_dict() {
  py::dict out;
  out["available"] = g_cuda.available();
  out["library"] = g_cuda.library();
  out["reason"] = g_cuda.reason();
  out["pool_size"] = g_cuda.pool_size();
  out["events_created"] = g_cuda.events_created();
  return out;
}

void define_cuda(py::module_& m) {
  auto& unavailable =
      py::register_exception<CudaUnavailable>(m, "CudaUnavailable", PyExc_RuntimeError);
  auto& error = py::register_exception<CudaError>(m, "CudaError", PyExc_RuntimeError);
  set_cuda_exception_types(error.ptr(), unavailable.ptr());
  m.def(
      "cuda_set_stream", [](uintptr_t stream) { set_cuda_stream(stream); }, py::arg("stream"),
      "Set the stream mark_cuda() records on (torch.cuda.current_stream().cuda_stream).");
  m.def(
      "cuda_load",
      [](std::optional<std::string> path, int64_t pool_size) {
        checked_range(pool_size, 1, kMaxCudaPool, "pool_size");
        g_cuda.load(path.value_or(""), static_cast<size_t>(pool_size));
        return g_cuda.library();
      },
      py::arg("path") = py::none(), py::arg("pool_size") = 256,
      "Load the CUDA runtime (explicit path, $PYFXPROF_CUDART, the one already loaded, or\n"
      "libcudart.so.* on the library path) and pre-create events. Returns the library.\n"
      "Raises CudaUnavailable with the reason.");
  m.def("cuda_unload", [] { g_cuda.unload(); }, "Destroy the event pool and unload the runtime.");
  m.def("cuda_available", [] { return g_cuda.available(); });
  m.def("cuda_status", &cuda_status_dict,
        "available, library, reason (how it was found or why unavailable), pool_size,\n"
        "events_created.");
  m.def(
      "cuda_record", [](uint32_t id, uintptr_t stream) { g_cuda.record(id, stream); },
      py::arg("id"), py::arg("stream") = 0,
      "Record the next pool event on `stream` (torch.cuda.current_stream().cuda_stream).");
  m.def(
      "cuda_resolve",
      [] {
        ResolvedEvents resolved = g_cuda.resolve();
        const size_t n = resolved.ids.size();
        auto ids = empty_array<uint32_t>(n);
        auto elapsed = empty_array<int64_t>(n);
        if (n) {
          std::memcpy(ids.mutable_data(), resolved.ids.data(), n * sizeof(uint32_t));
          std::memcpy(elapsed.mutable_data(), resolved.elapsed_ns.data(), n * sizeof(int64_t));
        }
        py::dict out;
        out["id"] = ids;
        out["elapsed_ns"] = elapsed;
        return out;
      },
      "Synchronize once, then ids and ns elapsed since the previous event (0 for the first).");
  m.def("cuda_discard", [] { g_cuda.discard(); }, "Forget the events recorded so far.");
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "pyfxprof native core: calibrated clock, lock-free record buffer, CUDA events.";
  init_clock();
  define_clock_and_buffer(m);
  define_cuda(m);
  define_sample_table(m);
  if (add_fast_calls(m.ptr()) != 0) throw py::error_already_set();
  if (add_logged_calls(m.ptr()) != 0) throw py::error_already_set();
  if (add_hot_forward(m.ptr()) != 0) throw py::error_already_set();
}
