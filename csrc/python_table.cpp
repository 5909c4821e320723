// pybind11 bindings of SampleTable and its TimedCalls factory (pyfxprof._C.SampleTable, timed_calls).
#include "python_table.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clock.h"
#include "nvtx_ranges.h"
#include "sample_table.h"
#include "timed_calls.h"
#include "timed_run.h"

namespace py = pybind11;

namespace pyfxprof {

namespace {

uintptr_t thread_token() { return reinterpret_cast<uintptr_t>(PyThreadState_Get()); }

// The samples as a (rows, nodes) int64 array that owns the table's storage: no copy.
py::array_t<int64_t> samples_array(std::vector<int64_t>&& samples, uint64_t rows, uint32_t nodes) {
  auto* owned = new std::vector<int64_t>(std::move(samples));
  py::capsule release(owned, [](void* p) { delete static_cast<std::vector<int64_t>*>(p); });
  return py::array_t<int64_t>({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(nodes)},
                              owned->data(), release);
}

// One bound of every run, its clock ticks turned into ns (-1, not set, stays -1).
py::array_t<int64_t> bounds_column_ns(const std::vector<RunBounds>& bounds,
                                      int64_t RunBounds::*field) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(bounds.size()));
  int64_t* data = out.mutable_data();
  for (size_t i = 0; i < bounds.size(); ++i) {
    const int64_t ticks = bounds[i].*field;
    data[i] = ticks == -1 ? -1 : ticks_to_ns(ticks);
  }
  return out;
}

// The table holds clock ticks (the hot path does not convert); ns from here on.
py::dict take_runs(SampleTable& table) {
  TakenRuns taken = table.take();
  for (int64_t& span : taken.samples) {
    if (span != -1) span = tick_span_ns(span);
  }
  const uint64_t rows = taken.bounds.size();
  py::dict out;
  out["samples"] = samples_array(std::move(taken.samples), rows, table.nodes());
  out["begin_ns"] = bounds_column_ns(taken.bounds, &RunBounds::begin);
  out["end_ns"] = bounds_column_ns(taken.bounds, &RunBounds::end);
  out["first_call_ns"] = bounds_column_ns(taken.bounds, &RunBounds::first_call);
  out["last_call_end_ns"] = bounds_column_ns(taken.bounds, &RunBounds::last_call_end);
  return out;
}

void begin_run(SampleTable& table) {
  bool opened = false;
  try {
    opened = table.begin_run(now_ticks(), thread_token());
  } catch (const std::bad_alloc&) {
    throw py::error_already_set((PyErr_NoMemory(), py::error_already_set()));
  }
  if (!opened) {
    throw std::runtime_error("another thread's run of this model is still open: pyfxprof times "
                             "one call of a profiled model at a time");
  }
}

// set_ranges(names): one NVTX range name per column, or None for no ranges.
void set_ranges(SampleTable& table, std::optional<std::vector<std::string>> names) {
  if (!names) {
    table.set_ranges(nullptr);
    return;
  }
  if (names->size() != table.nodes()) {
    throw py::value_error("set_ranges(names): one name per column: " +
                          std::to_string(table.nodes()) + " columns, " +
                          std::to_string(names->size()) + " names");
  }
  table.set_ranges(std::make_unique<NvtxRanges>(*names));
}

}  // namespace

void define_sample_table(py::module_& m) {
  py::class_<SampleTable>(m, "SampleTable",
                          "Runs x nodes table of node durations (ns), written by TimedCalls.timed.")
      .def(py::init<uint32_t, uint32_t>(), py::arg("nodes"), py::arg("spare") = 0,
           "`nodes` timed columns and `spare` more after them that no timed call writes.")
      .def_property_readonly("nodes", &SampleTable::nodes)
      .def_property_readonly("rows", &SampleTable::rows)
      .def_property_readonly("stray_calls", &SampleTable::stray_calls,
                             "Timed calls not stored: outside a run, or from another thread.")
      .def("reserve", &SampleTable::reserve, py::arg("runs"), "Allocate room for `runs` rows.")
      .def("begin_run", &begin_run, "Open a row (every column -1) on the calling thread.")
      .def(
          "end_run", [](SampleTable& t) { return t.end_run(now_ticks(), thread_token()); },
          "Close the calling thread's open row; False if it has none.")
      .def("abandon_run", &SampleTable::abandon_run, "Leave the open row unended (end_ns -1).")
      .def("clear", &SampleTable::clear, "Forget every row, keeping the reserved room.")
      .def("set_ranges", &set_ranges, py::arg("names"),
           "Push an NVTX range named names[k] around each timed call of column k (registered\n"
           "strings in the \"pyfxprof\" domain, for Nsight); None: no ranges. RuntimeError\n"
           "when pyfxprof was built without the NVTX headers (see nvtx_built).")
      .def("take", &take_runs,
           "Hand over the rows and empty the table: samples (rows x nodes int64, -1 where a\n"
           "node was not timed), begin_ns, end_ns (-1: not ended), first_call_ns,\n"
           "last_call_end_ns.");
  m.def(
      "timed_calls",
      [](py::object table) {
        if (!py::isinstance<SampleTable>(table)) {
          throw py::type_error("timed_calls(table): table must be a pyfxprof._C.SampleTable, got " +
                               std::string(py::str(py::type::of(table).attr("__name__"))));
        }
        PyObject* made = new_timed_calls(table.cast<SampleTable*>(), table.ptr());
        if (!made) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(made);
      },
      py::arg("table"),
      "The TimedCalls of `table`: one entry per column, set with .set(node, target, ...);\n"
      "instrumented nodes call .timed(node, *args, **kwargs).");
  m.def(
      "timed_run",
      [](py::object table, py::object forward, py::object busy_error) {
        if (!py::isinstance<SampleTable>(table)) {
          throw py::type_error("timed_run(table, forward, busy_error): table must be a "
                               "pyfxprof._C.SampleTable");
        }
        if (!PyCallable_Check(forward.ptr()) || !PyExceptionClass_Check(busy_error.ptr())) {
          throw py::type_error("timed_run(table, forward, busy_error): forward must be callable "
                               "and busy_error an exception class");
        }
        PyObject* made =
            new_timed_run(table.cast<SampleTable*>(), table.ptr(), forward.ptr(), busy_error.ptr());
        if (!made) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(made);
      },
      py::arg("table"), py::arg("forward"), py::arg("busy_error"),
      "The TimedRun of `table`: run(args), args a tuple, is one run of forward(*args), one\n"
      "row of `table` (begin_run, the call, end_run; unended when the call raises). A row\n"
      "another thread holds open raises busy_error.");
  m.attr("nvtx_built") = NvtxRanges::built_in();
  m.attr("nvtx_include_dir") = NvtxRanges::include_dir();
  if (add_timed_calls_type(m.ptr()) != 0) throw py::error_already_set();
  if (add_timed_run_type(m.ptr()) != 0) throw py::error_already_set();
}

}  // namespace pyfxprof
