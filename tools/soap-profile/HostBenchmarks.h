//===- HostBenchmarks.h - peak FLOP/s and memory bandwidth of a core -*- C++
//-*-===//
//
// The device-type numbers of a CPU machine file, measured on one core:
// peak FLOP/s (independent vector FMA chains compiled for this CPU), the
// FLOP/s of an f32 matmul compiled the way soap-profile compiles kernels,
// memory bandwidth (STREAM copy and triad, plain C++), and the cost of
// calling an empty compiled kernel.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_HOSTBENCHMARKS_H
#define SOAP_TOOLS_PROFILE_HOSTBENCHMARKS_H

#include "KernelCodegen.h"

#include "soap/Autodiff/TrainingStep.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <optional>
#include <string>

namespace soap::profile {

struct HostBenchmarkOptions {
  int matmulSize = 512;    ///< the matmul is N x N x N, f32
  int64_t streamBytes = 0; ///< per array; 0: 4 x the last-level cache
  Codegen codegen = Codegen::Vector;
};

struct HostMeasurements {
  double peakFlopsF32 = 0; ///< FLOP/s, one core
  double peakFlopsF64 = 0;
  double matmulFlops = 0; ///< FLOP/s of the N^3 f32 matmul
  int matmulSize = 0;
  double copyBandwidth = 0;  ///< bytes/s, STREAM copy (16 bytes per element)
  double triadBandwidth = 0; ///< bytes/s, STREAM triad (24 bytes per element)
  int64_t streamBytes = 0;   ///< bytes per array
  double callOverhead = 0;   ///< seconds per call of an empty kernel
  /// bytes/s (read + written) of a pad the way executables pad: a fill of
  /// the padded buffer and libsoaprt's strided copy of the interior
  /// (8 x 32 x 16 x 16 f32 images into 18 x 18).
  double padBandwidth = 0;
};

/// The operands of one `optimizer` update ("sgd", "momentum", "adam") of
/// `elements` f32 parameters: the parameter, its gradient, then the
/// optimizer's state (autodiff::optimizerStateTypes).
struct UpdateOperands {
  autodiff::TrainingStepOptions options;
  llvm::SmallVector<mlir::RankedTensorType> types;
};
/// Nothing, with `error`, for an unknown optimizer.
std::optional<UpdateOperands> updateOperands(mlir::MLIRContext &context,
                                             const std::string &optimizer,
                                             int64_t elements,
                                             std::string &error);

/// Seconds of one update of `elements` f32 parameters by `optimizer`
/// ("sgd", "momentum", "adam"): the ops --soap-training-step emits for it
/// (autodiff::emitOptimizerUpdates), results in buffers of their own,
/// compiled as executables compile them; timed as kernels are (median of
/// 11 samples; CompiledKernel::coldCaches).
std::optional<double> measureUpdate(mlir::MLIRContext &context,
                                    const std::string &optimizer,
                                    int64_t elements, std::string &error);

/// Runs the benchmarks on the calling thread (a few seconds).
std::optional<HostMeasurements> measureHost(mlir::MLIRContext &context,
                                            const HostBenchmarkOptions &options,
                                            std::string &error);

/// The default STREAM array size: 4 x the last-level cache, at least
/// 64 MiB, at most an eighth of the physical memory.
int64_t defaultStreamBytes();

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_HOSTBENCHMARKS_H
