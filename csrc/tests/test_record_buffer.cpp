// Tests of the record buffer: order, multi-thread stress with a concurrent drainer, cap and drops.
#include <atomic>
#include <map>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.h"
#include "clock.h"
#include "record_buffer.h"

using namespace pyfxprof;

namespace {

// Producer `p` pushes ids (p << 24) | seq for seq = 0..count-1.
void produce(RecordBuffer& buffer, uint32_t producer, uint32_t count, std::atomic<uint64_t>& pushed) {
  uint64_t ok = 0;
  for (uint32_t seq = 0; seq < count; ++seq) ok += buffer.push((producer << 24) | seq, kKindMark, now_ns());
  pushed.fetch_add(ok);
}

struct StressResult {
  uint64_t pushed = 0;
  uint64_t dropped = 0;
  std::vector<Record> records;
};

// Runs `threads` producers while the main thread drains concurrently.
StressResult stress(RecordBuffer& buffer, uint32_t threads, uint32_t per_thread) {
  StressResult result;
  std::atomic<uint64_t> pushed{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> producers;
  std::atomic<uint32_t> finished{0};
  for (uint32_t p = 0; p < threads; ++p) {
    producers.emplace_back([&, p] {
      produce(buffer, p, per_thread, pushed);
      if (finished.fetch_add(1) + 1 == threads) done.store(true);
    });
  }
  while (!done.load()) result.dropped += buffer.drain(result.records);
  for (std::thread& t : producers) t.join();
  result.dropped += buffer.drain(result.records);
  result.pushed = pushed.load();
  return result;
}

// Per producer, ids must be strictly increasing, all from one thread number, with
// non-decreasing timestamps. Returns the number of violations.
int order_violations(const std::vector<Record>& records) {
  std::map<uint32_t, const Record*> last_by_producer;
  std::map<uint32_t, uint32_t> thread_by_producer;
  int violations = 0;
  for (const Record& r : records) {
    const uint32_t producer = r.id >> 24;
    auto it = last_by_producer.find(producer);
    if (it != last_by_producer.end()) {
      violations += (r.id & 0xFFFFFF) <= (it->second->id & 0xFFFFFF);
      violations += r.timestamp_ns < it->second->timestamp_ns;
      violations += r.thread != thread_by_producer[producer];
    }
    last_by_producer[producer] = &r;
    thread_by_producer[producer] = r.thread;
  }
  return violations;
}

}  // namespace

TEST(single_thread_records_come_back_in_order) {
  RecordBuffer buffer(1024, 64);
  for (uint32_t i = 0; i < 500; ++i) CHECK(buffer.push(i, static_cast<uint16_t>(i % 5), 1000 + i));
  std::vector<Record> out;
  CHECK_EQ(buffer.drain(out), uint64_t{0});
  CHECK_EQ(out.size(), size_t{500});
  bool exact = true;
  for (uint32_t i = 0; i < out.size(); ++i) {
    exact = exact && out[i].id == i && out[i].kind == i % 5 && out[i].timestamp_ns == 1000 + i &&
            out[i].thread == current_thread_number();
  }
  CHECK(exact);
  CHECK_EQ(buffer.stats().pending_records, uint64_t{0});
}

TEST(grows_by_chunks) {
  RecordBuffer buffer(1024, 256);
  CHECK_EQ(buffer.stats().allocated_chunks, uint64_t{0});
  for (uint32_t i = 0; i < 300; ++i) buffer.push(i, kKindMark, i);
  CHECK_EQ(buffer.stats().allocated_chunks, uint64_t{2});
  CHECK_EQ(buffer.stats().capacity_records, uint64_t{1024});
}

TEST(full_buffer_counts_drops_and_recovers_after_drain) {
  RecordBuffer buffer(1000, 256);  // rounded up to 1024
  uint64_t accepted = 0;
  for (uint32_t i = 0; i < 1500; ++i) accepted += buffer.push(i, kKindMark, i);
  CHECK_EQ(accepted, uint64_t{1024});
  CHECK_EQ(buffer.stats().dropped_total, uint64_t{476});
  std::vector<Record> out;
  CHECK_EQ(buffer.drain(out), uint64_t{476});
  CHECK_EQ(out.size(), size_t{1024});
  CHECK_EQ(out.back().id, uint32_t{1023});
  // The ring wraps: slots are reused and the next records come back intact.
  for (uint32_t i = 0; i < 1024; ++i) CHECK(buffer.push(5000 + i, kKindMark, i));
  out.clear();
  CHECK_EQ(buffer.drain(out), uint64_t{0});
  CHECK_EQ(out.size(), size_t{1024});
  CHECK_EQ(out.front().id, uint32_t{5000});
  CHECK_EQ(out.back().id, uint32_t{6023});
}

TEST(stress_1_2_4_threads_lose_nothing_and_keep_order) {
  for (uint32_t threads : {1u, 2u, 4u}) {
    RecordBuffer buffer(uint64_t{1} << 22, 1 << 12);
    const uint32_t per_thread = 200'000;
    StressResult r = stress(buffer, threads, per_thread);
    CHECK_EQ(r.dropped, uint64_t{0});
    CHECK_EQ(r.pushed, uint64_t{threads} * per_thread);
    CHECK_EQ(r.records.size(), size_t{threads} * per_thread);
    CHECK_EQ(order_violations(r.records), 0);
  }
}

TEST(stress_with_small_cap_accounts_for_every_record) {
  for (uint32_t threads : {2u, 4u}) {
    RecordBuffer buffer(4096, 512);
    const uint32_t per_thread = 100'000;
    StressResult r = stress(buffer, threads, per_thread);
    // Each push is either drained or counted as dropped, never both, never neither.
    CHECK_EQ(r.records.size(), r.pushed);
    CHECK_EQ(r.pushed + r.dropped, uint64_t{threads} * per_thread);
    CHECK_EQ(order_violations(r.records), 0);
  }
}

TEST(reset_discards_and_applies_new_cap) {
  RecordBuffer buffer(1024, 256);
  for (uint32_t i = 0; i < 2000; ++i) buffer.push(i, kKindMark, i);
  buffer.reset(4096, 1024);
  const BufferStats s = buffer.stats();
  CHECK_EQ(s.capacity_records, uint64_t{4096});
  CHECK_EQ(s.chunk_records, uint64_t{1024});
  CHECK_EQ(s.pending_records, uint64_t{0});
  CHECK_EQ(s.dropped_total, uint64_t{0});
}

// Pushes 10 records into an unchanged 1024/256 buffer and drains them back.
bool still_usable(RecordBuffer& buffer) {
  const BufferStats s = buffer.stats();
  bool ok = s.capacity_records == 1024 && s.chunk_records == 256 && s.pending_records == 3;
  for (uint32_t i = 0; i < 10; ++i) ok = ok && buffer.push(100 + i, kKindMark, i);
  std::vector<Record> out;
  buffer.drain(out);
  return ok && out.size() == 13 && out.front().id == 0 && out.back().id == 109;
}

TEST(reset_refuses_impossible_sizes_and_keeps_the_buffer) {
  RecordBuffer buffer(1024, 256);
  for (uint32_t i = 0; i < 3; ++i) buffer.push(i, kKindMark, i);
  for (uint64_t bad : {uint64_t{0}, (uint64_t{1} << 63) + 1, ~uint64_t{0}, (uint64_t{1} << 40) + 1}) {
    bool refused = false;
    try {
      buffer.reset(bad, 256);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    CHECK(refused);
  }
  CHECK(still_usable(buffer));
}

TEST(reset_whose_table_cannot_be_allocated_keeps_the_buffer) {
  RecordBuffer buffer(1024, 256);
  for (uint32_t i = 0; i < 3; ++i) buffer.push(i, kKindMark, i);
  bool refused = false;
  try {
    buffer.reset(RecordBuffer::kMaxRecords, 1);  // 2^40 chunk pointers: 8 TiB
  } catch (const std::bad_alloc&) {
    refused = true;
  }
  CHECK(refused);
  CHECK(still_usable(buffer));
}

TEST_MAIN()
