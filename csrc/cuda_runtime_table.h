// Function-pointer table for the few CUDA runtime calls pyfxprof uses, loaded with dlopen.
#pragma once

#include <string>

namespace pyfxprof {

// The CUDA runtime ABI subset we need, declared here so nothing links against CUDA.
using cudaError_t = int;
using cudaEvent_t = void*;
using cudaStream_t = void*;
constexpr cudaError_t kCudaSuccess = 0;
constexpr unsigned kCudaEventDefault = 0;

struct CudaRuntimeTable {
  cudaError_t (*event_create_with_flags)(cudaEvent_t*, unsigned) = nullptr;
  cudaError_t (*event_destroy)(cudaEvent_t) = nullptr;
  cudaError_t (*event_record)(cudaEvent_t, cudaStream_t) = nullptr;
  cudaError_t (*event_synchronize)(cudaEvent_t) = nullptr;
  cudaError_t (*event_elapsed_time)(float*, cudaEvent_t, cudaEvent_t) = nullptr;
  const char* (*get_error_string)(cudaError_t) = nullptr;
};

struct CudaLoadResult {
  bool ok = false;
  std::string library;  // path or soname that was loaded
  std::string reason;   // why loading failed, or how the library was found
  void* handle = nullptr;
  CudaRuntimeTable table;
};

// Finds and loads the CUDA runtime: $PYFXPROF_CUDART if set (or `explicit_path` if
// non-empty), else one already loaded in the process (e.g. by torch), else libcudart.so.*
// from the library path. Never throws.
CudaLoadResult load_cuda_runtime(const std::string& explicit_path);

}  // namespace pyfxprof
