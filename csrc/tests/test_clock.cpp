// Tests of the clock: choice, calibration against steady_clock, monotonicity, read cost.
#include <chrono>
#include <cmath>
#include <thread>

#include "check.h"
#include "clock.h"

using namespace pyfxprof;

TEST(clock_info_is_sane) {
  const ClockInfo& info = init_clock();
  CHECK(info.resolution_ns > 0.0 && info.resolution_ns < 1000.0);
  CHECK(info.read_cost_ns > 0.0 && info.read_cost_ns < 1000.0);
  if (info.kind == ClockKind::Tsc) {
    CHECK(info.tsc_hz > 1e8 && info.tsc_hz < 1e11);
  } else {
    CHECK(info.tsc_hz == 0.0);
  }
}

TEST(clock_is_monotonic_within_a_thread) {
  init_clock();
  int64_t previous = now_ns();
  int backwards = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const int64_t now = now_ns();
    backwards += now < previous;
    previous = now;
  }
  CHECK_EQ(backwards, 0);
}

TEST(calibrated_clock_agrees_with_steady_clock) {
  init_clock();
  // 100 ms against steady_clock: a calibration error above 0.5% would show here.
  const int64_t ours0 = now_ns();
  const int64_t ref0 = detail::steady_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int64_t ours1 = now_ns();
  const int64_t ref1 = detail::steady_ns();
  const double ratio = static_cast<double>(ours1 - ours0) / static_cast<double>(ref1 - ref0);
  CHECK(std::fabs(ratio - 1.0) < 0.005);
}

TEST(clock_is_near_steady_clock_in_absolute_terms) {
  init_clock();
  // Timestamps start from a steady_clock base, so both clocks stay within a few ms.
  CHECK(std::llabs(now_ns() - detail::steady_ns()) < 5'000'000);
}

TEST(ticks_convert_to_the_now_ns_timeline) {
  const ClockInfo& info = init_clock();
  // Ticks read in the hot path and converted later land between ns reads around them.
  const int64_t before = now_ns();
  const int64_t ticks0 = now_ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const int64_t ticks1 = now_ticks();
  const int64_t after = now_ns();
  CHECK(before <= ticks_to_ns(ticks0) && ticks_to_ns(ticks1) <= after);
  // A span converts as the difference of its converted ends (up to rounding).
  const int64_t span = tick_span_ns(ticks1 - ticks0);
  CHECK(std::llabs(span - (ticks_to_ns(ticks1) - ticks_to_ns(ticks0))) <= 1);
  CHECK(span >= 2'000'000);
  if (info.kind == ClockKind::Tsc) {
    // 1 s worth of ticks is 1 s.
    CHECK(std::llabs(tick_span_ns(static_cast<int64_t>(info.tsc_hz)) - 1'000'000'000) <= 2);
  } else {
    CHECK_EQ(tick_span_ns(12345), 12345);  // steady_clock ticks are ns
  }
}

TEST_MAIN()
