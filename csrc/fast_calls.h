// Plain CPython METH_O entry points for the hot path, where pybind11 dispatch would cost too much.
#pragma once

#include <Python.h>

#include <cstdint>
#include <exception>

namespace pyfxprof {

// Adds `mark`, `mark_cuda`, `now_ns` and `_noop` to `module`. Returns 0, or -1 with a Python error set.
int add_fast_calls(PyObject* module);

// The Python exception types `mark_cuda` raises (registered by the pybind11 module).
void set_cuda_exception_types(PyObject* cuda_error, PyObject* cuda_unavailable);

// The stream `mark_cuda` records its events on (a cudaStream_t as an integer; 0 = default).
void set_cuda_stream(uintptr_t stream);
uintptr_t cuda_stream();

// Sets the Python error for a failed CUDA event record (CudaUnavailable or CudaError).
void set_cuda_error(const std::exception& error);

}  // namespace pyfxprof
