// TimedRun's call: begin_run, the instrumented forward, end_run, without two pybind11 calls.
#include "timed_run.h"

#include <new>

#include "clock.h"
#include "heap_type.h"

namespace pyfxprof {

namespace {

struct TimedRun {
  PyObject_HEAD
  SampleTable* table;
  PyObject* table_owner;
  PyObject* forward;
  PyObject* busy_error;
};

// The calling thread, as the table's row owner (the same token the timed calls record with).
inline uintptr_t owner_token() { return reinterpret_cast<uintptr_t>(PyThreadState_Get()); }

// forward(*args) as one row of the table.
PyObject* timed_call_of(TimedRun* self, PyObject* args) {
  const uintptr_t owner = owner_token();
  bool opened = false;
  try {
    opened = self->table->begin_run(now_ticks(), owner);
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  }
  if (!opened) {
    PyErr_SetString(self->busy_error,
                    "another thread's run of this model is still open: pyfxprof times one call "
                    "of a profiled model at a time");
    return nullptr;
  }
  PyObject* result = PyObject_Call(self->forward, args, nullptr);
  if (!result) {
    self->table->abandon_run();  // the row stays, unended: failed_node() reads it
    return nullptr;
  }
  self->table->end_run(now_ticks(), owner);
  return result;
}

// tp_call, as run(args): the one argument, a tuple (the executors' calls: passed on as it
// is) or another sequence, holds the forward's positional arguments.
PyObject* timed_run_call(PyObject* callable, PyObject* call, PyObject* kwargs) {
  TimedRun* self = reinterpret_cast<TimedRun*>(callable);
  if (PyTuple_GET_SIZE(call) != 1 || (kwargs && PyDict_GET_SIZE(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "a TimedRun is called as run(args), args a sequence");
    return nullptr;
  }
  PyObject* args = PyTuple_GET_ITEM(call, 0);
  if (PyTuple_CheckExact(args)) return timed_call_of(self, args);
  PyObject* as_tuple = PySequence_Tuple(args);
  if (!as_tuple) return nullptr;
  PyObject* result = timed_call_of(self, as_tuple);
  Py_DECREF(as_tuple);
  return result;
}

int timed_run_traverse(PyObject* callable, visitproc visit, void* arg) {
  TimedRun* self = reinterpret_cast<TimedRun*>(callable);
  Py_VISIT(self->table_owner);
  Py_VISIT(self->forward);
  Py_VISIT(self->busy_error);
  return 0;
}

int timed_run_clear(PyObject* callable) {
  TimedRun* self = reinterpret_cast<TimedRun*>(callable);
  Py_CLEAR(self->table_owner);
  Py_CLEAR(self->forward);
  Py_CLEAR(self->busy_error);
  return 0;
}

void timed_run_dealloc(PyObject* callable) {
  PyTypeObject* type = Py_TYPE(callable);
  PyObject_GC_UnTrack(callable);
  timed_run_clear(callable);
  type->tp_free(callable);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

PyType_Slot g_timed_run_slots[] = {
    {Py_tp_doc, const_cast<char*>("One run of an instrumented graph as one SampleTable row: "
                                  "run(args) calls the graph's forward(*args).")},
    {Py_tp_call, reinterpret_cast<void*>(timed_run_call)},
    {Py_tp_traverse, reinterpret_cast<void*>(timed_run_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(timed_run_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(timed_run_dealloc)},
    {0, nullptr}};

PyType_Spec g_timed_run_spec = {
    "pyfxprof._C.TimedRun", sizeof(TimedRun), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    g_timed_run_slots};

PyTypeObject* g_timed_run_type = nullptr;

}  // namespace

int add_timed_run_type(PyObject* module) {
  g_timed_run_type = add_heap_type(module, &g_timed_run_spec);
  if (!g_timed_run_type) return -1;
  return 0;
}

PyObject* new_timed_run(SampleTable* table, PyObject* table_owner, PyObject* forward,
                        PyObject* busy_error) {
  TimedRun* self = PyObject_GC_New(TimedRun, g_timed_run_type);
  if (!self) return nullptr;
  self->table = table;
  Py_INCREF(table_owner);
  self->table_owner = table_owner;
  Py_INCREF(forward);
  self->forward = forward;
  Py_INCREF(busy_error);
  self->busy_error = busy_error;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace pyfxprof
