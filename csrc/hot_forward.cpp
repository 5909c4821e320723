// HotForward: a profiled model's forward while a Profiler block is open; its hot path in C.
//
// A call of the profiled thread, with positional arguments only, whose arguments' key names an
// armed call group (pyfxprof/loop/calls.py) of the model's current training flag, is one timed run
// of that group and one log entry, without a line of Python between the model's call and the
// run (after a long model run the Profiler's Python runs with cold caches: each step of it
// costs several times its warm cost, benchmarks/bench_loop_path.py). The checks skip what they
// can for the same reason: torch.Tensor's own dtype and shape getters (no attribute lookup),
// the training flag from the model's __dict__ (not through nn.Module's __getattr__ hook), and
// Dynamo's callback asked for only while a frame evaluation hook is installed. A group
// captured by Dynamo is armed with its guards: Dynamo's own check runs on each call before
// the run (Dynamo's generated code), as torch.compile checks them. In a step that records
// nothing, a call of the `passing` thread is the model's own forward (`own`), counted, with no
// Python of the Profiler (calls it makes of the model itself pass uncounted, as the Python path
// passes nested calls). Every other call goes to `general`, the Profiler's Python path.
#include "hot_forward.h"

#include <descrobject.h>
#include <structmember.h>

#include <cstddef>
#include <cstdint>

#include "clock.h"
#include "heap_type.h"
#include "logged_calls.h"

