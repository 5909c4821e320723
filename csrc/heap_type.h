// One way to make a native type from its PyType_Spec and add it to the extension module.
#pragma once

#include <Python.h>

#include <cstring>

namespace pyfxprof {

// The type `spec` describes, added to `module` under its name's last part ("pyfxprof._C.X":
// X). A new reference the caller keeps for the module's life, or null with a Python error set.
inline PyTypeObject* add_heap_type(PyObject* module, PyType_Spec* spec) {
  PyObject* type = PyType_FromSpec(spec);
  if (!type) return nullptr;
  const char* dot = std::strrchr(spec->name, '.');
  Py_INCREF(type);  // PyModule_AddObject takes one reference on success
  if (PyModule_AddObject(module, dot ? dot + 1 : spec->name, type) < 0) {
    Py_DECREF(type);
    Py_DECREF(type);
    return nullptr;
  }
  return reinterpret_cast<PyTypeObject*>(type);
}

}  // namespace pyfxprof
