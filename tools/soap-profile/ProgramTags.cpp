//===- ProgramTags.cpp - which op of the model a kernel comes from --------===//
//
// See ProgramTags.h.
//
//===----------------------------------------------------------------------===//

#include "ProgramTags.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace soap::profile {

namespace {

constexpr llvm::StringLiteral kTag = "soap.node.";
constexpr llvm::StringLiteral kBackward = ".backward";
constexpr llvm::StringLiteral kUpdateTag = "soap.update.";

std::optional<Tag> parseTag(StringRef name) {
  if (!name.consume_front(kTag))
    return std::nullopt;
  Tag tag;
  auto [head, devices] = name.split('@');
  tag.backward = head.consume_back(kBackward);
  if (head.getAsInteger(10, tag.node))
    return std::nullopt;
  SmallVector<StringRef> parts;
  if (!devices.empty())
    devices.split(parts, ',');
  for (StringRef part : parts) {
    int64_t device;
    if (part.getAsInteger(10, device))
      return std::nullopt;
    tag.devices.push_back(device);
  }
  return tag;
}

std::optional<UpdateTag> parseUpdateTag(StringRef name) {
  if (!name.consume_front(kUpdateTag))
    return std::nullopt;
  UpdateTag tag;
  auto [parameter, rest] = name.split('.');
  if (parameter.getAsInteger(10, tag.parameter))
    return std::nullopt;
  if (!rest.empty()) {
    auto [elements, group] = rest.split('x');
    if (elements.getAsInteger(10, tag.elements) ||
        group.getAsInteger(10, tag.group))
      return std::nullopt;
  }
  return tag;
}

/// The names in `loc` that `parse` reads, outermost first: a name it reads
/// hides the location it wraps; a fused location gives each part's, a call
/// site its callee's.
template <typename T, typename Parse>
void parsedNames(Location loc, Parse parse, std::vector<T> &out) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (std::optional<T> parsed = parse(name.getName().getValue()))
      out.push_back(*parsed);
    else
      parsedNames(name.getChildLoc(), parse, out);
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      parsedNames(inner, parse, out);
    return;
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    parsedNames(call.getCallee(), parse, out);
}

/// The parts of a kernel's name in the executable's trace, "op (part,
/// part, ...)" (insertTraceHooks prints a fused location's parts), that
/// `parse` reads.
template <typename T, typename Parse>
std::vector<T> parsedTraceName(StringRef name, Parse parse) {
  std::vector<T> out;
  size_t open = name.find(" (");
  if (open == StringRef::npos || !name.ends_with(")"))
    return out;
  SmallVector<StringRef> parts;
  name.drop_front(open + 2).drop_back().split(parts, ", ");
  for (StringRef part : parts)
    if (std::optional<T> parsed = parse(part.trim()))
      out.push_back(*parsed);
  return out;
}

/// `loc` without its name that `parse` reads, if its outermost is one.
template <typename Parse> Location withoutName(Location loc, Parse parse) {
  if (auto name = dyn_cast<NameLoc>(loc))
    if (parse(name.getName().getValue()))
      return name.getChildLoc();
  return loc;
}

Location withUpdateTag(MLIRContext *context, const UpdateTag &tag,
                       Location loc) {
  std::string text = (kUpdateTag + Twine(tag.parameter)).str();
  if (tag.elements > 0)
    text +=
        "." + std::to_string(tag.elements) + "x" + std::to_string(tag.group);
  return NameLoc::get(StringAttr::get(context, text),
                      withoutName(loc, parseUpdateTag));
}

/// The one input of a linalg op that carries data into a result of as
/// many elements (a transpose or a copy written as linalg.generic, a sum
/// over unit dimensions: what torch-mlir emits between a weight's gradient
/// and its update), beside inputs that only give a shape (tensor.empty);
/// null for any other op.
Value movedInput(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1)
    return nullptr;
  auto result = dyn_cast<ShapedType>(op.getDpsInits()[0].getType());
  if (!result || !result.hasStaticShape())
    return nullptr;
  Value moved;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (input->get().getDefiningOp<tensor::EmptyOp>())
      continue;
    auto type = dyn_cast<ShapedType>(input->get().getType());
    if (moved || !type || !type.hasStaticShape() ||
        type.getNumElements() != result.getNumElements())
      return nullptr;
    moved = input->get();
  }
  return moved;
}

