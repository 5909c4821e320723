// Tests of the sample table: rows per run, in-place durations, strays, owners, take and clear.
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.h"
#include "sample_table.h"

using namespace pyfxprof;

namespace {

constexpr uintptr_t kMe = 1;
constexpr uintptr_t kOther = 2;

TEST(durations_land_in_their_row_and_column) {
  SampleTable table(3);
  CHECK(table.begin_run(100, kMe));
  table.record(0, 110, 115, kMe);
  table.record(2, 130, 150, kMe);
  CHECK(table.end_run(200, kMe));
  CHECK(table.begin_run(300, kMe));
  table.record(1, 310, 311, kMe);
  CHECK(table.end_run(400, kMe));
  TakenRuns taken = table.take();
  CHECK_EQ(taken.samples.size(), 6u);
  const std::vector<int64_t> expected{5, -1, 20, -1, 1, -1};
  CHECK(taken.samples == expected);
  CHECK_EQ(taken.bounds.size(), 2u);
  CHECK_EQ(taken.bounds[0].begin, 100);
  CHECK_EQ(taken.bounds[0].end, 200);
  CHECK_EQ(taken.bounds[0].first_call, 110);
  CHECK_EQ(taken.bounds[0].last_call_end, 150);
  CHECK_EQ(taken.bounds[1].first_call, -1);  // node 0 did not run
  CHECK_EQ(table.rows(), 0u);
}

TEST(calls_outside_a_run_or_from_another_owner_are_strays) {
  SampleTable table(2);
  table.record(0, 1, 2, kMe);  // no run open
  CHECK(table.begin_run(10, kMe));
  table.record(0, 11, 12, kOther);
  table.record(5, 11, 12, kMe);  // no such column
  CHECK(!table.begin_run(10, kOther));
  CHECK(!table.end_run(20, kOther));
  CHECK(table.end_run(20, kMe));
  CHECK_EQ(table.stray_calls(), 3u);
  TakenRuns taken = table.take();
  CHECK(taken.samples == (std::vector<int64_t>{-1, -1}));
}

TEST(an_unended_run_is_abandoned_and_keeps_end_minus_one) {
  SampleTable table(1);
  CHECK(table.begin_run(10, kMe));
  table.record(0, 11, 13, kMe);
  CHECK(table.begin_run(20, kMe));  // the first run never ended
  table.record(0, 21, 22, kMe);
  table.abandon_run();
  TakenRuns taken = table.take();
  CHECK_EQ(taken.bounds.size(), 2u);
  CHECK_EQ(taken.bounds[0].end, -1);
  CHECK_EQ(taken.bounds[1].end, -1);
  CHECK(taken.samples == (std::vector<int64_t>{2, 1}));
}

TEST(clear_keeps_the_reserved_room_and_rows_restart) {
  SampleTable table(4);
  table.reserve(10);
  for (int run = 0; run < 3; ++run) {
    CHECK(table.begin_run(run, kMe));
    CHECK(table.end_run(run + 1, kMe));
  }
  table.clear();
  CHECK_EQ(table.rows(), 0u);
  CHECK(table.begin_run(5, kMe));
  table.record(3, 6, 9, kMe);
  CHECK(table.end_run(10, kMe));
  CHECK(table.take().samples == (std::vector<int64_t>{-1, -1, -1, 3}));
}

TEST(reserved_room_is_not_handed_over_and_an_open_row_survives_reserve) {
  SampleTable table(2);
  table.reserve(4);
  CHECK(table.begin_run(1, kMe));
  table.record(1, 2, 5, kMe);
  table.reserve(1000);  // may move the storage under the open row
  table.record(0, 6, 7, kMe);
  CHECK(table.end_run(8, kMe));
  CHECK_EQ(table.rows(), 1u);
  TakenRuns taken = table.take();
  CHECK(taken.samples == (std::vector<int64_t>{1, 3}));
  CHECK_EQ(taken.bounds[0].first_call, 6);
  CHECK_EQ(taken.bounds[0].end, 8);
}

TEST(rows_after_clear_start_unrecorded) {
  SampleTable table(2);
  CHECK(table.begin_run(1, kMe));
  table.record(0, 1, 4, kMe);
  table.record(1, 1, 4, kMe);
  CHECK(table.end_run(5, kMe));
  table.clear();  // the room keeps the old durations until a row is opened over them
  CHECK(table.begin_run(6, kMe));
  table.record(1, 7, 8, kMe);
  CHECK(table.end_run(9, kMe));
  CHECK(table.take().samples == (std::vector<int64_t>{-1, 1}));
}

TEST(another_thread_never_writes_into_the_open_row) {
  SampleTable table(64);
  CHECK(table.begin_run(0, kMe));
  std::thread intruder([&] {
    for (uint32_t i = 0; i < 100000; ++i) table.record(i % 64, 0, 7, kOther);
  });
  for (uint32_t i = 0; i < 64; ++i) table.record(i, 0, i, kMe);
  intruder.join();
  CHECK(table.end_run(1, kMe));
  CHECK_EQ(table.stray_calls(), 100000u);
  TakenRuns taken = table.take();
  for (uint32_t i = 0; i < 64; ++i) CHECK_EQ(taken.samples[i], static_cast<int64_t>(i));
}

}  // namespace

TEST(spare_columns_follow_the_timed_ones_and_the_last_timed_one_ends_the_calls) {
  SampleTable table(2, 1);
  CHECK_EQ(table.nodes(), 3u);
  CHECK(table.begin_run(100, kMe));
  table.record(0, 110, 115, kMe);
  table.record(1, 120, 130, kMe);
  CHECK(table.end_run(200, kMe));
  TakenRuns taken = table.take();
  const std::vector<int64_t> expected{5, 10, -1};
  CHECK(taken.samples == expected);
  CHECK_EQ(taken.bounds[0].first_call, 110);
  CHECK_EQ(taken.bounds[0].last_call_end, 130);
  bool refused = false;
  try {
    SampleTable too_wide(UINT32_MAX, 1);
  } catch (const std::length_error&) {
    refused = true;
  }
  CHECK(refused);
}

TEST_MAIN()
