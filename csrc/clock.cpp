// Clock selection (invariant TSC or steady_clock) and calibration of frequency, resolution and read cost.
#include "clock.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#if PYFXPROF_HAVE_TSC
#include <cpuid.h>
#endif

namespace pyfxprof {
namespace detail {
ClockState g_clock;
}

namespace {

bool has_invariant_tsc() {
#if PYFXPROF_HAVE_TSC
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

#if PYFXPROF_HAVE_TSC
// Ticks per second, measured against steady_clock over ~20 ms (median of 3 windows).
double measure_tsc_hz() {
  std::vector<double> estimates;
  for (int round = 0; round < 3; ++round) {
    const int64_t ns0 = detail::steady_ns();
    const uint64_t t0 = __rdtsc();
    int64_t ns1 = ns0;
    while (ns1 - ns0 < 7'000'000) ns1 = detail::steady_ns();
    const uint64_t t1 = __rdtsc();
    estimates.push_back(static_cast<double>(t1 - t0) * 1e9 / static_cast<double>(ns1 - ns0));
  }
  std::sort(estimates.begin(), estimates.end());
  return estimates[1];
}
#endif

// Effective resolution: the median step between two back-to-back reads that differ. It is
// at least the read cost, and shows coarse steps (steady_clock on some systems, or a VM
// that advances the TSC by ~10 ns at a time) that a tick-frequency figure would hide.
double measure_resolution_ns() {
  constexpr int kSteps = 4001;
  std::vector<int64_t> steps;
  steps.reserve(kSteps);
  while (static_cast<int>(steps.size()) < kSteps) {
    const int64_t a = now_ns();
    int64_t b = now_ns();
    while (b == a) b = now_ns();
    steps.push_back(b - a);
  }
  std::nth_element(steps.begin(), steps.begin() + kSteps / 2, steps.end());
  return static_cast<double>(steps[kSteps / 2]);
}

double measure_read_cost_ns() {
  constexpr int kReads = 100000;
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const int64_t start = now_ns();
    int64_t sink = 0;
    for (int i = 0; i < kReads; ++i) sink ^= now_ns();
    const int64_t stop = now_ns();
    asm volatile("" : : "r"(sink));
    best = std::min(best, static_cast<double>(stop - start) / kReads);
  }
  return best;
}

ClockInfo g_info{ClockKind::SteadyClock, 0.0, 0.0, 0.0, ""};

void choose_and_calibrate() {
  const char* forced = std::getenv("PYFXPROF_CLOCK");
  const bool force_steady = forced && std::strcmp(forced, "steady_clock") == 0;
  g_info.reason = "no invariant TSC on this CPU";
#if PYFXPROF_HAVE_TSC
  if (force_steady) {
    g_info.reason = "PYFXPROF_CLOCK=steady_clock";
  } else if (has_invariant_tsc()) {
    const double hz = measure_tsc_hz();
    detail::g_clock.mult = static_cast<uint64_t>(1e9 / hz * 4294967296.0);
    detail::g_clock.ns_base = detail::steady_ns();
    detail::g_clock.tsc_base = __rdtsc();
    detail::g_clock.use_tsc = true;
    g_info.kind = ClockKind::Tsc;
    g_info.tsc_hz = hz;
    g_info.reason = "invariant TSC";
  }
#else
  (void)force_steady;
  (void)has_invariant_tsc;
#endif
  g_info.resolution_ns = measure_resolution_ns();
  g_info.read_cost_ns = measure_read_cost_ns();
}

}  // namespace

const ClockInfo& init_clock() {
  static std::once_flag once;
  std::call_once(once, choose_and_calibrate);
  return g_info;
}

const char* clock_name(ClockKind kind) { return kind == ClockKind::Tsc ? "tsc" : "steady_clock"; }

}  // namespace pyfxprof
