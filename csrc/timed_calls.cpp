// TimedCalls' builtin timed(node, *args): clock, call node's own target, clock, one table store.
#include "timed_calls.h"

#include <cstddef>
#include <exception>
#include <new>
#include <stdexcept>

#include "arguments.h"
#include "clock.h"
#include "fast_calls.h"
#include "heap_type.h"
#include "session_state.h"

namespace pyfxprof {

namespace {

// What node k's call runs. One contiguous array for all nodes: the hot path touches one
// shared builtin and one entry, which measured cheaper after a tensor op than one callable
// object per node (benchmarks/README.md).
struct Entry {
  PyObject* target = nullptr;  // callable, or method name (str) when `method`; null: not set
  PyObject* path = nullptr;     // attribute names looked up on target inside the interval
  int64_t cuda_event_id = -1;   // -1: no CUDA events
  bool method = false;
  bool cuda_event_after = false;
};

struct TimedCalls {
  PyObject_HEAD
  SampleTable* table;
  binaryfunc* binaries;  // set for operator.add & co. without CUDA events: the `x + 1` path
  Entry* entries;
  uint32_t count;
  bool cuda;  // some entry records CUDA events
  PyObject* table_owner;
};

// The node number timed() is called with: a small int constant of the generated code.
inline Py_ssize_t node_number(PyObject* number) {
#if PY_VERSION_HEX >= 0x030C0000
  auto* value = reinterpret_cast<PyLongObject*>(number);
  if (PyLong_CheckExact(number) && PyUnstable_Long_IsCompact(value)) {
    return PyUnstable_Long_CompactValue(value);
  }
#else
  if (PyLong_CheckExact(number) && (Py_SIZE(number) == 0 || Py_SIZE(number) == 1)) {
    return Py_SIZE(number) == 0 ? 0 : reinterpret_cast<PyLongObject*>(number)->ob_digit[0];
  }
#endif
  return PyLong_AsSsize_t(number);
}

bool record_cuda_event(int64_t id) {
  try {
    g_cuda.record(static_cast<uint32_t>(id), cuda_stream());
    return true;
  } catch (const std::exception& error) {
    set_cuda_error(error);
    return false;
  }
}

// operator.add and friends are called through the abstract API directly, as the plain graph's
// inline `x + 1` does, rather than through operator.add's own call.
struct OperatorFunction {
  const char* name;
  binaryfunc function;
};
constexpr OperatorFunction kOperators[] = {
    {"add", PyNumber_Add},         {"sub", PyNumber_Subtract}, {"mul", PyNumber_Multiply},
    {"truediv", PyNumber_TrueDivide}, {"floordiv", PyNumber_FloorDivide},
    {"matmul", PyNumber_MatrixMultiply}, {"getitem", PyObject_GetItem}};
constexpr size_t kOperatorCount = sizeof(kOperators) / sizeof(kOperators[0]);
PyObject* g_operator_objects[kOperatorCount] = {};

binaryfunc operator_function(PyObject* target) {
  for (size_t i = 0; i < kOperatorCount; ++i) {
    if (g_operator_objects[i] == target) return kOperators[i].function;
  }
  return nullptr;
}

int load_operator_objects() {
  PyObject* module = PyImport_ImportModule("_operator");
  if (!module) return -1;
  for (size_t i = 0; i < kOperatorCount; ++i) {
    g_operator_objects[i] = PyObject_GetAttrString(module, kOperators[i].name);  // kept for life
    if (!g_operator_objects[i]) {
      Py_DECREF(module);
      return -1;
    }
  }
  Py_DECREF(module);
  return 0;
}

// target.<path[0]>.<path[1]>... (a call_module node's submodule, looked up as the plain graph's
// generated code does), as a new reference.
PyObject* resolve_path(PyObject* target, PyObject* path) {
  PyObject* current = target;
  Py_INCREF(current);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(path); ++i) {
    PyObject* next = PyObject_GetAttr(current, PyTuple_GET_ITEM(path, i));
    Py_DECREF(current);
    if (!next) return nullptr;
    current = next;
  }
  return current;
}

// `args` has a writable slot before it (the node number's), so PY_VECTORCALL_ARGUMENTS_OFFSET.
// The entry's objects are held for the call: code it runs may set() the entry again.
PyObject* call_entry(const Entry& entry, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames) {
  const size_t nargsf = static_cast<size_t>(nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET;
  PyObject* target = entry.target;
  PyObject* path = entry.path;
  Py_INCREF(target);
  Py_XINCREF(path);
  PyObject* result = nullptr;
  if (path) {
    PyObject* callable = resolve_path(target, path);
    if (callable) result = PyObject_Vectorcall(callable, args, nargsf, kwnames);
    Py_XDECREF(callable);
  } else if (entry.method) {
    result = PyObject_VectorcallMethod(target, args, nargsf, kwnames);
  } else {
    result = PyObject_Vectorcall(target, args, nargsf, kwnames);
  }
  Py_DECREF(target);
  Py_XDECREF(path);
  return result;
}

// The node number of a timed() call, checked against the table; -1 with a Python error set.
Py_ssize_t node_of(TimedCalls* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "timed() needs the node number first");
    return -1;
  }
  const Py_ssize_t node = node_number(args[0]);
  if (node == -1 && PyErr_Occurred()) return -1;
  if (node < 0 || node >= static_cast<Py_ssize_t>(self->count)) {
    PyErr_Format(PyExc_ValueError, "timed(): node %zd has no target set", node);
    return -1;
  }
  return node;
}

