//===- BlasKernels.h - which kernels become libsoaprt BLAS calls -*- C++
//-*-===//
//
// With --soap-lower-cpu's default kernels=blas, contractions and 2-D
// convolutions (any layout, grouped and depthwise too) on f32/f64 become calls
// of libsoaprt's OpenBLAS-backed kernels after bufferization. soap-profile uses
// the same predicate and the same rewrite, so that it times the code
// executables run.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_BLASKERNELS_H
#define SOAP_CODEGEN_BLASKERNELS_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>
#include <optional>

namespace soap::codegen {

/// A 2-D convolution in any layout, plain, grouped or depthwise, as
/// libsoaprt's kernels see it:
///   out[n,g,f,oh,ow] += in[n,g,c,s*oh+d*kh,s*ow+d*kw] * filter[g,f,c,kh,kw]
/// (c and f run over one group's channels). Loops are positions in the
/// op's loops; a role the op lacks (no batch, no groups, one channel per
/// group as in a depthwise convolution) has no loop and stands for size 1.
/// image, filter and output hold, in that order of roles, the position of
/// each role in the operand's indexing map (none where the operand lacks
/// it), so that its strides give the layout.
struct Conv2dRoles {
  std::optional<unsigned> batch, group, inputChannel, outputChannel;
  std::array<unsigned, 2> outputImage, window;
  std::array<int64_t, 2> strides, dilations;
  std::array<std::optional<unsigned>, 5> image;  // n, g, c, h, w
  std::array<std::optional<unsigned>, 5> filter; // g, f, c, kh, kw
  std::array<std::optional<unsigned>, 5> output; // n, g, f, oh, ow
};

/// The roles of `op`'s loops when it is a 2-D convolution: any named conv
/// or generic the convolution interface recognizes, with at most one
/// batch, group (depth), input and output channel loop, windows
/// `s * o + d * k` on the first input, and a body that adds the product of
/// its two inputs to the output; nothing otherwise (poolings included).
std::optional<Conv2dRoles> conv2dRoles(mlir::linalg::LinalgOp op);

/// Whether kernels=blas sends `op` to libsoaprt (judged on tensors, before
/// bufferization): a contraction or a 2-D convolution (conv2dRoles) whose operands
/// are statically shaped tensors of one element type, f32 or f64. Such an
/// op is not vectorized; replaceKernelsByBlasCalls then takes it (or, for a
/// contraction the runtime's calls cannot express, it becomes loops).
bool blasTakes(mlir::linalg::LinalgOp op);

/// Replaces contractions and 2-D convolutions on memrefs by calls of
/// libsoaprt's BLAS kernels (soaprt_matmul_*, soaprt_batch_matmul_*,
/// soaprt_conv2d_nchw_fchw_* and, for grouped and depthwise convolutions,
/// soaprt_conv2d_grouped_*, declared in the module on first use).
/// Returns how many were replaced. With `weightBlock` > 0 (16 or 8), the
/// entry's convolution weights that can stay in oneDNN's blocked layout
/// OIhw<b>i<b>o across steps do (lib/codegen/BlockedWeights.cpp): the calls
/// read and write them in place, and the entry arguments that hold them
/// are appended to `blockedArguments`.
int replaceKernelsByBlasCalls(
    mlir::ModuleOp module, int64_t weightBlock = 0,
    llvm::SmallVectorImpl<unsigned> *blockedArguments = nullptr);

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
