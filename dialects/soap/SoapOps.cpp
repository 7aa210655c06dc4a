//===- SoapOps.cpp - SOAP communication and guard ops ---------------------===//

#include "soap/Dialect/SoapDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace soap;

#define GET_OP_CLASSES
#include "soap/Dialect/SoapOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Device lists
//===----------------------------------------------------------------------===//

/// A device list must be non-empty, without repeats, and within the device
/// count the module declares.
static LogicalResult verifyDeviceList(Operation *op, ArrayRef<int64_t> devices,
                                      StringRef what) {
  if (devices.empty())
    return op->emitOpError() << what << " must list at least one device";
  std::optional<int64_t> declared = getDeclaredNumDevices(op);
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t device : devices) {
    if (device < 0 || (declared && device >= *declared)) {
      InFlightDiagnostic diag = op->emitOpError()
                                << "device " << device << " in " << what
                                << " is out of range";
      if (declared)
        diag << ": the module declares " << *declared << " device"
             << (*declared == 1 ? "" : "s");
      return diag;
    }
    if (!seen.insert(device).second)
      return op->emitOpError()
             << "device " << device << " appears twice in " << what;
  }
  return success();
}

static LogicalResult checkDimIndex(Operation *op, int64_t dim,
                                   RankedTensorType type, StringRef what) {
  if (dim < 0 || dim >= type.getRank())
    return op->emitOpError() << what << " " << dim
                             << " is out of range for a tensor of rank "
                             << type.getRank();
  return success();
}

/// The result must have the input's element type and rank, with every
/// dimension equal except those named in `changed` (checked by the caller).
static LogicalResult checkSameExcept(Operation *op, RankedTensorType input,
                                     RankedTensorType result,
                                     ArrayRef<int64_t> changed) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError() << "result element type "
                             << result.getElementType()
                             << " differs from the input's "
                             << input.getElementType();
  if (input.getRank() != result.getRank())
    return op->emitOpError() << "result rank " << result.getRank()
                             << " differs from the input's "
                             << input.getRank();
  for (int64_t dim = 0; dim < input.getRank(); ++dim) {
    if (llvm::is_contained(changed, dim))
      continue;
    if (input.getDimSize(dim) != result.getDimSize(dim))
      return op->emitOpError()
             << "result dimension " << dim << " is "
             << result.getDimSize(dim) << " but must equal the input's "
             << input.getDimSize(dim);
  }
  return success();
}

/// `bigger` must be `smaller * factor` along `dim` (when both are static).
static LogicalResult checkScaledDim(Operation *op, RankedTensorType smallType,
                                    RankedTensorType bigType, int64_t dim,
                                    int64_t factor, StringRef smallName,
                                    StringRef bigName) {
  int64_t small = smallType.getDimSize(dim), big = bigType.getDimSize(dim);
  if (ShapedType::isDynamic(small) || ShapedType::isDynamic(big))
    return success();
  if (small * factor != big)
    return op->emitOpError()
           << bigName << " dimension " << dim << " is " << big << " but the "
           << smallName << "'s " << small << " times the group size "
           << factor << " is " << small * factor;
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  return verifyDeviceList(*this, getGroup(), "the group");
}

/// all_gather grows `dim` by the group size; reduce_scatter shrinks it.
static LogicalResult verifyResizedDim(Operation *op, ArrayRef<int64_t> group,
                                      RankedTensorType input,
                                      RankedTensorType result, int64_t dim,
                                      bool grows) {
  if (failed(verifyDeviceList(op, group, "the group")) ||
      failed(checkDimIndex(op, dim, input, "dim")) ||
      failed(checkSameExcept(op, input, result, {dim})))
    return failure();
  if (grows)
    return checkScaledDim(op, input, result, dim, group.size(), "input",
                          "result");
  return checkScaledDim(op, result, input, dim, group.size(), "result",
                        "input");
}

LogicalResult AllGatherOp::verify() {
  return verifyResizedDim(*this, getGroup(), getInput().getType(),
                          getResult().getType(), getDim(), /*grows=*/true);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyResizedDim(*this, getGroup(), getInput().getType(),
                          getResult().getType(), getDim(), /*grows=*/false);
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyDeviceList(*this, getGroup(), "the group")))
    return failure();
  auto input = getInput().getType(), result = getResult().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(checkDimIndex(*this, split, input, "split dimension")) ||
      failed(checkDimIndex(*this, concat, input, "concat dimension")))
    return failure();
  if (split == concat)
    return checkSameExcept(*this, input, result, {});
  if (failed(checkSameExcept(*this, input, result, {split, concat})))
    return failure();
  int64_t groupSize = getGroup().size();
  if (failed(checkScaledDim(*this, result, input, split, groupSize, "result",
                            "input")))
    return failure();
  return checkScaledDim(*this, input, result, concat, groupSize, "input",
                        "result");
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyDeviceList(*this, getGroup(), "the group")))
    return failure();
  if (!llvm::is_contained(getGroup(), getRoot()))
    return emitOpError() << "root " << getRoot() << " is not in the group";
  return success();
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

static LogicalResult verifyPairs(Operation *op, ArrayRef<int64_t> from,
                                 ArrayRef<int64_t> to) {
  if (from.size() != to.size())
    return op->emitOpError() << "'from' lists " << from.size()
                             << " devices and 'to' lists " << to.size()
                             << "; they must pair up";
  if (failed(verifyDeviceList(op, from, "'from'")) ||
      failed(verifyDeviceList(op, to, "'to'")))
    return failure();
  for (auto [source, target] : llvm::zip(from, to))
    if (source == target)
      return op->emitOpError() << "device " << source << " sends to itself";
  return success();
}

LogicalResult SendOp::verify() { return verifyPairs(*this, getFrom(), getTo()); }

LogicalResult RecvOp::verify() { return verifyPairs(*this, getFrom(), getTo()); }

//===----------------------------------------------------------------------===//
// Device guard
//===----------------------------------------------------------------------===//

LogicalResult OnDevicesOp::verify() {
  if (failed(verifyDeviceList(*this, getDevices(), "the device set")))
    return failure();
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "body yields " << yield.getValues().size()
                         << " value(s) of types " << yield.getValues().getTypes()
                         << " but the op has result types " << getResultTypes();
  return success();
}
