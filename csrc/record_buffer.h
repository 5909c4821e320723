// Lock-free multi-producer ring of Records that grows by chunks up to a cap, then counts drops.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "record.h"

namespace pyfxprof {

struct BufferStats {
  uint64_t capacity_records;
  uint64_t chunk_records;
  uint64_t allocated_chunks;
  uint64_t pending_records;  // published or claimed, not yet drained
  uint64_t dropped_total;    // since construction or the last reset()
};

class RecordBuffer {
 public:
  // Capacity and chunk size are rounded up to powers of two; capacity >= chunk.
  explicit RecordBuffer(uint64_t capacity_records = uint64_t{1} << 21,
                        uint64_t chunk_records = uint64_t{1} << 16);
  ~RecordBuffer();
  RecordBuffer(const RecordBuffer&) = delete;
  RecordBuffer& operator=(const RecordBuffer&) = delete;

  // Hot path, any thread, lock-free: claims a slot, writes it, publishes it.
  // Returns false (and counts a drop) when the buffer holds `capacity` undrained records.
  bool push(uint32_t id, uint16_t kind, int64_t timestamp_ns) noexcept;

  // Appends every record pushed before the call to `out` (per-thread order kept) and frees
  // their slots. Returns the number of records dropped since the previous drain.
  uint64_t drain(std::vector<Record>& out);

  // Largest capacity or chunk size reset() accepts (2^40 records, 32 TiB of records).
  static constexpr uint64_t kMaxRecords = uint64_t{1} << 40;

  // Discards everything and applies a new capacity/chunk size. Callers must ensure no
  // thread is pushing concurrently. Throws std::invalid_argument for 0 or a size above
  // kMaxRecords and std::bad_alloc when the chunk table cannot be allocated; either way the
  // buffer is left exactly as it was (records, sizes and counts).
  void reset(uint64_t capacity_records, uint64_t chunk_records);

  BufferStats stats() const;

 private:
  Record* chunk_for(uint64_t slot_index) noexcept;
  Record* allocate_chunk(uint64_t chunk_index) noexcept;
  void free_chunks();

  uint64_t capacity_;
  uint64_t chunk_records_;
  unsigned chunk_shift_;
  std::unique_ptr<std::atomic<Record*>[]> chunks_;
  alignas(64) std::atomic<uint64_t> head_{0};     // next slot to claim
  alignas(64) std::atomic<uint64_t> tail_{0};     // first slot not yet drained
  alignas(64) std::atomic<uint64_t> dropped_{0};  // since last drain
  std::atomic<uint64_t> dropped_total_{0};
  std::mutex drain_mutex_;                        // drains are serialised; pushes never lock
};

// Small 1-based number for the calling thread, stable for the thread's life.
uint32_t current_thread_number() noexcept;

}  // namespace pyfxprof
