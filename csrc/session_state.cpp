// Definitions of the process-wide record buffer and CUDA event timer.
#include "session_state.h"

namespace pyfxprof {

RecordBuffer g_buffer;
CudaEventTimer g_cuda;

}  // namespace pyfxprof
