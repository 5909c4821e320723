// HotForward: a profiled model's forward while a Profiler block is open, its hot path in C.
#pragma once

#include <Python.h>

namespace pyfxprof {

// Readies the HotForward type and adds it and its factory `hot_forward` to `module`.
// Returns 0, or -1 with a Python error set.
int add_hot_forward(PyObject* module);

}  // namespace pyfxprof
