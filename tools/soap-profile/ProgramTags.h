//===- ProgramTags.h - which op of the model a kernel comes from -*- C++
//-*-===//
//
// soap-profile --program tags each op of the model with its node before
// the training step is built, and each op that makes a new parameter with
// that parameter; the tags are names of locations, which follow the ops
// through the training step, the partitioner and fusion, and which the
// executable's trace prints in each kernel's name.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_PROGRAMTAGS_H
#define SOAP_TOOLS_PROFILE_PROGRAMTAGS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Location.h"

#include <optional>
#include <vector>

namespace soap::profile {

/// "soap.node.N" for node N's forward op, "soap.node.N.backward" for ops of
/// its gradient, each with "@D,E,..." appended inside a device guard.
struct Tag {
  int node = -1;
  bool backward = false;
  /// The devices of the guard around the op; empty: every device.
  std::vector<int64_t> devices;
};

/// The tags `loc` carries: one, or several where a kernel merged ops (a
/// fused location: sibling reductions that share a pass over their input).
/// An elementwise chain fused into one loop nest keeps its consumer's.
std::vector<Tag> tagsOf(mlir::Location loc);
/// The first tag `loc` carries.
std::optional<Tag> tagOf(mlir::Location loc);
/// The tags of a kernel's name in the executable's trace: "linalg.generic
/// (soap.node.3.backward@0,1)", several separated by ", " where the kernel
/// merged ops (insertTraceHooks prints a fused location's parts).
std::vector<Tag> tagsOfTraceName(llvm::StringRef name);
/// `loc` tagged with `tag` instead of any tag it had.
mlir::Location withTag(mlir::MLIRContext *context, const Tag &tag,
                       mlir::Location loc);

/// The optimizer update of parameter P (its index among the training
/// step's parameters): "soap.update.P" when the training step is built and
/// "soap.update.P.ExG" once partitioned (sizeUpdates): E elements on a
/// device, its gradient all-reduced over G devices first (1: none).
struct UpdateTag {
  int parameter = -1;
  int64_t elements = 0, group = 0;
};

/// The update tag of `loc` (the outermost name that is one).
std::optional<UpdateTag> updateTagOf(mlir::Location loc);
/// The update tag of a kernel's name in the executable's trace.
std::optional<UpdateTag> updateTagOfTraceName(llvm::StringRef name);

/// Tags the ops that compute the training step's new parameters: back
/// from each returned parameter (its result "soap.role" is "param"),
/// every op in the step's body that no tag names yet (the update, and for
/// momentum and Adam the state it reads), with that parameter.
void tagUpdates(mlir::func::FuncOp step);
/// Adds to each update tag in `step` (tagUpdates) what the database keys
/// it by: the elements the op writes on a device and the devices that
/// all-reduced a gradient it reads (1: none).
void sizeUpdates(mlir::func::FuncOp step);

/// The ops of a function body that become work, in program order: every
/// op but those inside linalg ops' bodies.
template <typename Fn> void walkOps(mlir::Operation *root, Fn &&fn) {
  root->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    fn(op);
    return llvm::isa<mlir::linalg::LinalgOp>(op) ? mlir::WalkResult::skip()
                                                 : mlir::WalkResult::advance();
  });
}

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_PROGRAMTAGS_H
