// TimedCall's vectorcall: clock, call the node's own target, clock, one store into the table.
#include "timed_call.h"

#include <cstddef>
#include <exception>

#include <structmember.h>

#include "clock.h"
#include "fast_calls.h"
#include "session_state.h"

namespace pyfxprof {

namespace {

struct TimedCall {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  SampleTable* table;
  PyObject* table_owner;
  PyObject* target;  // callable, or method name (str) when `method`
  binaryfunc binary;  // set when target is operator.add & co.
  PyObject* path;     // tuple of attribute names looked up on target inside the interval, or null
  uint32_t node;
  bool method;
  bool cuda_event_after;
  int64_t cuda_event_id;  // -1: no CUDA events
};

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
PyObject* resolve_path(TimedCall* self) {
  PyObject* current = self->target;
  Py_INCREF(current);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->path); ++i) {
    PyObject* next = PyObject_GetAttr(current, PyTuple_GET_ITEM(self->path, i));
    Py_DECREF(current);
    if (!next) return nullptr;
    current = next;
  }
  return current;
}

PyObject* call_target(TimedCall* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (self->path) {
    PyObject* callable = resolve_path(self);
    if (!callable) return nullptr;
    PyObject* result = PyObject_Vectorcall(callable, args, nargsf, kwnames);
    Py_DECREF(callable);
    return result;
  }
  if (self->binary && !kwnames && PyVectorcall_NARGS(nargsf) == 2) {
    return self->binary(args[0], args[1]);
  }
  if (self->method) return PyObject_VectorcallMethod(self->target, args, nargsf, kwnames);
  return PyObject_Vectorcall(self->target, args, nargsf, kwnames);
}

PyObject* timed_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  TimedCall* self = reinterpret_cast<TimedCall*>(callable);
  if (self->cuda_event_id >= 0 && !record_cuda_event(self->cuda_event_id)) return nullptr;
  const int64_t begin = now_ns();
  PyObject* result = call_target(self, args, nargsf, kwnames);
  const int64_t end = now_ns();
  if (!result) return nullptr;
  self->table->record(self->node, begin, end, reinterpret_cast<uintptr_t>(PyThreadState_Get()));
  if (self->cuda_event_after && !record_cuda_event(self->cuda_event_id + 1)) {
    Py_DECREF(result);
    return nullptr;
  }
  return result;
}

int timed_traverse(PyObject* callable, visitproc visit, void* arg) {
  TimedCall* self = reinterpret_cast<TimedCall*>(callable);
  Py_VISIT(self->table_owner);
  Py_VISIT(self->target);
  Py_VISIT(self->path);
  return 0;
}

int timed_clear(PyObject* callable) {
  TimedCall* self = reinterpret_cast<TimedCall*>(callable);
  Py_CLEAR(self->table_owner);
  Py_CLEAR(self->target);
  Py_CLEAR(self->path);
  return 0;
}

void timed_dealloc(PyObject* callable) {
  PyTypeObject* type = Py_TYPE(callable);
  PyObject_GC_UnTrack(callable);
  timed_clear(callable);
  type->tp_free(callable);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

// FX names the generated code's global after __name__: timed_<target name>.
PyObject* timed_name(PyObject* callable, void*) {
  TimedCall* self = reinterpret_cast<TimedCall*>(callable);
  if (self->method) return PyUnicode_FromFormat("timed_%U", self->target);
  if (self->path && PyTuple_GET_SIZE(self->path) > 0) {
    return PyUnicode_FromFormat("timed_%U",
                                PyTuple_GET_ITEM(self->path, PyTuple_GET_SIZE(self->path) - 1));
  }
  PyObject* name = PyObject_GetAttrString(self->target, "__name__");
  if (!name) {
    PyErr_Clear();
    return PyUnicode_FromString("timed_call");
  }
  PyObject* out = PyUnicode_Check(name) ? PyUnicode_FromFormat("timed_%U", name)
                                        : PyUnicode_FromString("timed_call");
  Py_DECREF(name);
  return out;
}

PyObject* timed_target(PyObject* callable, void*) {
  PyObject* target = reinterpret_cast<TimedCall*>(callable)->target;
  Py_INCREF(target);
  return target;
}

PyObject* timed_node(PyObject* callable, void*) {
  return PyLong_FromUnsignedLong(reinterpret_cast<TimedCall*>(callable)->node);
}

PyGetSetDef g_timed_getset[] = {
    {"__name__", timed_name, nullptr, "timed_<name of the target>", nullptr},
    {"target", timed_target, nullptr, "the callable (or method name) being timed", nullptr},
    {"node", timed_node, nullptr, "the table column the duration goes to", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef g_timed_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(TimedCall, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot g_timed_slots[] = {
    {Py_tp_doc, const_cast<char*>("Calls its target and stores the call's duration in a "
                                  "SampleTable column.")},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_traverse, reinterpret_cast<void*>(timed_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(timed_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(timed_dealloc)},
    {Py_tp_getset, g_timed_getset},
    {Py_tp_members, g_timed_members},
    {0, nullptr}};

PyType_Spec g_timed_spec = {"pyfxprof._C.TimedCall", sizeof(TimedCall), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
                            g_timed_slots};

PyTypeObject* g_timed_call_type = nullptr;

}  // namespace

int add_timed_call_type(PyObject* module) {
  if (load_operator_objects() < 0) return -1;
  g_timed_call_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&g_timed_spec));
  if (!g_timed_call_type) return -1;
  Py_INCREF(g_timed_call_type);
  if (PyModule_AddObject(module, "TimedCall", reinterpret_cast<PyObject*>(g_timed_call_type)) < 0) {
    Py_DECREF(g_timed_call_type);
    return -1;
  }
  return 0;
}

PyObject* new_timed_call(SampleTable* table, PyObject* table_owner, uint32_t node,
                         PyObject* target, bool method, int64_t cuda_event_id,
                         bool cuda_event_after, PyObject* path) {
  TimedCall* self = PyObject_GC_New(TimedCall, g_timed_call_type);
  if (!self) return nullptr;
  self->vectorcall = timed_vectorcall;
  self->table = table;
  Py_INCREF(table_owner);
  self->table_owner = table_owner;
  Py_INCREF(target);
  self->target = target;
  self->binary = method || path ? nullptr : operator_function(target);
  Py_XINCREF(path);
  self->path = path;
  self->node = node;
  self->method = method;
  self->cuda_event_after = cuda_event_after;
  self->cuda_event_id = cuda_event_id;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace pyfxprof
