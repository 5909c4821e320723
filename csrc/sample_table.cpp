// Runs x nodes duration table: rows opened and closed per run, durations stored in place.
#include "sample_table.h"

#include <utility>

namespace pyfxprof {

SampleTable::SampleTable(uint32_t nodes) : nodes_(nodes), last_node_(nodes ? nodes - 1 : 0) {}

void SampleTable::reserve(uint64_t runs) {
  samples_.reserve(runs * nodes_);
  bounds_.reserve(runs);
}

bool SampleTable::begin_run(int64_t now, uintptr_t owner) {
  const uintptr_t current = owner_.load(std::memory_order_relaxed);
  if (current != 0 && current != owner) return false;
  abandon_run();  // a run of this owner that never ended
  samples_.resize(samples_.size() + nodes_, -1);
  try {
    bounds_.push_back(RunBounds{now, -1, -1, -1});
  } catch (...) {
    samples_.resize(samples_.size() - nodes_);
    throw;
  }
  row_ = samples_.data() + samples_.size() - nodes_;
  open_bounds_ = &bounds_.back();
  owner_.store(owner, std::memory_order_relaxed);
  return true;
}

bool SampleTable::end_run(int64_t now, uintptr_t owner) noexcept {
  if (owner == 0 || owner_.load(std::memory_order_relaxed) != owner) return false;
  open_bounds_->end_ns = now;
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
  TakenRuns taken{std::move(samples_), std::move(bounds_)};
  samples_ = {};
  bounds_ = {};
  return taken;
}

void SampleTable::clear() noexcept {
  abandon_run();
  samples_.clear();
  bounds_.clear();
}

}  // namespace pyfxprof
