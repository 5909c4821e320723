// NVTX v3 ranges in the "pyfxprof" domain, one registered string per column (no string per call).
#include "nvtx_ranges.h"

#include <stdexcept>

#ifdef PYFXPROF_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace pyfxprof {

#ifdef PYFXPROF_HAVE_NVTX

namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("pyfxprof");
  return handle;
}

}  // namespace

bool NvtxRanges::built_in() noexcept { return true; }

std::string NvtxRanges::include_dir() { return PYFXPROF_NVTX_INCLUDE_DIR; }

NvtxRanges::NvtxRanges(const std::vector<std::string>& names) {
  handles_.reserve(names.size());
  for (const std::string& name : names) {
    handles_.push_back(nvtxDomainRegisterStringA(domain(), name.c_str()));
  }
}

void NvtxRanges::push(uint32_t column) const noexcept {
  if (column >= handles_.size()) return;
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered =
      static_cast<nvtxStringHandle_t>(const_cast<void*>(handles_[column]));
  nvtxDomainRangePushEx(domain(), &attributes);
}

void NvtxRanges::pop(uint32_t column) const noexcept {
  if (column < handles_.size()) nvtxDomainRangePop(domain());
}

#else

bool NvtxRanges::built_in() noexcept { return false; }

std::string NvtxRanges::include_dir() { return ""; }

NvtxRanges::NvtxRanges(const std::vector<std::string>&) {
  throw std::runtime_error(
      "pyfxprof was built without the NVTX v3 headers (nvtx3/nvToolsExt.h), so it cannot "
      "name ranges for Nsight: install the CUDA toolkit or the nvidia-nvtx wheel and rebuild");
}

void NvtxRanges::push(uint32_t) const noexcept {}

void NvtxRanges::pop(uint32_t) const noexcept {}

#endif

}  // namespace pyfxprof
