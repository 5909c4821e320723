// Tests of NvtxRanges against the fake NVTX tool built beside them (NVTX_INJECTION64_PATH).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "check.h"
#include "nvtx_ranges.h"

using namespace pyfxprof;

namespace {

// What the fake tool recorded so far, one event per line.
std::string recorded_events() {
  void* handle = dlopen(FAKE_NVTX_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return "(the fake NVTX tool was not loaded)";
  auto events = reinterpret_cast<const char* (*)()>(dlsym(handle, "fake_nvtx_events"));
  std::string text = events ? events() : "(no fake_nvtx_events)";
  dlclose(handle);
  return text;
}

}  // namespace

TEST(ranges_carry_their_registered_names_to_the_tool) {
  if (!NvtxRanges::built_in()) {
    bool refused = false;
    try {
      NvtxRanges ranges({"a"});
    } catch (const std::runtime_error&) {
      refused = true;
    }
    CHECK(refused);
    return;
  }
  setenv("NVTX_INJECTION64_PATH", FAKE_NVTX_PATH, 1);  // before the process's first NVTX call
  NvtxRanges ranges({"aten::addmm \xc2\xb7 encoder.0", "Tensor.view"});
  CHECK_EQ(ranges.size(), size_t{2});
  ranges.push(0);
  ranges.pop(0);
  ranges.push(1);
  ranges.pop(1);
  ranges.push(7);  // out of range: nothing
  ranges.pop(7);
  const std::string expected =
      "push pyfxprof\taten::addmm \xc2\xb7 encoder.0\npop pyfxprof\n"
      "push pyfxprof\tTensor.view\npop pyfxprof\n";
  const std::string events = recorded_events();
  if (events != expected) std::fprintf(stderr, "recorded:\n%s", events.c_str());
  CHECK(events == expected);
}

TEST_MAIN()