namespace pyfxprof {

namespace {

struct HotForward {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* dict;          // __wrapped__, __name__, ... (functools.update_wrapper)
  PyObject* general;       // every call the hot path does not take: general(*args, **kwargs)
  PyObject* own;           // the model's own forward, which `passing`'s calls run
  PyObject* armed;         // dict: args_key -> (group, run, training, index, guards)
  PyObject* module;        // the model, whose `training` flag each call checks
  PyObject* tensor_type;   // torch.Tensor: one exact tensor's key is (dtype, shape)
  bool training_in_dict;   // the model's class does not define `training`: the flag is read
                           // from the model's __dict__, without its class's __getattr__
  getter dtype_of;         // torch.Tensor's own getters of dtype and shape, called directly
  getter shape_of;         // (no attribute lookup per call); null: looked up as attributes
  PyObject* log;           // the Profiler's LoggedCalls
  PyObject* args_key;      // the Python key function, for any other call
  PyObject* on_failure;    // on_failure(group, error): the failure note, before the re-raise
  PyObject* dynamo;        // get_eval_frame_callback once torch._dynamo is loaded, else null
  unsigned long thread;    // the thread whose calls take the hot path; 0: none now
  unsigned long passing;   // the thread whose calls run `own`, counted (a NONE step); 0: none
  long long passed;        // calls of `own` in progress (a nested call passes uncounted)
  long long calls;         // calls of the model seen while open (numbers the logged ones)
  long long first_call;    // the number of the block's first call
  long long own_ns_after;  // the Profiler's own time after the last logged call's end
};

PyObject* g_dtype = nullptr;
PyObject* g_shape = nullptr;
PyObject* g_training = nullptr;
PyObject* g_args = nullptr;
PyObject* g_dynamo_module = nullptr;

PyObject* call_general(HotForward* self, PyObject* const* args, size_t nargsf,
                       PyObject* kwnames) {
  if (!self->general) {
    PyErr_SetString(PyExc_RuntimeError, "the Profiler's forward has no general path set");
    return nullptr;
  }
  return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
}

// Whether a compiled caller is running (Dynamo's eval-frame callback is set): its calls take
// the general path, which runs them with the callback off. -1 with a Python error set.
int compiled_caller(HotForward* self) {
#if PY_VERSION_HEX >= 0x03090000
  // No frame evaluation hook installed (PEP 523): no thread runs with Dynamo's callback set,
  // so no compiled caller; Dynamo installs its hook while any thread has the callback set.
  if (_PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) ==
      _PyEval_EvalFrameDefault) {
    return 0;
  }
#endif
  if (!self->dynamo) {
    PyObject* loaded = PyImport_GetModule(g_dynamo_module);
    if (!loaded) return PyErr_Occurred() ? -1 : 0;  // not loaded: nothing is compiled
    Py_DECREF(loaded);
    PyObject* eval_frame = PyImport_ImportModule("torch._C._dynamo.eval_frame");
    if (!eval_frame) return -1;
    self->dynamo = PyObject_GetAttrString(eval_frame, "get_eval_frame_callback");
    Py_DECREF(eval_frame);
    if (!self->dynamo) return -1;
  }
  PyObject* callback = PyObject_CallNoArgs(self->dynamo);
  if (!callback) return -1;
  const int active = callback != Py_None;
  Py_DECREF(callback);
  return active;
}

// The call's key, as run/call_groups.args_key gives it: (dtype, shape) for one tensor.
PyObject* key_of(HotForward* self, PyObject* call) {
  if (PyTuple_GET_SIZE(call) == 1) {
    PyObject* arg = PyTuple_GET_ITEM(call, 0);
    if (reinterpret_cast<PyObject*>(Py_TYPE(arg)) == self->tensor_type) {
      PyObject* dtype = self->dtype_of ? self->dtype_of(arg, nullptr)
                                       : PyObject_GetAttr(arg, g_dtype);
      if (!dtype) return nullptr;
      PyObject* shape = self->shape_of ? self->shape_of(arg, nullptr)
                                       : PyObject_GetAttr(arg, g_shape);
      PyObject* key = shape ? PyTuple_Pack(2, dtype, shape) : nullptr;
      Py_DECREF(dtype);
      Py_XDECREF(shape);
      return key;
    }
  }
  return PyObject_CallOneArg(self->args_key, call);
}

// The model's `training` flag (new reference), from its __dict__ when it lives there.
PyObject* training_flag(HotForward* self) {
  if (self->training_in_dict) {
    PyObject* dict = PyObject_GenericGetDict(self->module, nullptr);
    PyObject* flag = dict ? PyDict_GetItemWithError(dict, g_training) : nullptr;
    Py_XINCREF(flag);
    Py_XDECREF(dict);
    if (flag) return flag;
    PyErr_Clear();  // no __dict__, or no flag in it: getattr says what the flag is
  }
  return PyObject_GetAttr(self->module, g_training);
}

// Whether the Dynamo guards `guards` = (check, frame_locals) hold for `call`: check(frame_locals)
// with frame_locals["args"] set to the call's arguments for the check only. An error in the
// check (none set after it) counts as not holding: the general path judges the call.
bool dynamo_guards_hold(PyObject* guards, PyObject* call) {
  if (!PyTuple_CheckExact(guards) || PyTuple_GET_SIZE(guards) != 2) return false;
  PyObject* frame_locals = PyTuple_GET_ITEM(guards, 1);
  if (!PyDict_CheckExact(frame_locals) || PyDict_SetItem(frame_locals, g_args, call) != 0) {
    PyErr_Clear();
    return false;
  }
  PyObject* verdict = PyObject_CallOneArg(PyTuple_GET_ITEM(guards, 0), frame_locals);
  const int holds = verdict ? PyObject_IsTrue(verdict) : -1;
  Py_XDECREF(verdict);
  PyErr_Clear();
  if (PyDict_SetItem(frame_locals, g_args, Py_None) != 0) PyErr_Clear();  // holds no call
  return holds == 1;
}

// The armed entry (new reference) for this call, or null (no Python error) when the call
// is not the hot path's: no armed group, the model's training flag is not the group's, or
// the group's Dynamo guards refuse the call (the general path judges it).
PyObject* armed_entry(HotForward* self, PyObject* call) {
  PyObject* key = key_of(self, call);
  PyObject* entry = key ? PyDict_GetItemWithError(self->armed, key) : nullptr;
  Py_XDECREF(key);
  if (!entry || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 5) {
    PyErr_Clear();  // an odd argument the key or the dict refused: the general path decides
    return nullptr;
  }
  Py_INCREF(entry);
  PyObject* training = training_flag(self);
  const int same = training ? PyObject_RichCompareBool(training, PyTuple_GET_ITEM(entry, 2), Py_EQ)
                            : -1;
  Py_XDECREF(training);
  PyObject* guards = PyTuple_GET_ITEM(entry, 4);
  if (same != 1 || (guards != Py_None && !dynamo_guards_hold(guards, call))) {
    PyErr_Clear();
    Py_DECREF(entry);
    return nullptr;
  }
  return entry;
}

// The model's own exception goes on unchanged, after on_failure(group, error) noted it.
void note_failure(HotForward* self, PyObject* group) {
  if (!PyErr_ExceptionMatches(PyExc_Exception)) return;  // KeyboardInterrupt & co.: no note
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback) PyException_SetTraceback(value, traceback);
  PyObject* noted = PyObject_CallFunctionObjArgs(self->on_failure, group, value, nullptr);
  if (noted) {
    Py_DECREF(noted);
  } else {
    PyErr_Clear();  // the note failed: the model's error still goes on as it is
  }
  PyErr_Restore(type, value, traceback);
}

