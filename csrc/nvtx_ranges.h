// NVTX ranges named by column, for Nsight: strings registered once, push/pop per timed call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pyfxprof {

// One registered NVTX string per column of a table, in the "pyfxprof" domain. NVTX v3 is
// header-only: with no tool attached (NVTX_INJECTION64_PATH unset) push and pop cost a
// load and a branch; built without the headers, constructing one throws std::runtime_error.
class NvtxRanges {
 public:
  // Whether pyfxprof was built with the NVTX v3 headers, and which folder held them.
  static bool built_in() noexcept;
  static std::string include_dir();

  explicit NvtxRanges(const std::vector<std::string>& names);

  size_t size() const noexcept { return handles_.size(); }
  void push(uint32_t column) const noexcept;  // a column out of range pushes nothing
  void pop(uint32_t column) const noexcept;

 private:
  std::vector<const void*> handles_;  // nvtxStringHandle_t, one per column
};

}  // namespace pyfxprof
