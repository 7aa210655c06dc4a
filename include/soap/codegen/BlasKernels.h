//===- BlasKernels.h - which kernels become libsoaprt BLAS calls -*- C++ -*-===//
//
// With --soap-lower-cpu's default kernels=blas, contractions and NCHW
// convolutions on f32/f64 become calls of libsoaprt's OpenBLAS-backed
// kernels after bufferization. soap-profile uses the same predicate and the
// same rewrite, so that it times the code executables run.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_BLASKERNELS_H
#define SOAP_CODEGEN_BLASKERNELS_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

namespace soap::codegen {

/// Whether kernels=blas sends `op` to libsoaprt (judged on tensors, before
/// bufferization): a contraction or linalg.conv_2d_nchw_fchw whose operands
/// are statically shaped tensors of one element type, f32 or f64. Such an
/// op is not vectorized; replaceKernelsByBlasCalls then takes it (or, for a
/// contraction the runtime's calls cannot express, it becomes loops).
bool blasTakes(mlir::linalg::LinalgOp op);

/// Replaces contractions and NCHW convolutions on memrefs by calls of
/// libsoaprt's BLAS kernels (soaprt_matmul_*, soaprt_batch_matmul_*,
/// soaprt_conv2d_nchw_fchw_*, declared in the module on first use).
/// Returns how many were replaced.
int replaceKernelsByBlasCalls(mlir::ModuleOp module);

/// The GPU lowering's counterpart: f32 contractions whose matrices cuBLAS
/// can read (a static unit stride in one of their two dimensions), NCHW
/// convolutions and undilated NCHW max/sum poolings become calls of
/// libsoaprt's cuBLAS/cuDNN kernels (soaprt_gpu_matmul_f32,
/// soaprt_gpu_batch_matmul_f32, soaprt_gpu_conv2d_nchw_fchw_f32,
/// soaprt_gpu_pool2d_nchw_f32), with `math` (SOAPRT_MATH_*) as the first
/// argument of the matmuls and convolutions. Returns how many.
int replaceKernelsByGpuLibraryCalls(mlir::ModuleOp module, int64_t math);

} // namespace soap::codegen

#endif // SOAP_CODEGEN_BLASKERNELS_H