// One recorded call: the group's timed run on `call` and its log entry (loop/calls.py, _recorded).
PyObject* recorded(HotForward* self, PyObject* entry, PyObject* call, int64_t entered) {
  self->calls += 1;
  const int64_t start = now_ns();
  PyObject* result = PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 1), call);
  const int64_t end = now_ns();
  if (!result) {
    note_failure(self, PyTuple_GET_ITEM(entry, 0));
    return nullptr;
  }
  const long long index = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 3));
  if (index == -1 && PyErr_Occurred()) {
    Py_DECREF(result);
    return nullptr;
  }
  log_call(self->log, {start, end, index, start - entered + self->own_ns_after, self->calls,
                       self->calls == self->first_call ? 1 : 0});
  self->own_ns_after = now_ns() - end;
  return result;
}

// A call of the `passing` thread: the model's own forward, counted unless nested in one.
PyObject* passed_call(HotForward* self, PyObject* const* args, size_t nargsf,
                      PyObject* kwnames) {
  if (self->passed == 0) {
    const int compiled = compiled_caller(self);
    if (compiled != 0) return compiled < 0 ? nullptr : call_general(self, args, nargsf, kwnames);
    self->calls += 1;
  }
  PyObject* own = self->own;
  if (!own) return call_general(self, args, nargsf, kwnames);
  Py_INCREF(own);  // (the call may set another)
  self->passed += 1;
  PyObject* result = PyObject_Vectorcall(own, args, nargsf, kwnames);
  self->passed -= 1;
  Py_DECREF(own);
  return result;
}

PyObject* hot_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  HotForward* self = reinterpret_cast<HotForward*>(callable);
  if (self->passing != 0 && PyThread_get_thread_ident() == self->passing) {
    return passed_call(self, args, nargsf, kwnames);
  }
  if (self->thread == 0 || (kwnames && PyTuple_GET_SIZE(kwnames) != 0) ||
      PyThread_get_thread_ident() != self->thread) {
    return call_general(self, args, nargsf, kwnames);
  }
  const int compiled = compiled_caller(self);
  if (compiled != 0) return compiled < 0 ? nullptr : call_general(self, args, nargsf, kwnames);
  const int64_t entered = now_ns();
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject* call = PyTuple_New(nargs);
  if (!call) return nullptr;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(call, i, args[i]);
  }
  PyObject* entry = armed_entry(self, call);
  PyObject* result = entry ? recorded(self, entry, call, entered)
                           : call_general(self, args, nargsf, kwnames);
  Py_XDECREF(entry);
  Py_DECREF(call);
  return result;
}

int hot_traverse(PyObject* callable, visitproc visit, void* arg) {
  HotForward* self = reinterpret_cast<HotForward*>(callable);
  Py_VISIT(self->dict);
  Py_VISIT(self->general);
  Py_VISIT(self->own);
  Py_VISIT(self->armed);
  Py_VISIT(self->module);
  Py_VISIT(self->tensor_type);
  Py_VISIT(self->log);
  Py_VISIT(self->args_key);
  Py_VISIT(self->on_failure);
  Py_VISIT(self->dynamo);
  return 0;
}

int hot_clear(PyObject* callable) {
  HotForward* self = reinterpret_cast<HotForward*>(callable);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->general);
  Py_CLEAR(self->own);
  Py_CLEAR(self->armed);
  Py_CLEAR(self->module);
  Py_CLEAR(self->tensor_type);
  Py_CLEAR(self->log);
  Py_CLEAR(self->args_key);
  Py_CLEAR(self->on_failure);
  Py_CLEAR(self->dynamo);
  return 0;
}