// `begin` and `end` in clock ticks: converted to ns when the table is taken.
inline void record(TimedCalls* self, uint32_t node, int64_t begin, int64_t end) {
  self->table->record(node, begin, end, reinterpret_cast<uintptr_t>(PyThreadState_Get()));
}

// A call recording CUDA events around its interval (device timing).
__attribute__((noinline)) PyObject* timed_with_events(TimedCalls* self, const Entry& entry,
                                                      PyObject* const* args, Py_ssize_t nargs,
                                                      PyObject* kwnames) {
  if (entry.cuda_event_id >= 0 && !record_cuda_event(entry.cuda_event_id)) return nullptr;
  const int64_t begin = now_ticks();
  PyObject* result = call_entry(entry, args, nargs, kwnames);
  const int64_t end = now_ticks();
  if (!result) return nullptr;
  record(self, static_cast<uint32_t>(&entry - self->entries), begin, end);
  if (entry.cuda_event_after && !record_cuda_event(entry.cuda_event_id + 1)) {
    Py_DECREF(result);
    return nullptr;
  }
  return result;
}

// Every call but the `x + 1` kind, kept out of line so the shortest path stays compact.
__attribute__((noinline)) PyObject* timed_entry(TimedCalls* self, Py_ssize_t node,
                                                PyObject* const* args, Py_ssize_t nargs,
                                                PyObject* kwnames) {
  const Entry& entry = self->entries[node];
  if (!entry.target) {
    PyErr_Format(PyExc_ValueError, "timed(): node %zd has no target set", node);
    return nullptr;
  }
  const NvtxRanges* ranges = self->table->ranges();
  if (ranges) ranges->push(static_cast<uint32_t>(node));  // outside the timed interval
  PyObject* result;
  if (self->cuda) {
    result = timed_with_events(self, entry, args, nargs, kwnames);
  } else {
    const int64_t begin = now_ticks();
    result = call_entry(entry, args, nargs, kwnames);
    const int64_t end = now_ticks();
    if (result) record(self, static_cast<uint32_t>(node), begin, end);
  }
  if (ranges) ranges->pop(static_cast<uint32_t>(node));
  return result;
}

PyObject* timed(PyObject* callable, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  TimedCalls* self = reinterpret_cast<TimedCalls*>(callable);
  const Py_ssize_t node = node_of(self, args, nargs);
  if (node < 0) return nullptr;
  const binaryfunc binary = self->binaries[node];
  // `x + 1` & co. without CUDA events or NVTX ranges: the shortest path
  if (binary && nargs == 3 && !kwnames && !self->table->ranges()) {
    const int64_t begin = now_ticks();
    PyObject* result = binary(args[1], args[2]);
    const int64_t end = now_ticks();
    if (result) record(self, static_cast<uint32_t>(node), begin, end);
    return result;
  }
  return timed_entry(self, node, args + 1, nargs - 1, kwnames);
}

