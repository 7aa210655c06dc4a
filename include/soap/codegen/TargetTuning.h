//===- TargetTuning.h - how SOAP tunes LLVM's code for its CPU --*- C++ -*-===//
//
// The generated loop nests of a training step read and write strided views
// (a pooling's window offsets, a padded image's interior, the slices of a
// split tensor). On x86 with AVX-512, LLVM's loop vectorizer turns such
// strided accesses into masked gathers and scatters, which run far slower
// than the scalar or interleaved loads and stores they replace (measured on
// an AMD EPYC (znver4): a ResNet-18 step's max-pool gradient, nine strided
// masked updates, 7-9 ms with gathers and scatters, 1.0 ms without; the
// same loop compiled from C by LLVM 22: 3.5 ms against 2.4 ms). SOAP
// therefore asks x86 code generation to prefer no gathers and scatters; a
// vector op that needs one is scalarized by LLVM instead.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_TARGETTUNING_H
#define SOAP_CODEGEN_TARGETTUNING_H

namespace llvm {
class SubtargetFeatures;
class Triple;
} // namespace llvm

namespace soap::codegen {

/// Adds SOAP's tuning (`+prefer-no-gather`, `+prefer-no-scatter` on x86)
/// to the features of a target machine for `triple`; nothing elsewhere.
void addCodegenTuning(const llvm::Triple &triple,
                      llvm::SubtargetFeatures &features);

} // namespace soap::codegen

#endif // SOAP_CODEGEN_TARGETTUNING_H
