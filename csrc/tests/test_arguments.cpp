// Tests of the binding argument checks: ranges, full-width column indexes, overflowing sizes.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "arguments.h"
#include "check.h"
#include "sample_table.h"

using namespace pyfxprof;

namespace {

template <typename Exception, typename F>
bool throws(F&& f) {
  try {
    f();
  } catch (const Exception&) {
    return true;
  }
  return false;
}

TEST(range_accepts_its_bounds_and_names_the_argument_outside) {
  CHECK_EQ(checked_range(-1, -1, 5, "x"), -1);
  CHECK_EQ(checked_range(5, -1, 5, "x"), 5);
  try {
    checked_range(6, -1, 5, "duration_ns");
    CHECK(false);
  } catch (const std::invalid_argument& error) {
    CHECK(std::string(error.what()) == "duration_ns must be in [-1, 5], got 6");
  }
  CHECK(throws<std::invalid_argument>([] { checked_range(INT64_MIN, 0, 1, "x"); }));
  CHECK(throws<std::invalid_argument>([] { checked_range(INT64_MAX, 0, kMaxSpinNs, "x"); }));
}

TEST(columns_are_never_truncated) {
  CHECK_EQ(checked_column(2, 3, "node"), 2u);
  // 2**32 + 1 would be column 1 once truncated to 32 bits: refused instead.
  CHECK(throws<std::invalid_argument>([] { checked_column((int64_t{1} << 32) + 1, 3, "node"); }));
  CHECK(throws<std::invalid_argument>([] { checked_column(-1, 3, "node"); }));
  CHECK(throws<std::invalid_argument>([] { checked_column(0, 0, "node"); }));
  CHECK(throws<std::invalid_argument>([] { checked_column(INT64_MAX, UINT32_MAX, "node"); }));
}

TEST(cell_counts_that_overflow_are_refused) {
  CHECK_EQ(checked_cells(3, 4, 100), 12u);
  CHECK_EQ(checked_cells(UINT64_MAX, 0, 100), 0u);
  CHECK(throws<std::length_error>([] { checked_cells(26, 4, 100); }));
  // 2**63 * 2 wraps to 0 in uint64: refused rather than reserving nothing.
  CHECK(throws<std::length_error>([] { checked_cells(uint64_t{1} << 63, 2, UINT64_MAX); }));
}

TEST(sample_table_survives_huge_reserves_and_out_of_order_calls) {
  SampleTable table(2);
  CHECK(!table.end_run(5, 1));  // nothing open
  table.abandon_run();
  table.record(7, 0, 1, 1);  // outside a run, out of range: a stray
  CHECK(table.begin_run(10, 1));
  table.record(1, 11, 14, 1);
  CHECK(throws<std::length_error>([&] { table.reserve(uint64_t{1} << 63); }));
  CHECK(throws<std::length_error>([&] { table.reserve(std::numeric_limits<uint64_t>::max()); }));
  table.record(0, 20, 22, 1);  // the open row is still valid after the refused reserve
  CHECK(table.end_run(30, 1));
  CHECK(!table.end_run(31, 1));
  TakenRuns taken = table.take();
  CHECK_EQ(taken.samples.size(), 2u);
  CHECK_EQ(taken.samples[0], 2);
  CHECK_EQ(taken.samples[1], 3);
  CHECK_EQ(table.stray_calls(), 1u);
  CHECK_EQ(table.take().samples.size(), 0u);  // taking twice hands over nothing
  SampleTable empty(0);
  CHECK(empty.begin_run(1, 1));
  empty.record(0, 1, 2, 1);
  CHECK(empty.end_run(2, 1));
  CHECK_EQ(empty.stray_calls(), 1u);
}

}  // namespace

TEST_MAIN()
