// The hot paths `mark(id)` (one clock read, one published record) and `now_ns()` as plain CPython functions.
#include "fast_calls.h"

#include <cstdint>

#include "clock.h"
#include "session_state.h"

namespace pyfxprof {

namespace {

PyObject* g_cuda_error = nullptr;
PyObject* g_cuda_unavailable = nullptr;
uintptr_t g_stream = 0;

// Parses a mark id; small non-negative ints take PyLong's fast path.
bool parse_id(PyObject* arg, uint32_t* id) {
  const long long value = PyLong_AsLongLong(arg);
  if (value == -1 && PyErr_Occurred()) return false;
  if (value < 0 || value > static_cast<long long>(UINT32_MAX)) {
    PyErr_SetString(PyExc_OverflowError, "mark id must be an int in [0, 2**32)");
    return false;
  }
  *id = static_cast<uint32_t>(value);
  return true;
}

PyObject* mark(PyObject*, PyObject* arg) {
  const int64_t timestamp = now_ns();
  uint32_t id = 0;
  if (!parse_id(arg, &id)) return nullptr;
  g_buffer.push(id, kKindMark, timestamp);
  Py_RETURN_NONE;
}

// mark() plus a CUDA event recorded on the current stream, tagged with the same id.
PyObject* mark_cuda(PyObject*, PyObject* arg) {
  const int64_t timestamp = now_ns();
  uint32_t id = 0;
  if (!parse_id(arg, &id)) return nullptr;
  g_buffer.push(id, kKindMark, timestamp);
  try {
    g_cuda.record(id, g_stream);
  } catch (const std::exception& error) {
    set_cuda_error(error);
    return nullptr;
  }
  Py_RETURN_NONE;
}

// The clock as a METH_NOARGS builtin: the Profiler loop reads it around every call.
PyObject* now_ns_builtin(PyObject*, PyObject*) { return PyLong_FromLongLong(now_ns()); }

// An empty METH_O call with the same argument parsing: the floor `mark` is compared to.
PyObject* noop(PyObject*, PyObject* arg) {
  uint32_t id = 0;
  if (!parse_id(arg, &id)) return nullptr;
  Py_RETURN_NONE;
}

PyMethodDef g_fast_methods[] = {
    {"mark", mark, METH_O,
     "mark(id: int) -> None\n\nRecord a node-boundary timestamp tagged `id` (0 <= id < 2**32).\n"
     "The hot path: one clock read and one lock-free record; a full buffer counts a drop."},
    {"mark_cuda", mark_cuda, METH_O,
     "mark_cuda(id: int) -> None\n\nmark(id), then record the next pool CUDA event on the stream\n"
     "set by cuda_set_stream(), tagged `id`. Raises CudaError / CudaUnavailable."},
    {"now_ns", now_ns_builtin, METH_NOARGS,
     "now_ns() -> int\n\nCurrent time in ns on the profiler's clock."},
    {"_noop", noop, METH_O,
     "_noop(id: int) -> None\n\nParse `id` and return: the bare call cost, for benchmarks."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_fast_calls(PyObject* module) { return PyModule_AddFunctions(module, g_fast_methods); }

void set_cuda_exception_types(PyObject* cuda_error, PyObject* cuda_unavailable) {
  g_cuda_error = cuda_error;
  g_cuda_unavailable = cuda_unavailable;
}

void set_cuda_stream(uintptr_t stream) { g_stream = stream; }

uintptr_t cuda_stream() { return g_stream; }

void set_cuda_error(const std::exception& error) {
  const bool unavailable = dynamic_cast<const CudaUnavailable*>(&error) != nullptr;
  PyObject* type = unavailable ? g_cuda_unavailable : g_cuda_error;
  PyErr_SetString(type ? type : PyExc_RuntimeError, error.what());
}

}  // namespace pyfxprof
