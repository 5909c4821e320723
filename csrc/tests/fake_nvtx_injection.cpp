// A fake NVTX tool (injection library): records the ranges pushed in each domain, for the tests.
//
// Loaded by the NVTX v3 headers when NVTX_INJECTION64_PATH names it. It hooks the domain
// functions pyfxprof uses (create, register string, push, pop) and keeps one line per event:
// "push <domain>\t<name>" or "pop <domain>". The lines are written to $FAKE_NVTX_LOG at exit
// and can be read in-process with fake_nvtx_events().
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Domain {
  std::string name;
};

struct Registered {
  std::string text;
};

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::string joined;

  ~Log() {
    const char* path = std::getenv("FAKE_NVTX_LOG");
    if (!path) return;
    if (FILE* file = std::fopen(path, "w")) {
      for (const std::string& line : lines) std::fprintf(file, "%s\n", line.c_str());
      std::fclose(file);
    }
  }
  void add(std::string line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(std::move(line));
  }
};

Log g_log;

std::string domain_name(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<Domain*>(domain)->name : std::string("(default)");
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name ? name : ""});  // kept for life
}

nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(new Registered{text ? text : ""});
}

int NVTX_API range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  std::string name = "?";
  if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
    name = reinterpret_cast<Registered*>(attributes->message.registered)->text;
  } else if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII) {
    name = attributes->message.ascii;
  }
  g_log.add("push " + domain_name(domain) + "\t" + name);
  return 0;
}

int NVTX_API range_pop(nvtxDomainHandle_t domain) {
  g_log.add("pop " + domain_name(domain));
  return 0;
}

template <typename Function>
void hook(NvtxFunctionTable table, unsigned size, unsigned id, Function function) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
}

}  // namespace

extern "C" {

// The NVTX v3 entry point of an injection library: returns 1 on success.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
  hook(table, size, NVTX_CBID_CORE2_DomainCreateA, domain_create);
  hook(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, register_string);
  hook(table, size, NVTX_CBID_CORE2_DomainRangePushEx, range_push);
  hook(table, size, NVTX_CBID_CORE2_DomainRangePop, range_pop);
  return 1;
}

// Every event so far, one per line (for in-process tests).
__attribute__((visibility("default"))) const char* fake_nvtx_events() {
  std::lock_guard<std::mutex> lock(g_log.mutex);
  g_log.joined.clear();
  for (const std::string& line : g_log.lines) g_log.joined += line + "\n";
  return g_log.joined.c_str();
}

}  // extern "C"