/// The all-reduce that made `value`, through ops that only move its
/// elements (a transpose of a weight gradient, reshapes, slices), if any.
AllReduceOp allReduceBefore(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      return reduce;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      value = movedInput(linalgOp);
    else if (isa<tensor::CastOp, tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                 tensor::ExtractSliceOp>(op))
      value = op->getOperand(0);
    else
      break;
    if (!value)
      break;
  }
  return nullptr;
}

} // namespace

std::vector<Tag> tagsOf(Location loc) {
  std::vector<Tag> tags;
  parsedNames(loc, parseTag, tags);
  return tags;
}

std::optional<Tag> tagOf(Location loc) {
  std::vector<Tag> tags = tagsOf(loc);
  if (tags.empty())
    return std::nullopt;
  return tags.front();
}

std::vector<Tag> tagsOfTraceName(StringRef name) {
  return parsedTraceName<Tag>(name, parseTag);
}

Location withTag(MLIRContext *context, const Tag &tag, Location loc) {
  std::string name = (kTag + Twine(tag.node)).str();
  if (tag.backward)
    name += kBackward;
  for (size_t i = 0; i < tag.devices.size(); ++i)
    name += (i ? "," : "@") + std::to_string(tag.devices[i]);
  return NameLoc::get(StringAttr::get(context, name),
                      withoutName(loc, parseTag));
}

std::optional<UpdateTag> updateTagOf(Location loc) {
  std::vector<UpdateTag> tags;
  parsedNames(loc, parseUpdateTag, tags);
  if (tags.empty())
    return std::nullopt;
  return tags.front();
}

std::optional<UpdateTag> updateTagOfTraceName(StringRef name) {
  std::vector<UpdateTag> tags =
      parsedTraceName<UpdateTag>(name, parseUpdateTag);
  if (tags.empty())
    return std::nullopt;
  return tags.front();
}

void tagUpdates(func::FuncOp step) {
  auto ret = dyn_cast<func::ReturnOp>(step.getBody().back().getTerminator());
  if (!ret)
    return;
  MLIRContext *context = step.getContext();
  int parameter = 0;
  for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
    auto role = step.getResultAttrOfType<StringAttr>(r, "soap.role");
    if (!role || role.getValue() != "param")
      continue;
    SmallVector<Value> work = {ret.getOperand(r)};
    while (!work.empty()) {
      Operation *op = work.pop_back_val().getDefiningOp();
      if (!op || op->getBlock() != ret->getBlock() || tagOf(op->getLoc()) ||
          updateTagOf(op->getLoc()) ||
          isa_and_nonnull<SoapDialect>(op->getDialect()))
        continue;
      op->setLoc(
          withUpdateTag(context, UpdateTag{parameter, 0, 0}, op->getLoc()));
      work.append(op->operand_begin(), op->operand_end());
    }
    ++parameter;
  }
}

void sizeUpdates(func::FuncOp step) {
  MLIRContext *context = step.getContext();
  walkOps(step, [&](Operation *op) {
    std::optional<UpdateTag> tag = updateTagOf(op->getLoc());
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!tag || !linalgOp || linalgOp.getNumDpsInits() == 0)
      return;
    auto type = dyn_cast<ShapedType>(linalgOp.getDpsInits()[0].getType());
    if (!type || !type.hasStaticShape())
      return;
    tag->elements = std::max<int64_t>(type.getNumElements(), 1);
    tag->group = 1;
    for (Value operand : op->getOperands())
      if (AllReduceOp reduce = allReduceBefore(operand))
        tag->group = std::max<int64_t>(tag->group, reduce.getGroup().size());
    op->setLoc(withUpdateTag(context, *tag, op->getLoc()));
  });
}

} // namespace soap::profile
