//===- GpuHooks.cpp - the hook table libsoaprt_gpu fills ------------------===//

#include "GpuHooks.h"

namespace soaprt {
GpuHooks *gpuHooks = nullptr;
} // namespace soaprt
