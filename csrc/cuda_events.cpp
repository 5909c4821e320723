// Event pool: record per node on a stream, resolve once per run, reuse and grow the pool.
#include "cuda_events.h"

#include <dlfcn.h>

#include <cmath>

namespace pyfxprof {

CudaEventTimer::~CudaEventTimer() {
  // The process may be exiting with the runtime already torn down: leak instead of calling it.
  pool_.clear();
}

void CudaEventTimer::check(cudaError_t status, const char* call) const {
  if (status == kCudaSuccess) return;
  const char* text = runtime_.table.get_error_string ? runtime_.table.get_error_string(status) : "";
  throw CudaError(std::string(call) + " failed: " + (text ? text : "unknown error") + " (code " +
                  std::to_string(status) + ")");
}

void CudaEventTimer::destroy_pool() {
  for (cudaEvent_t event : pool_) runtime_.table.event_destroy(event);
  pool_.clear();
  ids_.clear();
  used_ = 0;
  failure_.clear();
}

void CudaEventTimer::load(const std::string& explicit_path, size_t pool_size) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (runtime_.ok) {
    destroy_pool();
    dlclose(runtime_.handle);
    runtime_ = CudaLoadResult{};
  }
  CudaLoadResult loaded = load_cuda_runtime(explicit_path);
  if (!loaded.ok) {
    unavailable_reason_ = loaded.reason;
    throw CudaUnavailable("CUDA unavailable: " + loaded.reason);
  }
  runtime_ = loaded;
  events_created_ = 0;
  try {
    grow_pool(pool_size == 0 ? 1 : pool_size);
  } catch (const CudaError& error) {
    destroy_pool();
    dlclose(runtime_.handle);
    runtime_ = CudaLoadResult{};
    unavailable_reason_ = std::string("the CUDA runtime cannot create events: ") + error.what();
    throw CudaUnavailable("CUDA unavailable: " + unavailable_reason_);
  }
}

void CudaEventTimer::unload() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_.ok) return;
  destroy_pool();
  dlclose(runtime_.handle);
  runtime_ = CudaLoadResult{};
  unavailable_reason_ = "CUDA runtime unloaded";
}

bool CudaEventTimer::available() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runtime_.ok;
}

std::string CudaEventTimer::library() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runtime_.library;
}

std::string CudaEventTimer::reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runtime_.ok ? runtime_.reason : unavailable_reason_;
}

void CudaEventTimer::require_loaded() const {
  if (!runtime_.ok) throw CudaUnavailable("CUDA unavailable: " + unavailable_reason_);
}

void CudaEventTimer::grow_pool(size_t extra) {
  pool_.reserve(pool_.size() + extra);
  for (size_t i = 0; i < extra; ++i) {
    cudaEvent_t event = nullptr;
    check(runtime_.table.event_create_with_flags(&event, kCudaEventDefault),
          "cudaEventCreateWithFlags");
    pool_.push_back(event);
    ++events_created_;
  }
  ids_.resize(pool_.size());
}

void CudaEventTimer::record(uint32_t id, uintptr_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_loaded();
  if (used_ == pool_.size()) grow_pool(pool_.size());
  const cudaError_t status =
      runtime_.table.event_record(pool_[used_], reinterpret_cast<cudaStream_t>(stream));
  if (status != kCudaSuccess) {
    try {
      check(status, "cudaEventRecord");
    } catch (const CudaError& error) {
      if (failure_.empty()) failure_ = error.what();
      throw;
    }
  }
  ids_[used_++] = id;
}

ResolvedEvents CudaEventTimer::resolve() {
  std::lock_guard<std::mutex> lock(mutex_);
  require_loaded();
  // Whatever happens below, this run's events are released for the next run.
  const size_t count = used_;
  used_ = 0;
  if (!failure_.empty()) {
    const std::string failure = failure_;
    failure_.clear();
    throw CudaError("the events of this run are incomplete and were discarded: " + failure);
  }
  ResolvedEvents out;
  if (count == 0) return out;
  check(runtime_.table.event_synchronize(pool_[count - 1]), "cudaEventSynchronize");
  out.ids.assign(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(count));
  out.elapsed_ns.assign(count, 0);
  for (size_t k = 1; k < count; ++k) {
    float ms = 0.0f;
    check(runtime_.table.event_elapsed_time(&ms, pool_[k - 1], pool_[k]), "cudaEventElapsedTime");
    out.elapsed_ns[k] = std::llround(static_cast<double>(ms) * 1e6);
  }
  return out;
}

void CudaEventTimer::discard() {
  std::lock_guard<std::mutex> lock(mutex_);
  used_ = 0;
  failure_.clear();
}

size_t CudaEventTimer::pool_size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pool_.size();
}

uint64_t CudaEventTimer::events_created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_created_;
}

}  // namespace pyfxprof
