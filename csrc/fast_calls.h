// Plain CPython METH_O entry points for the hot path, where pybind11 dispatch would cost too much.
#pragma once

#include <Python.h>

namespace pyfxprof {

// Adds `mark` and `_noop` to `module`. Returns 0, or -1 with a Python error set.
int add_fast_calls(PyObject* module);

}  // namespace pyfxprof
