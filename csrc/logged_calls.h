// LoggedCalls: the Profiler loop's log of recorded calls, a bounded native ring of int rows.
#pragma once

#include <Python.h>

#include <cstdint>

namespace pyfxprof {

// One recorded call: run start and end (ns), call group, the Profiler's own ns, the call's
// number, whether it is the block's first (0/1).
constexpr int kLoggedFields = 6;

// Readies the LoggedCalls type and adds it and its factory `logged_calls` to `module`.
// Returns 0, or -1 with a Python error set.
int add_logged_calls(PyObject* module);

// Whether `object` is a LoggedCalls.
bool is_logged_calls(PyObject* object);

// Appends one row to a LoggedCalls (the oldest row goes when it is full). Never fails.
void log_call(PyObject* logged_calls, const int64_t (&row)[kLoggedFields]);

}  // namespace pyfxprof