PyMethodDef g_timed_def = {
    "timed", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(timed)),
    METH_FASTCALL | METH_KEYWORDS,
    "timed(node, *args, **kwargs): call node's target, storing the call's duration in "
    "column `node`."};

void clear_entry(Entry& entry) {
  Py_CLEAR(entry.target);
  Py_CLEAR(entry.path);
  entry = Entry{};
}

// The node and CUDA event id of set(), range-checked at full width; false with a Python error.
bool check_numbers(TimedCalls* self, long long node, long long cuda_event_id) {
  try {
    checked_column(node, self->count, "set(): node");
    checked_range(cuda_event_id, -1, kMaxCudaEventId, "set(): cuda_event_id");
    return true;
  } catch (const std::invalid_argument& error) {
    PyErr_SetString(PyExc_ValueError, error.what());
    return false;
  }
}

bool check_entry(TimedCalls* self, long long node, PyObject* target, int method, PyObject* path,
                 long long cuda_event_id) {
  if (!check_numbers(self, node, cuda_event_id)) {
    return false;
  } else if (method && !PyUnicode_Check(target)) {
    PyErr_SetString(PyExc_TypeError, "a method call needs the method name as a str");
  } else if (path && !PyTuple_Check(path)) {
    PyErr_SetString(PyExc_TypeError, "path must be a tuple of attribute names");
  } else if (!method && !path && !PyCallable_Check(target)) {
    PyErr_SetString(PyExc_TypeError, "the target of a timed call must be callable");
  } else {
    for (Py_ssize_t i = 0; path && i < PyTuple_GET_SIZE(path); ++i) {
      if (!PyUnicode_Check(PyTuple_GET_ITEM(path, i))) {
        PyErr_SetString(PyExc_TypeError, "path holds attribute names");
        return false;
      }
    }
    return true;
  }
  return false;
}

PyObject* set_entry(PyObject* callable, PyObject* args, PyObject* kwargs) {
  TimedCalls* self = reinterpret_cast<TimedCalls*>(callable);
  static const char* names[] = {"node", "target", "method", "cuda_event_id", "cuda_event_after",
                                "path", nullptr};
  long long node = 0;
  PyObject* target = nullptr;
  PyObject* path = Py_None;
  int method = 0, cuda_event_after = 0;
  long long cuda_event_id = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LO|pLpO", const_cast<char**>(names), &node,
                                   &target, &method, &cuda_event_id, &cuda_event_after, &path)) {
    return nullptr;
  }
  if (path == Py_None) path = nullptr;
  if (!check_entry(self, node, target, method, path, cuda_event_id)) return nullptr;
  Entry& entry = self->entries[node];
  clear_entry(entry);
  Py_INCREF(target);
  entry.target = target;
  Py_XINCREF(path);
  entry.path = path;
  entry.method = method != 0;
  entry.cuda_event_id = cuda_event_id;
  entry.cuda_event_after = cuda_event_after != 0;
  const bool events = cuda_event_id >= 0 || cuda_event_after;
  self->binaries[node] = method || path || events ? nullptr : operator_function(target);
  self->cuda = self->cuda || cuda_event_id >= 0;
  Py_RETURN_NONE;
}

PyObject* entry_target(PyObject* callable, PyObject* arg) {
  TimedCalls* self = reinterpret_cast<TimedCalls*>(callable);
  const Py_ssize_t node = PyLong_AsSsize_t(arg);
  if (node == -1 && PyErr_Occurred()) return nullptr;
  if (node < 0 || node >= static_cast<Py_ssize_t>(self->count)) {
    PyErr_SetString(PyExc_IndexError, "node is not a column of the table");
    return nullptr;
  }
  PyObject* target = self->entries[node].target;
  if (!target) Py_RETURN_NONE;
  Py_INCREF(target);
  return target;
}

