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

#include <array>
#include <optional>

namespace soap::codegen {

/// A 2-D convolution in any layout, as libsoaprt's NCHW/FCHW kernel sees
/// it: out[n,f,oh,ow] += in[n,c,s*oh+d*kh,s*ow+d*kw] * filter[f,c,kh,kw].
/// Loops are positions in the op's loops; image, filter and output hold,
/// in that order of roles, the position of each role in the operand's
/// indexing map, so that its strides give the layout.
struct Conv2dRoles {
  unsigned batch, inputChannel, outputChannel;
  std::array<unsigned, 2> outputImage, window;
  std::array<int64_t, 2> strides, dilations;
  std::array<unsigned, 4> image;  // n, c, h, w
  std::array<unsigned, 4> filter; // f, c, kh, kw
  std::array<unsigned, 4> output; // n, f, oh, ow
};

/// The roles of `op`'s loops when it is a 2-D convolution (any named conv
/// or generic the convolution interface recognizes, with one batch, one
/// input and one output channel, no depthwise or group loop, and windows
/// `s * o + d * k` on the first input); nothing otherwise.
std::optional<Conv2dRoles> conv2dRoles(mlir::linalg::LinalgOp op);

/// Whether kernels=blas sends `op` to libsoaprt (judged on tensors, before
/// bufferization): a contraction or a 2-D convolution (conv2dRoles) whose operands
/// are statically shaped tensors of one element type, f32 or f64. Such an
/// op is not vectorized; replaceKernelsByBlasCalls then takes it (or, for a
/// contraction the runtime's calls cannot express, it becomes loops).
bool blasTakes(mlir::linalg::LinalgOp op);

/// Replaces contractions and 2-D convolutions on memrefs by calls of
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
