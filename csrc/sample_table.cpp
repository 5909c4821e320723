// Runs x nodes duration table: rows opened and closed per run, durations stored in place.
#include "sample_table.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "arguments.h"

namespace pyfxprof {

SampleTable::SampleTable(uint32_t nodes, uint32_t spare)
    : nodes_(nodes + spare), last_node_(nodes ? nodes - 1 : 0) {
  if (spare > UINT32_MAX - nodes) throw std::length_error("SampleTable: over 2^32 columns");
}

// The room is written now (-1), so the runs never meet the first-touch page faults of fresh
// memory: measured 30-45 ns per node of a 300-node run on the 2-core VM (benchmarks/README.md).
void SampleTable::reserve(uint64_t runs) {
  const uint64_t cells = checked_cells(runs, nodes_, samples_.max_size());
  checked_cells(runs, 1, bounds_.max_size());
  try {
    if (cells > samples_.size()) samples_.resize(cells, -1);
    bounds_.reserve(runs);
  } catch (...) {  // either vector may have moved before the other one failed
    repoint_open_row();
    throw;
  }
  repoint_open_row();
}

void SampleTable::repoint_open_row() noexcept {
  if (!row_) return;
  row_ = samples_.data() + (bounds_.size() - 1) * nodes_;
  open_bounds_ = &bounds_.back();
}

bool SampleTable::begin_run(int64_t now, uintptr_t owner) {
  const uintptr_t current = owner_.load(std::memory_order_relaxed);
  if (current != 0 && current != owner) return false;
  abandon_run();  // a run of this owner that never ended
  const size_t used = bounds_.size() * nodes_;
  if (used + nodes_ > samples_.size()) samples_.resize(used + nodes_);  // beyond reserve()
  bounds_.push_back(RunBounds{now, -1, -1, -1});
  row_ = samples_.data() + used;
  std::fill_n(row_, nodes_, -1);
  open_bounds_ = &bounds_.back();
  owner_.store(owner, std::memory_order_relaxed);
  return true;
}

bool SampleTable::end_run(int64_t now, uintptr_t owner) noexcept {
  if (owner == 0 || owner_.load(std::memory_order_relaxed) != owner) return false;
  open_bounds_->end = now;
  owner_.store(0, std::memory_order_relaxed);
  row_ = nullptr;
  open_bounds_ = nullptr;
  return true;
}

void SampleTable::abandon_run() noexcept {
  if (owner_.load(std::memory_order_relaxed) == 0) return;
  owner_.store(0, std::memory_order_relaxed);
  row_ = nullptr;
  open_bounds_ = nullptr;
}

TakenRuns SampleTable::take() {
  abandon_run();
  samples_.resize(bounds_.size() * nodes_);  // the rows in use, not the room reserved
  TakenRuns taken{std::move(samples_), std::move(bounds_)};
  samples_ = {};
  bounds_ = {};
  return taken;
}

void SampleTable::clear() noexcept {
  abandon_run();
  bounds_.clear();  // samples_ stays: its room is written again row by row
}

}  // namespace pyfxprof
