// TimedCalls: one native callable, timed(node, *args), timing node `node`'s call into a SampleTable.
#pragma once

#include <Python.h>

#include "sample_table.h"

namespace pyfxprof {

// Readies the TimedCalls type and adds it to `module`. Returns 0, or -1 with a Python error set.
int add_timed_calls_type(PyObject* module);

// A new TimedCalls with one empty entry per column of `table` (kept alive through
// `table_owner`). Its entries are filled by its `set` method; its `timed` attribute is the
// one builtin function every instrumented node calls as timed(node, *args, **kwargs).
PyObject* new_timed_calls(SampleTable* table, PyObject* table_owner);

}  // namespace pyfxprof
