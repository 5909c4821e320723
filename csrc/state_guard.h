// StateGuard: the Python state a captured graph assumed (dict entries), checked in C per call.
#pragma once

#include <Python.h>

namespace pyfxprof {

// Readies the StateGuard type and adds it and its factory `state_guard` to `module`.
// Returns 0, or -1 with a Python error set.
int add_state_guard(PyObject* module);

// Whether `guard` (a StateGuard) still holds: every entry it watches is the object it
// expects. Never leaves a Python error set; a failed lookup counts as not holding.
bool state_guard_holds(PyObject* guard);

// Whether `object` is a StateGuard.
bool is_state_guard(PyObject* object);

}  // namespace pyfxprof
