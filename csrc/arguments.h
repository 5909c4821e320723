// Range checks of the integers the Python bindings hand to the core; each throws std::invalid_argument.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace pyfxprof {

// The largest values the bindings accept where nothing else bounds them.
constexpr int64_t kMaxSpinNs = int64_t{60} * 1000 * 1000 * 1000;  // _spin_ns: one minute
constexpr int64_t kMaxBusyIterations = int64_t{1} << 36;         // _busy_loop: about a minute
constexpr int64_t kMaxCudaPool = int64_t{1} << 16;                // cuda_load(pool_size)
constexpr int64_t kMaxCudaEventId = int64_t{UINT32_MAX} - 1;      // id and id + 1 fit in uint32

// `value` when lo <= value <= hi; otherwise std::invalid_argument naming `what` and the range.
inline int64_t checked_range(int64_t value, int64_t lo, int64_t hi, const char* what) {
  if (value < lo || value > hi) {
    throw std::invalid_argument(std::string(what) + " must be in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got " + std::to_string(value));
  }
  return value;
}

// A column index of a table of `count` columns, given as any 64-bit integer (never truncated).
inline uint32_t checked_column(int64_t value, uint32_t count, const char* what) {
  if (count == 0) throw std::invalid_argument(std::string(what) + ": the table has no columns");
  return static_cast<uint32_t>(checked_range(value, 0, int64_t{count} - 1, what));
}

// `rows * columns` elements, or std::length_error when the product does not fit in `limit`.
inline uint64_t checked_cells(uint64_t rows, uint64_t columns, uint64_t limit) {
  if (columns != 0 && rows > limit / columns) {
    throw std::length_error(std::to_string(rows) + " rows of " + std::to_string(columns) +
                            " columns do not fit in memory");
  }
  return rows * columns;
}

}  // namespace pyfxprof
