// The one process-wide clock: calibrated TSC where invariant, steady_clock otherwise, as int64 ns.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <x86intrin.h>
#define PYFXPROF_HAVE_TSC 1
#else
#define PYFXPROF_HAVE_TSC 0
#endif

namespace pyfxprof {

enum class ClockKind : int { Tsc = 0, SteadyClock = 1 };

struct ClockInfo {
  ClockKind kind;
  double tsc_hz;          // 0 when the clock is steady_clock
  double resolution_ns;   // median step between two back-to-back reads that differ
  double read_cost_ns;    // mean cost of one now_ns() call
  const char* reason;     // why this clock was chosen
};

namespace detail {
// Conversion state, written once by init_clock() before any timestamp is taken.
struct ClockState {
  bool use_tsc = false;
  uint64_t tsc_base = 0;
  int64_t ns_base = 0;
  uint64_t mult = 0;  // ns per tick, fixed point with 32 fractional bits
};
extern ClockState g_clock;

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace detail

// Chooses and calibrates the clock; idempotent, cheap after the first call.
const ClockInfo& init_clock();

// Current time in raw ticks of the chosen clock: TSC ticks on the TSC, ns on steady_clock.
// The timed calls' hot path: one rdtsc, converted to ns only when the table is taken.
inline int64_t now_ticks() {
#if PYFXPROF_HAVE_TSC
  if (detail::g_clock.use_tsc) return static_cast<int64_t>(__rdtsc());
#endif
  return detail::steady_ns();
}

// A time read by now_ticks(), in ns on the now_ns() timeline.
inline int64_t ticks_to_ns(int64_t ticks) {
#if PYFXPROF_HAVE_TSC
  const detail::ClockState& s = detail::g_clock;
  if (s.use_tsc) {
    const uint64_t since_base = static_cast<uint64_t>(ticks) - s.tsc_base;
    const unsigned __int128 scaled = static_cast<unsigned __int128>(since_base) * s.mult;
    return s.ns_base + static_cast<int64_t>(scaled >> 32);
  }
#endif
  return ticks;
}

// A non-negative difference of two now_ticks() reads, in ns.
inline int64_t tick_span_ns(int64_t span) {
#if PYFXPROF_HAVE_TSC
  const detail::ClockState& s = detail::g_clock;
  if (s.use_tsc) {
    return static_cast<int64_t>((static_cast<unsigned __int128>(span) * s.mult) >> 32);
  }
#endif
  return span;
}

// Current time in ns on the chosen clock: one rdtsc, one multiply.
inline int64_t now_ns() { return ticks_to_ns(now_ticks()); }

const char* clock_name(ClockKind kind);

}  // namespace pyfxprof
