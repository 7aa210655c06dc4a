//===- KernelCallBuilders.h - building runtime kernel calls ---*- C++ -*-===//
//
// Private to lib/codegen: what KernelCalls.cpp (contractions, the driver)
// and ConvolutionCalls.cpp (convolutions and poolings) share to turn a
// linalg op on memrefs into a call of libsoaprt.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_CODEGEN_KERNELCALLBUILDERS_H
#define SOAP_LIB_CODEGEN_KERNELCALLBUILDERS_H

#include "AliasClasses.h"
#include "LoweringSteps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

#include <array>
#include <optional>
#include <string>
#include <utility>

namespace soap::codegen {

using namespace mlir;

/// The declaration of runtime function `name`, added on first use.
func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    TypeRange inputs);

/// A memref operand as the runtime takes it: a pointer to its first element
/// and the stride of each dimension.
struct StridedOperand {
  Value pointer;
  SmallVector<Value> strides; // i64, one per memref dimension
};

/// `memref` as the runtime takes it: reads its strided metadata.
StridedOperand stridedOperand(OpBuilder &b, Location loc, Value memref);

/// Where the kernel calls go: libsoaprt's CPU kernels (soaprt_*) or its
/// GPU kernels (soaprt_gpu_*, which take the math mode first).
struct CallTarget {
  std::string prefix = "soaprt_";
  std::optional<int64_t> math;
  /// cuBLAS reads a matrix with one unit-stride dimension only.
  bool needsUnitStride = false;
};

/// Per spatial dimension of a strided view: its first element, stride and
/// size.
struct SpatialWindow {
  std::array<int64_t, 2> offsets, strides, sizes;
};

/// Where a convolution's image is zero but at a strided grid of points
/// (soaprt_conv2d_spread_f32): the points' window of the image; `points`,
/// a buffer of just the points (the image's other dimensions, then the two
/// spatial ones), and the ops that only wrote the image, which go once the
/// call reads `points`.
struct Spread : SpatialWindow {
  Value points;
  SmallVector<Operation *> dead;
  /// The part of the output anything reads after the convolution (a view
  /// of it from `interiorStart`), or null for all of it (interiorOutput).
  Value interior;
  std::array<int64_t, 2> interiorStart = {0, 0};
};

/// A convolution's filter that a relayout copy made (the autodiff's input
/// gradients read the forward filter with its windows reversed and its
/// channels swapped): the copy, how it reads its source (copyRelayout) and
/// the ops that only made the copy, which go once the call reads the
/// source. Matched after bufferization: the filter is a fresh buffer that
/// only the copy writes and only the convolution reads, and the source is
/// left alone between the copy and the convolution.
struct RelaidFilter {
  linalg::GenericOp copy;
  SmallVector<RelayoutRead> reads;
  SmallVector<Operation *> dead;
  /// Whether a window is read backwards (then only the spread kernel,
  /// which reads the filter forwards, takes it).
  bool backwards = false;
};

/// Erases `op` and the trace hooks that bracket it (insertTraceHooks).
void eraseWithTraceHooks(Operation *op);

/// The zero fill of `op`'s whole output (its first init: a linalg.fill of
/// zero, or a linalg.map yielding zero) when `op` is the next op to touch
/// that buffer (no op between them uses a buffer that may be its memory,
/// by `classes`): `op` can overwrite the output instead, and the fill go.
/// Null otherwise.
Operation *zeroFillBefore(linalg::LinalgOp op, AliasClasses &classes);

/// A convolution replaceKernelsByCalls replaces, as planned before any is.
struct PlannedConvolution {
  linalg::LinalgOp op;
  Conv2dRoles roles;
  std::string suffix;
  std::optional<Spread> spread;
  std::optional<RelaidFilter> relaid;
  Operation *zeroFill = nullptr;
};

/// How the convolution `op` (roles from conv2dRoles, f32 or f64 by
/// `suffix`) is best called: on the CPU, whether its image is a spread
/// (spreadImage), its filter a relaid copy (relaidFilter) and its output
/// zero-filled right before it. `classes` tell which buffers may be the
/// same memory (built before any op is replaced).
PlannedConvolution planConvolution(linalg::LinalgOp op,
                                   const Conv2dRoles &roles,
                                   const std::string &suffix, bool gpu,
                                   AliasClasses &classes);

/// The convolution as one runtime call (see ConvolutionCalls.cpp); false,
/// changing nothing, when an operand cannot be passed.
bool replaceConvolution(linalg::LinalgOp op, const Conv2dRoles &roles,
                        const std::string &suffix, const CallTarget &target,
                        const std::optional<Spread> &spread,
                        const std::optional<RelaidFilter> &relaid,
                        bool overwrite,
                        std::pair<int64_t, int64_t> blocks = {0, 0});

/// linalg.pooling_nchw_max (kind 0) or _sum (kind 1) as a GPU library call.
bool replacePooling(linalg::LinalgOp op, int64_t kind);

} // namespace soap::codegen

#endif // SOAP_LIB_CODEGEN_KERNELCALLBUILDERS_H
