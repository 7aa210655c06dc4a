//===- GpuLowering.h - a training step to LLVM for NVIDIA GPUs -*- C++ -*-===//
//
// lowerModuleForGpu turns a module with an entry function on tensors (the
// @train_step of docs/train-step.md) into the LLVM dialect for a host that
// drives one NVIDIA GPU per rank: the same bufferization as the CPU
// lowering, every buffer in device memory, f32 matmuls, convolutions and
// poolings as calls of libsoaprt's cuBLAS/cuDNN kernels, every other op as
// a CUDA kernel generated through MLIR's gpu and NVVM dialects (embedded in
// the module as a binary that libsoaprt loads), and the runtime's C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_GPULOWERING_H
#define SOAP_CODEGEN_GPULOWERING_H

#include "soap/codegen/CpuLowering.h"

#include <string>

namespace soap {

/// The arithmetic of cuBLAS/cuDNN calls (SOAPRT_MATH_* in Runtime.h).
enum class GpuMath { F32 = 0, TF32 = 1, BF16 = 2 };

struct GpuLoweringOptions {
  /// The function to compile; it becomes soap_train_step.
  std::string entry = "train_step";
  GpuMath math = GpuMath::F32;
  /// The GPU architecture kernels are compiled for, and PTX features.
  std::string chip = "sm_90";
  std::string features = "+ptx80";
  /// How kernels are embedded: "fatbin" (machine code, needs ptxas at
  /// compile time) or "isa" (PTX, compiled by the driver when loaded).
  std::string format = "isa";
  /// Brackets each op with soaprt_op_begin/end(id).
  bool traceOps = true;
  /// All-reduces start early and are waited for at their first use, so
  /// that they overlap computation (CommunicationOverlap.cpp).
  bool overlapComm = true;
};

/// Lowers `module` in place; emits an error on the module (or the op
/// concerned) and fails when it cannot. The module gets the attribute
/// soap.target = "gpu", which soap-translate reads to link the GPU
/// runtime.
mlir::LogicalResult lowerModuleForGpu(mlir::ModuleOp module,
                                      const GpuLoweringOptions &options,
                                      PipelineRunner runPipeline);

/// Parses "f32", "tf32" or "bf16".
std::optional<GpuMath> parseGpuMath(llvm::StringRef name);

/// Adds the dialects the lowering creates to `registry`.
void getGpuLoweringDependentDialects(mlir::DialectRegistry &registry);

} // namespace soap

#endif // SOAP_CODEGEN_GPULOWERING_H
