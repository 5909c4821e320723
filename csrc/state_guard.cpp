// StateGuard: the Python state a captured graph assumed, checked in C before each replay.
//
// A guard watches entries of dicts (a module's __dict__, its _parameters, a class's dict, a
// function's globals): each (dict, key) is expected to hold one object, or to be absent. On
// CPython <= 3.13 a dict whose version tag is unchanged since the last check is skipped
// whole (one load), so a call whose model state did not change costs a few loads; a dict
// that changed has its watched keys compared by identity. The Python side
// (run/python_state.py) judges a failed check by equality and rebases the guard when the
// values are still equal (a new float object of the same value).
#include "state_guard.h"

#include <cstdint>
#include <new>
#include <vector>

#include "heap_type.h"

namespace pyfxprof {

namespace {

struct Watched {
  PyObject* key;       // strong
  PyObject* expected;  // strong; the guard's `absent` sentinel when the key must be absent
};

struct WatchedDict {
  PyObject* dict;  // strong
  uint64_t tag;    // the dict's version tag when last seen to hold
  std::vector<Watched> keys;
};

struct StateGuard {
  PyObject_HEAD
  PyObject* absent;  // strong
  std::vector<WatchedDict>* dicts;
};

PyTypeObject* g_guard_type = nullptr;

uint64_t version_of(PyObject* dict) {
#if PY_VERSION_HEX < 0x030E0000
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  return reinterpret_cast<PyDictObject*>(dict)->ma_version_tag;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
  (void)dict;
  return 0;  // no version tag: every check compares the keys
#endif
}

bool tags_available() { return PY_VERSION_HEX < 0x030E0000; }

// The object under `key` in `dict` (borrowed), `absent` when missing, null on an error.
PyObject* current(PyObject* dict, PyObject* key, PyObject* absent) {
  PyObject* found = PyDict_GetItemWithError(dict, key);
  if (found) return found;
  return PyErr_Occurred() ? nullptr : absent;
}

bool dict_holds(WatchedDict& watched, PyObject* absent) {
  const uint64_t tag = version_of(watched.dict);
  if (tags_available() && tag == watched.tag) return true;
  for (const Watched& entry : watched.keys) {
    PyObject* found = current(watched.dict, entry.key, absent);
    if (found != entry.expected) {
      if (!found) PyErr_Clear();
      return false;
    }
  }
  watched.tag = tag;
  return true;
}

PyObject* guard_holds(PyObject* self, PyObject*) {
  return PyBool_FromLong(state_guard_holds(self));
}

// Expect each watched key's current object (after the Python side found it equal).
PyObject* guard_rebase(PyObject* object, PyObject*) {
  StateGuard* self = reinterpret_cast<StateGuard*>(object);
  for (WatchedDict& watched : *self->dicts) {
    for (Watched& entry : watched.keys) {
      PyObject* found = current(watched.dict, entry.key, self->absent);
      if (!found) return nullptr;
      Py_INCREF(found);
      Py_SETREF(entry.expected, found);
    }
    watched.tag = version_of(watched.dict);
  }
  Py_RETURN_NONE;
}

int guard_traverse(PyObject* object, visitproc visit, void* arg) {
  StateGuard* self = reinterpret_cast<StateGuard*>(object);
  Py_VISIT(self->absent);
  if (self->dicts) {
    for (const WatchedDict& watched : *self->dicts) {
      Py_VISIT(watched.dict);
      for (const Watched& entry : watched.keys) {
        Py_VISIT(entry.key);
        Py_VISIT(entry.expected);
      }
    }
  }
  return 0;
}

int guard_clear(PyObject* object) {
  StateGuard* self = reinterpret_cast<StateGuard*>(object);
  Py_CLEAR(self->absent);
  if (self->dicts) {
    std::vector<WatchedDict>* dicts = self->dicts;
    self->dicts = nullptr;
    for (WatchedDict& watched : *dicts) {
      Py_CLEAR(watched.dict);
      for (Watched& entry : watched.keys) {
        Py_CLEAR(entry.key);
        Py_CLEAR(entry.expected);
      }
    }
    delete dicts;
  }
  return 0;
}

void guard_dealloc(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  PyObject_GC_UnTrack(object);
  guard_clear(object);
  type->tp_free(object);
  Py_DECREF(type);
}

PyMethodDef g_guard_methods[] = {
    {"holds", guard_holds, METH_NOARGS,
     "holds() -> bool: every watched key still holds the object expected (or is absent)"},
    {"rebase", guard_rebase, METH_NOARGS,
     "rebase(): expect each watched key's current object from now on"},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot g_guard_slots[] = {
    {Py_tp_doc, const_cast<char*>("The Python state a captured graph assumed: dict entries "
                                  "checked by identity, skipped while a dict is unchanged.")},
    {Py_tp_methods, g_guard_methods},
    {Py_tp_traverse, reinterpret_cast<void*>(guard_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(guard_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(guard_dealloc)},
    {0, nullptr}};

PyType_Spec g_guard_spec = {"pyfxprof._C.StateGuard", sizeof(StateGuard), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                                Py_TPFLAGS_DISALLOW_INSTANTIATION,
                            g_guard_slots};

// One (dict, ((key, expected), ...)) item of state_guard()'s list, appended to `dicts`.
bool add_watched(PyObject* item, PyObject* absent, std::vector<WatchedDict>& dicts) {
  PyObject *dict, *keys;
  if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "O!O!", &PyDict_Type, &dict,
                                                &PyTuple_Type, &keys)) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_TypeError, "state_guard(): items are (dict, ((key, expected), ...))");
    }
    return false;
  }
  WatchedDict watched{dict, version_of(dict), {}};
  Py_INCREF(dict);
  dicts.push_back(watched);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); ++i) {
    PyObject* pair = PyTuple_GET_ITEM(keys, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "state_guard(): keys are (key, expected) pairs");
      return false;
    }
    PyObject* key = PyTuple_GET_ITEM(pair, 0);
    PyObject* expected = PyTuple_GET_ITEM(pair, 1);
    Py_INCREF(key);
    Py_INCREF(expected);
    dicts.back().keys.push_back({key, expected});
  }
  (void)absent;
  return true;
}

