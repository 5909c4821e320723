// The process-wide record buffer and CUDA event timer shared by the Python entry points.
#pragma once

#include "cuda_events.h"
#include "record_buffer.h"

namespace pyfxprof {

extern RecordBuffer g_buffer;
extern CudaEventTimer g_cuda;

}  // namespace pyfxprof