void hot_dealloc(PyObject* callable) {
  PyTypeObject* type = Py_TYPE(callable);
  PyObject_GC_UnTrack(callable);
  hot_clear(callable);
  type->tp_free(callable);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

PyMemberDef g_hot_members[] = {
    {"general", T_OBJECT, offsetof(HotForward, general), 0,
     "general(*args, **kwargs): the Profiler's Python path, for every other call"},
    {"own", T_OBJECT, offsetof(HotForward, own), 0,
     "the model's own forward, which the `passing` thread's calls run"},
    {"thread", T_ULONG, offsetof(HotForward, thread), 0,
     "the thread (threading.get_ident()) whose calls take the hot path; 0: none now"},
    {"passing", T_ULONG, offsetof(HotForward, passing), 0,
     "the thread whose calls run `own`, counted in `calls` (a step that records nothing); "
     "0: none now"},
    {"calls", T_LONGLONG, offsetof(HotForward, calls), 0, "calls seen while open"},
    {"first_call", T_LONGLONG, offsetof(HotForward, first_call), 0, "the block's first call"},
    {"own_ns_after", T_LONGLONG, offsetof(HotForward, own_ns_after), 0,
     "the Profiler's time after the last logged call's end"},
    {"__dictoffset__", T_PYSSIZET, offsetof(HotForward, dict), READONLY, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(HotForward, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef g_hot_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot g_hot_slots[] = {
    {Py_tp_doc, const_cast<char*>("A profiled model's forward while a Profiler block is open: "
                                  "armed calls of the profiled thread run here, others go to "
                                  "`general`.")},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_members, g_hot_members},
    {Py_tp_getset, g_hot_getset},
    {Py_tp_traverse, reinterpret_cast<void*>(hot_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(hot_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(hot_dealloc)},
    {0, nullptr}};

PyType_Spec g_hot_spec = {"pyfxprof._C.HotForward", sizeof(HotForward), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                              Py_TPFLAGS_DISALLOW_INSTANTIATION,
                          g_hot_slots};

PyTypeObject* g_hot_type = nullptr;

// The getter of `type`'s attribute `name` when it is a plain C getset (closure-free, as
// torch.Tensor's dtype and shape are), else null: the attribute is looked up per call.
getter own_getter(PyObject* type, PyObject* name) {
  PyObject* descriptor = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), name);
  if (!descriptor || !Py_IS_TYPE(descriptor, &PyGetSetDescr_Type)) return nullptr;
  PyGetSetDef* getset = reinterpret_cast<PyGetSetDescrObject*>(descriptor)->d_getset;
  return getset->closure ? nullptr : getset->get;
}

PyObject* new_hot_forward(PyObject*, PyObject* args) {
  PyObject *armed, *module, *tensor_type, *log, *args_key, *on_failure;
  if (!PyArg_ParseTuple(args, "O!OO!OOO:hot_forward", &PyDict_Type, &armed, &module,
                        &PyType_Type, &tensor_type, &log, &args_key, &on_failure)) {
    return nullptr;
  }
  if (!is_logged_calls(log)) {
    PyErr_SetString(PyExc_TypeError, "hot_forward(): log must be a LoggedCalls (logged_calls())");
    return nullptr;
  }
  if (!PyCallable_Check(args_key) || !PyCallable_Check(on_failure)) {
    PyErr_SetString(PyExc_TypeError, "hot_forward(): args_key and on_failure must be callable");
    return nullptr;
  }
  HotForward* self = PyObject_GC_New(HotForward, g_hot_type);
  if (!self) return nullptr;
  self->vectorcall = hot_call;
  self->dict = self->general = self->own = self->dynamo = nullptr;
  // A class attribute or property `training` would take precedence over the instance's.
  self->training_in_dict = _PyType_Lookup(Py_TYPE(module), g_training) == nullptr;
  self->dtype_of = own_getter(tensor_type, g_dtype);
  self->shape_of = own_getter(tensor_type, g_shape);
  PyObject* given[] = {armed, module, tensor_type, log, args_key, on_failure};
  PyObject** fields[] = {&self->armed, &self->module, &self->tensor_type, &self->log,
                         &self->args_key, &self->on_failure};
  for (size_t i = 0; i < 6; ++i) {
    Py_INCREF(given[i]);
    *fields[i] = given[i];
  }
  self->thread = self->passing = 0;
  self->passed = 0;
  self->calls = self->own_ns_after = 0;
  self->first_call = 1;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return reinterpret_cast<PyObject*>(self);
}

PyMethodDef g_hot_functions[] = {
    {"hot_forward", new_hot_forward, METH_VARARGS,
     "hot_forward(armed, module, tensor_type, log, args_key, on_failure) -> HotForward\n\n"
     "The forward a Profiler installs on its model: a call of `thread` whose key (args_key)\n"
     "names an entry (group, run, training, index, guards) of the dict `armed`, with the\n"
     "model's training flag equal to `training` and `guards` None or Dynamo's guards\n"
     "(check, frame_locals) holding (check(frame_locals) true with frame_locals['args'] the\n"
     "call's arguments), is run(args) and one row (start, end, index,\n"
     "own_ns, calls, first) of the LoggedCalls `log`; a call of `passing` is own(*args,\n"
     "**kwargs), counted in `calls`; any other call is general(*args, **kwargs)."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int add_hot_forward(PyObject* module) {
  g_dtype = PyUnicode_InternFromString("dtype");
  g_shape = PyUnicode_InternFromString("shape");
  g_training = PyUnicode_InternFromString("training");
  g_args = PyUnicode_InternFromString("args");
  g_dynamo_module = PyUnicode_InternFromString("torch._dynamo");
  if (!g_dtype || !g_shape || !g_training || !g_args || !g_dynamo_module) return -1;
  g_hot_type = add_heap_type(module, &g_hot_spec);
  if (!g_hot_type) return -1;
  return PyModule_AddFunctions(module, g_hot_functions);
}

}  // namespace pyfxprof