// The builtin every instrumented node calls; a builtin function object, so CPython's call
// specialisation calls it directly. Its module makes FX name the global pyfxprof__C_timed.
PyObject* timed_getter(PyObject* callable, void*) {
  PyObject* module = PyUnicode_FromString("pyfxprof._C");
  if (!module) return nullptr;
  PyObject* function = PyCFunction_NewEx(&g_timed_def, callable, module);
  Py_DECREF(module);
  return function;
}

int calls_traverse(PyObject* callable, visitproc visit, void* arg) {
  TimedCalls* self = reinterpret_cast<TimedCalls*>(callable);
  Py_VISIT(self->table_owner);
  for (uint32_t i = 0; i < self->count; ++i) {
    Py_VISIT(self->entries[i].target);
    Py_VISIT(self->entries[i].path);
  }
  return 0;
}

int calls_clear(PyObject* callable) {
  TimedCalls* self = reinterpret_cast<TimedCalls*>(callable);
  Py_CLEAR(self->table_owner);
  for (uint32_t i = 0; i < self->count; ++i) {
    clear_entry(self->entries[i]);
    self->binaries[i] = nullptr;
  }
  return 0;
}

void calls_dealloc(PyObject* callable) {
  TimedCalls* self = reinterpret_cast<TimedCalls*>(callable);
  PyTypeObject* type = Py_TYPE(callable);
  PyObject_GC_UnTrack(callable);
  calls_clear(callable);
  delete[] self->entries;
  delete[] self->binaries;
  type->tp_free(callable);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

Py_ssize_t calls_length(PyObject* callable) {
  return reinterpret_cast<TimedCalls*>(callable)->count;
}

PyMethodDef g_calls_methods[] = {
    {"set", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(set_entry)),
     METH_VARARGS | METH_KEYWORDS,
     "set(node, target, method=False, cuda_event_id=-1, cuda_event_after=False, path=None):\n"
     "what timed(node, ...) calls: `target`, or with method=True the method named `target` of\n"
     "its first argument, or with `path` (attribute names) target.<path...>, looked up inside\n"
     "the timed interval. With cuda_event_id >= 0 a CUDA event tagged so is recorded before\n"
     "the call (and one tagged cuda_event_id + 1 after it with cuda_event_after)."},
    {"target", entry_target, METH_O, "target(node): what node's call runs (None: not set)."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_calls_getset[] = {
    {"timed", timed_getter, nullptr, "timed(node, *args, **kwargs), the builtin nodes call",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot g_calls_slots[] = {
    {Py_tp_doc, const_cast<char*>("The timed calls of one instrumented graph, one entry per "
                                  "SampleTable column.")},
    {Py_tp_traverse, reinterpret_cast<void*>(calls_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(calls_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(calls_dealloc)},
    {Py_tp_methods, g_calls_methods},
    {Py_tp_getset, g_calls_getset},
    {Py_sq_length, reinterpret_cast<void*>(calls_length)},
    {0, nullptr}};

PyType_Spec g_calls_spec = {"pyfxprof._C.TimedCalls", sizeof(TimedCalls), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                            g_calls_slots};

PyTypeObject* g_calls_type = nullptr;

}  // namespace

int add_timed_calls_type(PyObject* module) {
  if (load_operator_objects() < 0) return -1;
  g_calls_type = add_heap_type(module, &g_calls_spec);
  if (!g_calls_type) return -1;
  return 0;
}

PyObject* new_timed_calls(SampleTable* table, PyObject* table_owner) {
  TimedCalls* self = PyObject_GC_New(TimedCalls, g_calls_type);
  if (!self) return nullptr;
  self->table = table;
  self->count = table->nodes();
  self->cuda = false;
  self->entries = new (std::nothrow) Entry[self->count];
  self->binaries = new (std::nothrow) binaryfunc[self->count]();
  if (!self->entries || !self->binaries) {
    self->count = 0;
    self->table_owner = nullptr;
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  Py_INCREF(table_owner);
  self->table_owner = table_owner;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace pyfxprof
