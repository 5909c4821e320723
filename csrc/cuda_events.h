// A pool of CUDA events recorded per node on a stream and resolved to elapsed ns after one synchronize.
#pragma once

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_runtime_table.h"

namespace pyfxprof {

// No usable CUDA runtime (not found, not a runtime, or not loaded yet).
class CudaUnavailable : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The CUDA runtime returned an error; the message names the call and CUDA's error string.
class CudaError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ResolvedEvents {
  std::vector<uint32_t> ids;         // id given to each record(), in record order
  std::vector<int64_t> elapsed_ns;   // time since the previous event (0 for the first)
};

class CudaEventTimer {
 public:
  ~CudaEventTimer();

  // Loads the runtime (see load_cuda_runtime) and pre-creates `pool_size` events.
  // Replaces any runtime loaded before. Throws CudaUnavailable or CudaError.
  void load(const std::string& explicit_path, size_t pool_size);
  void unload();

  bool available() const;
  std::string library() const;
  std::string reason() const;  // how the runtime was found, or why it is unavailable

  // Records the next pool event on `stream` (a cudaStream_t as an integer), tagged `id`.
  // Grows the pool (doubling) when every event is in use. Throws CudaError on failure; the
  // next resolve() then throws too, so a run with a missing event never yields numbers.
  void record(uint32_t id, uintptr_t stream);

  // One synchronize on the last event, then elapsed ns between consecutive events.
  // Frees the events for reuse, also when it throws CudaError (a record failed, or CUDA
  // reports an error now).
  ResolvedEvents resolve();

  // Forgets the events recorded so far (e.g. a run abandoned by an exception).
  void discard();

  size_t pool_size() const;
  uint64_t events_created() const;

 private:
  void require_loaded() const;
  void grow_pool(size_t extra);
  void check(cudaError_t status, const char* call) const;
  void destroy_pool();

  mutable std::mutex mutex_;
  CudaLoadResult runtime_;
  std::vector<cudaEvent_t> pool_;
  std::vector<uint32_t> ids_;
  size_t used_ = 0;
  uint64_t events_created_ = 0;
  std::string failure_;  // first record() error since the last resolve()/discard()
  std::string unavailable_reason_ = "CUDA runtime not loaded yet (call cuda_load())";
};

}  // namespace pyfxprof
