// Lock-free multi-producer ring of Records: claim by CAS on head, publish by a release store.
#include "record_buffer.h"

#include <bit>
#include <new>
#include <stdexcept>
#include <thread>

namespace pyfxprof {

namespace {
std::atomic<uint32_t> g_thread_counter{0};

uint64_t round_up_pow2(uint64_t value) { return value <= 1 ? 1 : std::bit_ceil(value); }
}  // namespace

uint32_t current_thread_number() noexcept {
  // initial-exec: a plain %fs-relative load instead of a __tls_get_addr call on the hot path.
  static thread_local uint32_t number __attribute__((tls_model("initial-exec"))) = 0;
  if (number == 0) number = g_thread_counter.fetch_add(1, std::memory_order_relaxed) + 1;
  return number;
}

RecordBuffer::RecordBuffer(uint64_t capacity_records, uint64_t chunk_records)
    : capacity_(0), chunk_records_(0), chunk_shift_(0) {
  reset(capacity_records, chunk_records);
}

RecordBuffer::~RecordBuffer() { free_chunks(); }

void RecordBuffer::free_chunks() {
  if (!chunks_) return;
  const uint64_t n_chunks = capacity_ / chunk_records_;
  for (uint64_t c = 0; c < n_chunks; ++c) delete[] chunks_[c].load(std::memory_order_relaxed);
  chunks_.reset();
}

void RecordBuffer::reset(uint64_t capacity_records, uint64_t chunk_records) {
  if (capacity_records == 0 || chunk_records == 0 || capacity_records > kMaxRecords ||
      chunk_records > kMaxRecords) {
    throw std::invalid_argument("capacity_records and chunk_records must be in 1..2**40");
  }
  const uint64_t chunk = round_up_pow2(chunk_records);
  const uint64_t capacity = round_up_pow2(capacity_records < chunk ? chunk : capacity_records);
  const uint64_t n_chunks = capacity / chunk;
  // Allocated before anything is freed: a failure leaves the current buffer untouched.
  std::unique_ptr<std::atomic<Record*>[]> table(new (std::nothrow) std::atomic<Record*>[n_chunks]);
  if (!table) throw std::bad_alloc();
  for (uint64_t c = 0; c < n_chunks; ++c) table[c].store(nullptr, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(drain_mutex_);
  free_chunks();
  chunks_ = std::move(table);
  chunk_records_ = chunk;
  capacity_ = capacity;
  chunk_shift_ = static_cast<unsigned>(std::countr_zero(chunk_records_));
  head_.store(0, std::memory_order_relaxed);
  tail_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  dropped_total_.store(0, std::memory_order_release);
}

Record* RecordBuffer::allocate_chunk(uint64_t chunk_index) noexcept {
  Record* fresh = new (std::nothrow) Record[chunk_records_]();
  if (!fresh) return nullptr;
  Record* expected = nullptr;
  if (chunks_[chunk_index].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                                   std::memory_order_acquire)) {
    return fresh;
  }
  delete[] fresh;  // another thread installed this chunk first
  return expected;
}

Record* RecordBuffer::chunk_for(uint64_t slot_index) noexcept {
  const uint64_t chunk_index = (slot_index & (capacity_ - 1)) >> chunk_shift_;
  Record* chunk = chunks_[chunk_index].load(std::memory_order_acquire);
  return chunk ? chunk : allocate_chunk(chunk_index);
}

bool RecordBuffer::push(uint32_t id, uint16_t kind, int64_t timestamp_ns) noexcept {
  uint64_t index = head_.load(std::memory_order_relaxed);
  Record* chunk = nullptr;
  for (;;) {
    // The chunk is resolved before the slot is claimed, so a claimed slot always exists.
    // `index` may be stale and behind a tail a drain just advanced: then the CAS fails.
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const bool full = index >= tail && index - tail >= capacity_;
    chunk = full ? nullptr : chunk_for(index);
    if (!chunk) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      dropped_total_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (head_.compare_exchange_weak(index, index + 1, std::memory_order_relaxed,
                                    std::memory_order_relaxed)) {
      break;
    }
  }
  Record& record = chunk[index & (chunk_records_ - 1)];
  record.timestamp_ns = timestamp_ns;
  record.id = id;
  record.thread = current_thread_number();
  record.kind = kind;
  record.reserved16 = 0;
  record.reserved32 = 0;
  std::atomic_ref<uint64_t>(record.sequence).store(index + 1, std::memory_order_release);
  return true;
}

uint64_t RecordBuffer::drain(std::vector<Record>& out) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  const uint64_t head = head_.load(std::memory_order_acquire);
  out.reserve(out.size() + (head - tail));
  for (uint64_t index = tail; index < head; ++index) {
    Record* chunk = chunks_[(index & (capacity_ - 1)) >> chunk_shift_].load(std::memory_order_acquire);
    Record& record = chunk[index & (chunk_records_ - 1)];
    std::atomic_ref<uint64_t> sequence(record.sequence);
    // A claimed slot is published a few instructions later; wait for it, yielding if the
    // writer was descheduled in between.
    for (unsigned spins = 0; sequence.load(std::memory_order_acquire) != index + 1; ++spins) {
      if (spins > 64) std::this_thread::yield();
    }
    out.push_back(record);
  }
  tail_.store(head, std::memory_order_release);
  return dropped_.exchange(0, std::memory_order_relaxed);
}

BufferStats RecordBuffer::stats() const {
  const uint64_t n_chunks = capacity_ / chunk_records_;
  uint64_t allocated = 0;
  for (uint64_t c = 0; c < n_chunks; ++c) {
    allocated += chunks_[c].load(std::memory_order_relaxed) != nullptr;
  }
  return BufferStats{capacity_, chunk_records_, allocated,
                     head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed),
                     dropped_total_.load(std::memory_order_relaxed)};
}

}  // namespace pyfxprof
