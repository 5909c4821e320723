// A fake CUDA runtime for CI: events timed by the host clock, with error injection for tests.
#include <chrono>
#include <cstdint>
#include <new>

namespace {

struct FakeEvent {
  int64_t recorded_ns = 0;
  bool recorded = false;
};

int g_fail_next_records = 0;  // this many upcoming cudaEventRecord calls fail
int g_fail_code = 0;
int g_events_alive = 0;

int64_t host_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int kInvalidValue = 1;
constexpr int kInvalidResourceHandle = 400;

}  // namespace

extern "C" {

int cudaEventCreateWithFlags(void** event, unsigned /*flags*/) {
  if (!event) return kInvalidValue;
  *event = new (std::nothrow) FakeEvent();
  if (!*event) return 2;  // cudaErrorMemoryAllocation
  ++g_events_alive;
  return 0;
}

int cudaEventDestroy(void* event) {
  if (!event) return kInvalidResourceHandle;
  delete static_cast<FakeEvent*>(event);
  --g_events_alive;
  return 0;
}

int cudaEventRecord(void* event, void* /*stream*/) {
  if (!event) return kInvalidResourceHandle;
  if (g_fail_next_records > 0) {
    --g_fail_next_records;
    return g_fail_code;
  }
  auto* fake = static_cast<FakeEvent*>(event);
  fake->recorded_ns = host_ns();
  fake->recorded = true;
  return 0;
}

int cudaEventSynchronize(void* event) {
  if (!event) return kInvalidResourceHandle;
  return static_cast<FakeEvent*>(event)->recorded ? 0 : kInvalidResourceHandle;
}

int cudaEventElapsedTime(float* ms, void* start, void* end) {
  if (!ms || !start || !end) return kInvalidValue;
  auto* a = static_cast<FakeEvent*>(start);
  auto* b = static_cast<FakeEvent*>(end);
  if (!a->recorded || !b->recorded) return kInvalidResourceHandle;
  *ms = static_cast<float>(static_cast<double>(b->recorded_ns - a->recorded_ns) / 1e6);
  return 0;
}

const char* cudaGetErrorString(int code) {
  switch (code) {
    case 0: return "no error";
    case kInvalidValue: return "invalid argument";
    case kInvalidResourceHandle: return "invalid resource handle";
    case 700: return "an illegal memory access was encountered";
    default: return "unrecognized error code";
  }
}

// Test controls (not part of the CUDA runtime API).
void fake_cudart_fail_records(int count, int code) {
  g_fail_next_records = count;
  g_fail_code = code;
}

int fake_cudart_events_alive() { return g_events_alive; }

}  // extern "C"
