// TimedCall: a CPython callable that times the call of its target into a SampleTable column.
#pragma once

#include <Python.h>

#include <cstdint>

#include "sample_table.h"

namespace pyfxprof {

// Readies the TimedCall type and adds it to `module`. Returns 0, or -1 with a Python error set.
int add_timed_call_type(PyObject* module);

// A new TimedCall recording into column `node` of `table` (kept alive through `table_owner`).
// `target` is a callable, or with `method` a method name called on the first argument.
// With `cuda_event_id` >= 0, a CUDA event tagged with it is recorded before the call, and
// with `cuda_event_after` a second one tagged cuda_event_id + 1 after it. With `path` (a tuple
// of str, or null) the callable is target.<path...>, looked up inside the timed interval.
PyObject* new_timed_call(SampleTable* table, PyObject* table_owner, uint32_t node,
                         PyObject* target, bool method, int64_t cuda_event_id,
                         bool cuda_event_after, PyObject* path);

}  // namespace pyfxprof
