// TimedRun: one run of an instrumented graph as one SampleTable row, in one native call.
#pragma once

#include <Python.h>

#include "sample_table.h"

namespace pyfxprof {

// Readies the TimedRun type and adds it to `module`. Returns 0, or -1 with a Python error set.
int add_timed_run_type(PyObject* module);

// A new TimedRun: calling it as run(args), args a tuple, opens a row of `table` on the
// calling thread, calls `forward(*args)` and closes the row (leaves it unended when the call
// raises). A row another thread holds open raises `busy_error`. `table` is kept alive through
// `table_owner`.
PyObject* new_timed_run(SampleTable* table, PyObject* table_owner, PyObject* forward,
                        PyObject* busy_error);

}  // namespace pyfxprof
