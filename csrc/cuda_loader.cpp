// Locates a CUDA runtime at run time (env override, already-loaded, library path) and fills the table.
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_runtime_table.h"

namespace pyfxprof {

namespace {

const char* const kSonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                "libcudart.so"};

int collect_loaded_cudart(struct dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  if (name && std::strstr(name, "libcudart")) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  }
  return 0;
}

template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn& slot, std::string& missing) {
  slot = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (!slot) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  return slot != nullptr;
}

CudaLoadResult fill_table(void* handle, const std::string& library, const std::string& how) {
  CudaLoadResult result;
  result.handle = handle;
  result.library = library;
  std::string missing;
  CudaRuntimeTable& t = result.table;
  resolve(handle, "cudaEventCreateWithFlags", t.event_create_with_flags, missing);
  resolve(handle, "cudaEventDestroy", t.event_destroy, missing);
  resolve(handle, "cudaEventRecord", t.event_record, missing);
  resolve(handle, "cudaEventSynchronize", t.event_synchronize, missing);
  resolve(handle, "cudaEventElapsedTime", t.event_elapsed_time, missing);
  resolve(handle, "cudaGetErrorString", t.get_error_string, missing);
  if (!missing.empty()) {
    dlclose(handle);
    result.handle = nullptr;
    result.reason = library + " is not a CUDA runtime (missing " + missing + ")";
    return result;
  }
  result.ok = true;
  result.reason = how;
  return result;
}

CudaLoadResult open_path(const std::string& path, const std::string& how) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    CudaLoadResult failed;
    const char* error = dlerror();
    failed.reason = "cannot load " + path + ": " + (error ? error : "unknown dlopen error");
    return failed;
  }
  return fill_table(handle, path, how);
}

}  // namespace

CudaLoadResult load_cuda_runtime(const std::string& explicit_path) {
  const char* env = std::getenv("PYFXPROF_CUDART");
  if (!explicit_path.empty()) return open_path(explicit_path, "explicit path");
  if (env && *env) return open_path(env, "PYFXPROF_CUDART");

  std::vector<std::string> loaded;
  dl_iterate_phdr(collect_loaded_cudart, &loaded);
  for (const std::string& path : loaded) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      return fill_table(handle, path, "already loaded in this process");
    }
  }
  std::string tried;
  for (const char* soname : kSonames) {
    if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
      return fill_table(handle, soname, "found on the library path");
    }
    tried += std::string(tried.empty() ? "" : ", ") + soname;
  }
  CudaLoadResult none;
  none.reason = "no CUDA runtime loaded in this process and none of " + tried +
                " on the library path (set PYFXPROF_CUDART=/path/to/libcudart.so to choose one)";
  return none;
}

}  // namespace pyfxprof