PyObject* new_state_guard(PyObject*, PyObject* args) {
  PyObject *items, *absent;
  if (!PyArg_ParseTuple(args, "O!O:state_guard", &PyList_Type, &items, &absent)) return nullptr;
  StateGuard* self = PyObject_GC_New(StateGuard, g_guard_type);
  if (!self) return nullptr;
  Py_INCREF(absent);
  self->absent = absent;
  self->dicts = new (std::nothrow) std::vector<WatchedDict>();
  PyObject* object = reinterpret_cast<PyObject*>(self);
  PyObject_GC_Track(object);
  if (!self->dicts) {
    Py_DECREF(object);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); ++i) {
    if (!add_watched(PyList_GET_ITEM(items, i), absent, *self->dicts)) {
      Py_DECREF(object);
      return nullptr;
    }
  }
  return object;
}

PyMethodDef g_guard_functions[] = {
    {"state_guard", new_state_guard, METH_VARARGS,
     "state_guard(items, absent) -> StateGuard\n\n"
     "items: a list of (dict, ((key, expected), ...)); `expected` is `absent` for a key that\n"
     "must be missing. holds() is true while every key holds its expected object."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool state_guard_holds(PyObject* object) {
  StateGuard* self = reinterpret_cast<StateGuard*>(object);
  if (!self->dicts) return false;
  for (WatchedDict& watched : *self->dicts) {
    if (!dict_holds(watched, self->absent)) return false;
  }
  return true;
}

bool is_state_guard(PyObject* object) {
  return g_guard_type && Py_IS_TYPE(object, g_guard_type);
}

int add_state_guard(PyObject* module) {
  g_guard_type = add_heap_type(module, &g_guard_spec);
  if (!g_guard_type) return -1;
  return PyModule_AddFunctions(module, g_guard_functions);
}

}  // namespace pyfxprof
