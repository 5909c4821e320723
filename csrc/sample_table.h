// Runs x nodes table of node durations, written in place by the one thread running a run (no CAS).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "nvtx_ranges.h"

namespace pyfxprof {

// Per-run bounds, a fixed-size POD: the run's own begin/end and the span its timed calls cover,
// as the timestamps given to begin_run/end_run/record (clock ticks: see below).
struct RunBounds {
  int64_t begin;          // begin_run()
  int64_t end;            // end_run(); -1 while the run is open or when it was abandoned
  int64_t first_call;     // begin of the run's first timed call
  int64_t last_call_end;  // end of the run's latest timed call
};

static_assert(sizeof(RunBounds) == 32, "RunBounds must stay 32 bytes");
static_assert(std::is_trivially_copyable_v<RunBounds> && std::is_standard_layout_v<RunBounds>,
              "RunBounds must be a POD");

// What take() hands over: durations (rows x nodes, row-major) and one RunBounds per row.
struct TakenRuns {
  std::vector<int64_t> samples;
  std::vector<RunBounds> bounds;
};

// Timestamps in and durations out are in the caller's unit: the timed calls give raw clock
// ticks (now_ticks(), no conversion on the hot path) and the bindings convert what take()
// hands over to ns.
class SampleTable {
 public:
  // `nodes` timed columns and `spare` more after them, which no timed call is expected to write
  // (room for columns added after the runs: the last timed column is `nodes - 1`); every
  // column starts as -1 (not recorded) in a new row. Throws std::length_error over 2^32 columns.
  explicit SampleTable(uint32_t nodes, uint32_t spare = 0);

  uint32_t nodes() const noexcept { return nodes_; }  // every column, spare ones included
  uint64_t rows() const noexcept { return bounds_.size(); }

  // Allocates and writes memory for `runs` rows up front (throws std::bad_alloc /
  // std::length_error, the table left usable).
  void reserve(uint64_t runs);

  // Opens a row for the thread `owner` (any nonzero token naming the calling thread). False
  // when another owner's run is still open. Throws std::bad_alloc when out of memory.
  bool begin_run(int64_t now, uintptr_t owner);

  // Closes the open row of `owner`. False when it has none.
  bool end_run(int64_t now, uintptr_t owner) noexcept;

  // Drops the open row, if any (the run raised).
  void abandon_run() noexcept;

  // The hot path: one duration into the open row (node 0 also sets the row's first call,
  // the last node its last call end). Calls from another owner, outside a run or for a
  // column out of range are counted in stray_calls() and not stored.
  void record(uint32_t node, int64_t begin, int64_t end, uintptr_t owner) noexcept {
    if (owner != owner_.load(std::memory_order_relaxed) || node >= nodes_ || !row_) {
      stray_calls_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    row_[node] = end - begin;
    if (node == 0) open_bounds_->first_call = begin;
    if (node == last_node_) open_bounds_->last_call_end = end;
  }

  // Hands over every row (closed or abandoned) and empties the table; capacity is not kept.
  TakenRuns take();

  // Forgets every row (e.g. after warm-up), keeping the reserved capacity.
  void clear() noexcept;

  uint64_t stray_calls() const noexcept { return stray_calls_.load(std::memory_order_relaxed); }

  // NVTX ranges the timed calls push around each column's call (null: none). Set between
  // runs only; replacing them frees the previous ones.
  const NvtxRanges* ranges() const noexcept { return ranges_.get(); }
  void set_ranges(std::unique_ptr<NvtxRanges> ranges) noexcept { ranges_ = std::move(ranges); }

 private:
  void repoint_open_row() noexcept;  // after samples_ / bounds_ may have moved

  // What record() reads, together at the front.
  std::atomic<uintptr_t> owner_{0};  // owner of the open run, 0 when none
  int64_t* row_ = nullptr;           // the open row
  RunBounds* open_bounds_ = nullptr;
  std::unique_ptr<NvtxRanges> ranges_;
  uint32_t nodes_;
  uint32_t last_node_;
  std::atomic<uint64_t> stray_calls_{0};
  std::vector<int64_t> samples_;  // rows() * nodes_ in use; the rest is reserved room
  std::vector<RunBounds> bounds_;  // one per row
};

}  // namespace pyfxprof
