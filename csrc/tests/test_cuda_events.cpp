// Tests of the CUDA loader and event timer against the fake CUDA runtime built beside them.
#include <dlfcn.h>

#include <chrono>
#include <string>
#include <thread>

#include "check.h"
#include "cuda_events.h"

using namespace pyfxprof;

namespace {

void fail_records(int count, int code) {
  void* handle = dlopen(FAKE_CUDART_PATH, RTLD_NOW | RTLD_NOLOAD);
  auto fn = reinterpret_cast<void (*)(int, int)>(dlsym(handle, "fake_cudart_fail_records"));
  fn(count, code);
  dlclose(handle);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(unloaded_timer_reports_unavailable) {
  CudaEventTimer timer;
  CHECK(!timer.available());
  bool threw = false;
  try {
    timer.record(1, 0);
  } catch (const CudaUnavailable& e) {
    threw = contains(e.what(), "not loaded");
  }
  CHECK(threw);
}

TEST(missing_library_is_unavailable_with_reason) {
  CudaEventTimer timer;
  std::string message;
  try {
    timer.load("/nonexistent/libcudart.so", 4);
  } catch (const CudaUnavailable& e) {
    message = e.what();
  }
  CHECK(contains(message, "cannot load /nonexistent/libcudart.so"));
  CHECK(!timer.available());
}

TEST(foreign_library_is_refused) {
  CudaEventTimer timer;
  std::string message;
  try {
    timer.load("libm.so.6", 4);
  } catch (const CudaUnavailable& e) {
    message = e.what();
  }
  CHECK(contains(message, "is not a CUDA runtime"));
}

TEST(events_resolve_to_elapsed_ns_and_pool_grows_then_is_reused) {
  CudaEventTimer timer;
  timer.load(FAKE_CUDART_PATH, 4);
  CHECK(timer.available());
  CHECK_EQ(timer.pool_size(), size_t{4});
  for (int run = 0; run < 3; ++run) {
    for (uint32_t id = 0; id < 10; ++id) {
      timer.record(id, 0);
      std::this_thread::sleep_for(std::chrono::microseconds(id == 4 ? 3000 : 10));
    }
    ResolvedEvents r = timer.resolve();
    CHECK_EQ(r.ids.size(), size_t{10});
    CHECK_EQ(r.ids[9], uint32_t{9});
    CHECK_EQ(r.elapsed_ns[0], int64_t{0});
    // The 3 ms sleep after event 4 shows up between events 4 and 5.
    CHECK(r.elapsed_ns[5] >= 3'000'000 && r.elapsed_ns[5] < 50'000'000);
    CHECK_EQ(timer.pool_size(), size_t{16});  // 4 -> 8 -> 16 on the first run only
    CHECK_EQ(timer.events_created(), uint64_t{16});
  }
}

TEST(failed_record_raises_and_poisons_the_run) {
  CudaEventTimer timer;
  timer.load(FAKE_CUDART_PATH, 8);
  timer.record(0, 0);
  fail_records(1, 700);
  std::string record_error;
  try {
    timer.record(1, 0);
  } catch (const CudaError& e) {
    record_error = e.what();
  }
  CHECK(contains(record_error, "cudaEventRecord failed: an illegal memory access"));
  CHECK(contains(record_error, "code 700"));
  timer.record(2, 0);
  std::string resolve_error;
  try {
    timer.resolve();
  } catch (const CudaError& e) {
    resolve_error = e.what();
  }
  CHECK(contains(resolve_error, "incomplete"));
  // The next run is clean again.
  timer.record(3, 0);
  timer.record(4, 0);
  CHECK_EQ(timer.resolve().ids.size(), size_t{2});
}

TEST(unload_destroys_every_event) {
  void* handle = dlopen(FAKE_CUDART_PATH, RTLD_NOW);
  auto alive = reinterpret_cast<int (*)()>(dlsym(handle, "fake_cudart_events_alive"));
  const int before = alive();  // timers of earlier tests leak their events on purpose
  CudaEventTimer timer;
  timer.load(FAKE_CUDART_PATH, 8);
  CHECK_EQ(alive() - before, 8);
  timer.unload();
  CHECK_EQ(alive() - before, 0);
  dlclose(handle);
}

TEST_MAIN()
