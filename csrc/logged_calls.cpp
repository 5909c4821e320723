// LoggedCalls: the Profiler loop's log of recorded calls, written by the native hot path
// (HotForward) and the Python path alike, read as one int64 array when latency is asked for.
#include "logged_calls.h"

#include <new>
#include <vector>

#include "heap_type.h"

namespace pyfxprof {

namespace {

struct Row {
  int64_t fields[kLoggedFields];
};

struct LoggedCalls {
  PyObject_HEAD
  std::vector<Row>* rows;  // grows to `capacity`, then a ring
  Py_ssize_t capacity;     // rows kept: the newest
  uint64_t appended;       // rows appended so far (the ring's next slot: appended % capacity)
};

PyTypeObject* g_logged_type = nullptr;

LoggedCalls* as_log(PyObject* object) { return reinterpret_cast<LoggedCalls*>(object); }

Py_ssize_t kept(LoggedCalls* self) { return static_cast<Py_ssize_t>(self->rows->size()); }

void push(LoggedCalls* self, const Row& row) {
  if (kept(self) < self->capacity) {
    try {
      self->rows->push_back(row);
      self->appended += 1;
      return;
    } catch (const std::bad_alloc&) {
      if (self->rows->empty()) return;  // nothing to overwrite: the row is lost
      self->capacity = kept(self);      // out of memory: a ring of what it holds
    }
  }
  (*self->rows)[self->appended % static_cast<uint64_t>(self->capacity)] = row;
  self->appended += 1;
}

// append(start, end, group, own_ns, call, first): one row, from the Python path.
PyObject* append(PyObject* object, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != kLoggedFields) {
    PyErr_Format(PyExc_TypeError, "append() takes %d ints (start, end, group, own_ns, call, "
                 "first), got %zd arguments", kLoggedFields, nargs);
    return nullptr;
  }
  Row row{};
  for (int i = 0; i < kLoggedFields; ++i) {
    row.fields[i] = PyLong_AsLongLong(args[i]);
    if (row.fields[i] == -1 && PyErr_Occurred()) return nullptr;
  }
  push(as_log(object), row);
  Py_RETURN_NONE;
}

// rows(): the kept rows, oldest first, as bytes of int64 (len() x 6, row-major).
PyObject* rows(PyObject* object, PyObject*) {
  LoggedCalls* self = as_log(object);
  const Py_ssize_t n = kept(self);
  PyObject* out = PyBytes_FromStringAndSize(nullptr, n * static_cast<Py_ssize_t>(sizeof(Row)));
  if (!out) return nullptr;
  Row* target = reinterpret_cast<Row*>(PyBytes_AS_STRING(out));
  const uint64_t oldest = n < self->capacity ? 0 : self->appended % static_cast<uint64_t>(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    target[i] = (*self->rows)[(oldest + static_cast<uint64_t>(i)) % static_cast<uint64_t>(n)];
  }
  return out;
}

Py_ssize_t length(PyObject* object) { return kept(as_log(object)); }

void dealloc(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  delete as_log(object)->rows;
  type->tp_free(object);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

PyMethodDef g_methods[] = {
    {"append", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(append)),
     METH_FASTCALL,
     "append(start, end, group, own_ns, call, first): one recorded call (the oldest goes "
     "when full)"},
    {"rows", rows, METH_NOARGS,
     "rows() -> bytes: the kept rows, oldest first, int64, 6 per row (start, end, group, "
     "own_ns, call, first)"},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot g_slots[] = {
    {Py_tp_doc, const_cast<char*>("The Profiler loop's log of recorded calls: the newest "
                                  "`capacity` rows of 6 ints.")},
    {Py_tp_methods, g_methods},
    {Py_sq_length, reinterpret_cast<void*>(length)},
    {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
    {0, nullptr}};

PyType_Spec g_spec = {"pyfxprof._C.LoggedCalls", sizeof(LoggedCalls), 0,
                      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, g_slots};

PyObject* new_logged_calls(PyObject*, PyObject* arg) {
  const Py_ssize_t capacity = PyLong_AsSsize_t(arg);
  if (capacity == -1 && PyErr_Occurred()) return nullptr;
  if (capacity < 1) {
    PyErr_SetString(PyExc_ValueError, "logged_calls(capacity): capacity must be at least 1");
    return nullptr;
  }
  LoggedCalls* self = PyObject_New(LoggedCalls, g_logged_type);
  if (!self) return nullptr;
  self->rows = new (std::nothrow) std::vector<Row>();
  if (!self->rows) {
    Py_DECREF(self);  // dealloc deletes a null vector: fine
    return PyErr_NoMemory();
  }
  self->capacity = capacity;
  self->appended = 0;
  try {
    self->rows->reserve(static_cast<size_t>(capacity < 1024 ? capacity : 1024));
  } catch (const std::bad_alloc&) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  return reinterpret_cast<PyObject*>(self);
}

PyMethodDef g_functions[] = {
    {"logged_calls", new_logged_calls, METH_O,
     "logged_calls(capacity) -> LoggedCalls: an empty log keeping the newest `capacity` rows"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool is_logged_calls(PyObject* object) {
  return reinterpret_cast<PyObject*>(Py_TYPE(object)) ==
         reinterpret_cast<PyObject*>(g_logged_type);
}

void log_call(PyObject* logged_calls, const int64_t (&row)[kLoggedFields]) {
  Row copy{};
  for (int i = 0; i < kLoggedFields; ++i) copy.fields[i] = row[i];
  push(as_log(logged_calls), copy);
}

int add_logged_calls(PyObject* module) {
  g_logged_type = add_heap_type(module, &g_spec);
  if (!g_logged_type) return -1;
  return PyModule_AddFunctions(module, g_functions);
}

}  // namespace pyfxprof
