//===- SoapDialect.cpp - the SOAP dialect and its attributes --------------===//

#include "soap/Dialect/SoapDialect.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/graph/ParallelConfig.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace soap;

#include "soap/Dialect/SoapDialect.cpp.inc"
#include "soap/Dialect/SoapEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "soap/Dialect/SoapAttrs.cpp.inc"

void SoapDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "soap/Dialect/SoapAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "soap/Dialect/SoapOps.cpp.inc"
      >();
}

std::optional<int64_t> soap::getDeclaredNumDevices(Operation *op) {
  for (Operation *cur = op; cur; cur = cur->getParentOp())
    if (auto attr = cur->getAttrOfType<IntegerAttr>(
            SoapDialect::getNumDevicesAttrName()))
      return attr.getInt();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Integer lists: `[1, 2, 3]`, possibly empty.
//===----------------------------------------------------------------------===//

static ParseResult parseIntList(AsmParser &parser,
                                SmallVectorImpl<int64_t> &values) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                        [&]() -> ParseResult {
                                          int64_t value;
                                          if (parser.parseInteger(value))
                                            return failure();
                                          values.push_back(value);
                                          return success();
                                        });
}

static void printIntList(AsmPrinter &printer, ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

static ParseResult parseKeyedIntList(AsmParser &parser, StringRef key,
                                     SmallVectorImpl<int64_t> &values) {
  if (parser.parseKeyword(key) || parser.parseEqual())
    return failure();
  return parseIntList(parser, values);
}

//===----------------------------------------------------------------------===//
// #soap.config
//===----------------------------------------------------------------------===//

int64_t ConfigAttr::getNumTasks() const { return computeProduct(getDegrees()); }

Attribute ConfigAttr::parse(AsmParser &parser, Type) {
  SmallVector<int64_t> degrees, devices;
  if (parser.parseLess() || parseKeyedIntList(parser, "degrees", degrees) ||
      parser.parseComma() || parseKeyedIntList(parser, "devices", devices) ||
      parser.parseGreater())
    return {};
  return ConfigAttr::getChecked(
      [&]() { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), degrees, devices);
}

void ConfigAttr::print(AsmPrinter &printer) const {
  printer << "<degrees = ";
  printIntList(printer, getDegrees());
  printer << ", devices = ";
  printIntList(printer, getDevices());
  printer << '>';
}

LogicalResult ConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> degrees,
                                 ArrayRef<int64_t> devices) {
  if (auto problem = checkConfigShape(
          std::vector<int64_t>(degrees.begin(), degrees.end()), devices.size()))
    return emitError() << *problem;
  return success();
}

//===----------------------------------------------------------------------===//
// #soap.layout
//===----------------------------------------------------------------------===//

int64_t LayoutAttr::getNumShards() const { return computeProduct(getSplit()); }

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  SmallVector<int64_t> split, devices;
  int64_t replicas = 1;
  std::optional<ReductionKind> partial;
  if (parser.parseLess() || parseKeyedIntList(parser, "split", split) ||
      parser.parseComma())
    return {};
  if (succeeded(parser.parseOptionalKeyword("replicas"))) {
    if (parser.parseEqual() || parser.parseInteger(replicas) ||
        parser.parseComma())
      return {};
  }
  if (succeeded(parser.parseOptionalKeyword("partial"))) {
    StringRef kindName;
    SMLoc kindLoc = parser.getCurrentLocation();
    if (parser.parseEqual() || parser.parseKeyword(&kindName))
      return {};
    partial = symbolizeReductionKind(kindName);
    if (!partial) {
      parser.emitError(kindLoc) << "unknown partial state '" << kindName
                                << "'; expected sum, max or min";
      return {};
    }
    if (parser.parseComma())
      return {};
  }
  if (parseKeyedIntList(parser, "devices", devices) || parser.parseGreater())
    return {};
  return LayoutAttr::getChecked(
      [&]() { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), split, replicas, partial, devices);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<split = ";
  printIntList(printer, getSplit());
  if (getReplicas() != 1)
    printer << ", replicas = " << getReplicas();
  if (getPartial())
    printer << ", partial = " << stringifyReductionKind(*getPartial());
  printer << ", devices = ";
  printIntList(printer, getDevices());
  printer << '>';
}

/// Reports a device listed twice, or a negative device id.
static LogicalResult
checkDistinctDevices(function_ref<InFlightDiagnostic()> emitError,
                     ArrayRef<int64_t> devices, StringRef what) {
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t device : devices) {
    if (device < 0)
      return emitError() << "device " << device << " in " << what
                         << " is negative";
    if (!seen.insert(device).second)
      return emitError() << "device " << device << " appears twice in " << what;
  }
  return success();
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> split, int64_t replicas,
                                 std::optional<ReductionKind> partial,
                                 ArrayRef<int64_t> devices) {
  int64_t shards = 1;
  for (auto [dim, parts] : llvm::enumerate(split)) {
    if (parts < 1)
      return emitError() << "split " << parts << " of dimension " << dim
                         << " must be at least 1";
    shards *= parts;
  }
  if (replicas < 1)
    return emitError() << "replicas must be at least 1, got " << replicas;
  if (partial && *partial == ReductionKind::mean)
    return emitError()
           << "partial state 'mean' is not allowed; use sum, max or min";
  if (partial && replicas < 2)
    return emitError() << "a partial '" << stringifyReductionKind(*partial)
                       << "' layout needs at least 2 replicas to combine";
  if (static_cast<int64_t>(devices.size()) != shards * replicas)
    return emitError() << "layout lists " << devices.size()
                       << " devices but split "
                       << formatList({split.begin(), split.end()}) << " with "
                       << replicas << " replica" << (replicas == 1 ? "" : "s")
                       << " needs " << shards * replicas;
  return checkDistinctDevices(emitError, devices, "the layout");
}

//===----------------------------------------------------------------------===//
// Attributes on ops and arguments
//===----------------------------------------------------------------------===//

/// MLIR verifies an op's dialect attributes before the op itself, and the
/// checks below query the op (its indexing maps, loop sizes, result type).
/// An op that is invalid on its own is reported by its own verifier first,
/// so that those queries never see it.
static LogicalResult verifyOwnInvariants(Operation *op) {
  std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
  if (!info)
    return success();
  if (failed(info->verifyInvariants(op)))
    return failure();
  return info->verifyRegionInvariants(op);
}

static LogicalResult verifyConfigOnOp(Operation *op, ConfigAttr config) {
  if (failed(verifyOwnInvariants(op)))
    return failure();
  auto partitionable = dyn_cast<PartitionableOpInterface>(op);
  if (!partitionable)
    return op->emitError() << "'" << op->getName()
                           << "' cannot carry a #soap.config: it is not "
                              "partitionable";
  if (auto numDevices = getDeclaredNumDevices(op)) {
    if (auto problem = checkConfigDevices(
            {config.getDevices().begin(), config.getDevices().end()},
            *numDevices))
      return op->emitError() << *problem;
  }
  if (auto reason = partitionable.getUnsupportedReason())
    return op->emitError() << "cannot carry a #soap.config: " << *reason;
  SmallVector<int64_t> sizes = partitionable.getLoopSizes();
  SmallVector<std::string> names = partitionable.getLoopNames();
  for (int64_t &size : sizes)
    if (ShapedType::isDynamic(size))
      size = -1;
  if (auto problem = checkConfigForLoops(
          {config.getDegrees().begin(), config.getDegrees().end()},
          {sizes.begin(), sizes.end()}, {names.begin(), names.end()}))
    return op->emitError() << *problem;
  return success();
}

static LogicalResult verifyLayoutOnOp(Operation *op, LayoutAttr layout) {
  if (failed(verifyOwnInvariants(op)))
    return failure();
  if (auto numDevices = getDeclaredNumDevices(op)) {
    for (int64_t device : layout.getDevices())
      if (device >= *numDevices)
        return op->emitError()
               << "layout device " << device
               << " is out of range: the module declares " << *numDevices
               << " device" << (*numDevices == 1 ? "" : "s");
  }
  if (op->getNumResults() != 1)
    return success();
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type)
    return op->emitError() << "a #soap.layout needs a ranked tensor result";
  if (static_cast<int64_t>(layout.getSplit().size()) != type.getRank())
    return op->emitError() << "layout splits " << layout.getSplit().size()
                           << " dimensions but the result has rank "
                           << type.getRank();
  for (auto [dim, parts] : llvm::enumerate(layout.getSplit())) {
    int64_t size = type.getDimSize(dim);
    if (!ShapedType::isDynamic(size) && size % parts != 0)
      return op->emitError()
             << "split " << parts << " does not divide dimension " << dim
             << " of size " << size;
  }
  return success();
}

/// Checks one of the training-step attributes (soap.name, soap.role,
/// soap.init, soap.range) on argument or result `index` of type `type`
/// (null when the region is empty).
static LogicalResult verifyStepAttribute(Operation *op, StringRef what,
                                         unsigned index, Type type,
                                         NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto error = [&]() {
    return op->emitError() << "'" << name << "' on " << what << " " << index;
  };
  if (name == SoapDialect::getNameAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty())
      return error() << " must be a non-empty string";
    return success();
  }
  if (name == SoapDialect::getRoleAttrName()) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (!role ||
        !llvm::is_contained(
            ArrayRef<StringRef>{"param", "opt_state", "input", "label", "loss"},
            role.getValue()))
      return error() << " must be one of \"param\", \"opt_state\", "
                        "\"input\", \"label\", \"loss\"";
    return success();
  }
  if (name == SoapDialect::getInitAttrName()) {
    if (auto values = dyn_cast<ElementsAttr>(attr.getValue())) {
      // (Bufferization turns the argument into a memref of the same shape.)
      auto shaped = dyn_cast_or_null<ShapedType>(type);
      auto valuesType = cast<ShapedType>(values.getType());
      if (shaped && (shaped.getShape() != valuesType.getShape() ||
                     shaped.getElementType() != valuesType.getElementType()))
        return error() << " has initial values of type " << values.getType()
                       << " but the " << what << " is " << type;
      return success();
    }
    auto init = dyn_cast<StringAttr>(attr.getValue());
    if (!init)
      return error() << " must be a string or an elements attribute";
    StringRef text = init.getValue();
    if (text == "zeros" || text == "ones" || text == "fan-in")
      return success();
    uint64_t fanIn = 0;
    if (text.consume_front("fan-in:") && !text.getAsInteger(10, fanIn) &&
        fanIn > 0)
      return success();
    return error() << " must be \"zeros\", \"ones\", \"fan-in\", "
                      "\"fan-in:N\" (N > 0) or initial values, not \""
                   << init.getValue() << "\"";
  }
  // soap.range
  auto range = dyn_cast<IntegerAttr>(attr.getValue());
  if (!range || range.getInt() < 1)
    return error() << " must be a positive integer";
  auto shaped = dyn_cast_or_null<ShapedType>(type);
  if (shaped && !shaped.getElementType().isInteger())
    return error() << " needs an integer tensor, not " << type;
  return success();
}

/// soap.shard on argument or result `index` of type `type`.
static LogicalResult verifyShardAttribute(Operation *op, const char *what,
                                          unsigned index, Type type,
                                          NamedAttribute attr) {
  auto error = [&]() {
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << what << " " << index;
  };
  auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
  auto global =
      dict ? dyn_cast_or_null<DenseI64ArrayAttr>(dict.get("global_shape"))
           : nullptr;
  auto offsets = dict ? dyn_cast_or_null<DenseI64ArrayAttr>(dict.get("offsets"))
                      : nullptr;
  auto holders =
      dict ? dyn_cast_or_null<DenseI64ArrayAttr>(dict.get("holders")) : nullptr;
  if (!global || !offsets ||
      dict.size() != (dict.get("holders") ? 3u : 2u) ||
      (dict.get("holders") && !holders))
    return error() << " must be {global_shape = array<i64: ...>, offsets = "
                      "array<i64: ...>} with an optional holders = "
                      "array<i64: ...>";
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  if (!tensor)
    return success(); // a declaration's type is checked where it has one
  int64_t rank = tensor.getRank();
  if (static_cast<int64_t>(global.size()) != rank)
    return error() << ": global_shape has " << global.size()
                   << " dimensions but the value has " << rank;
  if (rank == 0 || offsets.size() == 0 ||
      static_cast<int64_t>(offsets.size()) % rank != 0)
    return error() << ": offsets must hold " << rank
                   << " numbers per device";
  for (size_t i = 0; i < offsets.size(); ++i) {
    int64_t dim = static_cast<int64_t>(i) % rank;
    if (offsets[i] < 0 ||
        offsets[i] + tensor.getDimSize(dim) > global[dim])
      return error() << ": the shard at offset " << offsets[i]
                     << " of dimension " << dim << " does not fit in "
                     << global[dim];
  }
  return success();
}

LogicalResult SoapDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getConfigAttrName()) {
    auto config = dyn_cast<ConfigAttr>(attr.getValue());
    if (!config)
      return op->emitError()
             << "'" << name << "' must be a #soap.config attribute";
    return verifyConfigOnOp(op, config);
  }
  if (name == getReplicatedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || op->hasAttr(getConfigAttrName()))
      return op->emitError() << "'" << name
                             << "' must be a unit attribute on an op without "
                                "a #soap.config";
    return success();
  }
  if (name == getTransposedConfigAttrName()) {
    // The forward's config on its input gradient: a 2-D convolution's
    // (7 loops), or a windowed generic's over the same loops.
    auto config = dyn_cast<ConfigAttr>(attr.getValue());
    bool conv = isa<linalg::Conv2DNchwFchwOp>(op) && config &&
                config.getDegrees().size() == 7;
    auto generic = dyn_cast<linalg::GenericOp>(op);
    bool windowed = generic && config &&
                    config.getDegrees().size() == generic.getNumLoops();
    if (!conv && !windowed)
      return op->emitError()
             << "'" << name
             << "' must be a #soap.config over the forward's loops on a "
                "linalg.conv_2d_nchw_fchw (7 degrees) or a linalg.generic "
                "(one per loop)";
    return success();
  }
  if (name == getScatterConfigAttrName()) {
    if (!isa<ConfigAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a #soap.config attribute";
    return success();
  }
  if (name == getNumDevicesAttrName()) {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!count || count.getInt() < 1)
      return op->emitError() << "'" << name << "' must be a positive integer";
    return success();
  }
  if (name == getTargetAttrName()) {
    auto target = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !target ||
        (target.getValue() != "cpu" && target.getValue() != "gpu"))
      return op->emitError() << "'" << name
                             << "' must be \"cpu\" or \"gpu\" on a module";
    return success();
  }
  if (name == getLayoutAttrName()) {
    auto layout = dyn_cast<LayoutAttr>(attr.getValue());
    if (!layout)
      return op->emitError()
             << "'" << name << "' must be a #soap.layout attribute";
    return verifyLayoutOnOp(op, layout);
  }
  return op->emitError() << "unknown SOAP attribute '" << name << "'";
}

LogicalResult SoapDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getParamAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' is a unit attribute and takes no value";
    return success();
  }
  if (name == getBatchDimAttrName()) {
    auto dim = dyn_cast<IntegerAttr>(attr.getValue());
    if (!dim)
      return op->emitError() << "'" << name << "' must be an integer";
    Region &region = op->getRegion(regionIndex);
    if (region.empty())
      return success();
    auto type = dyn_cast<RankedTensorType>(
        region.front().getArgument(argIndex).getType());
    if (!type)
      return op->emitError() << "'" << name << "' on argument " << argIndex
                             << " needs a ranked tensor argument";
    if (dim.getInt() < 0 || dim.getInt() >= type.getRank())
      return op->emitError()
             << "'" << name << "' " << dim.getInt() << " of argument "
             << argIndex << " is out of range for rank " << type.getRank();
    return success();
  }
  if (name == getNameAttrName() || name == getRoleAttrName() ||
      name == getInitAttrName() || name == getRangeAttrName()) {
    Type type;
    Region &region = op->getRegion(regionIndex);
    if (!region.empty())
      type = region.front().getArgument(argIndex).getType();
    // The initial values of a shard are the whole tensor's.
    auto function = dyn_cast<FunctionOpInterface>(op);
    auto tensor = dyn_cast_or_null<ShapedType>(type);
    if (function && tensor && name == getInitAttrName())
      if (auto shard = function.getArgAttrOfType<DictionaryAttr>(
              argIndex, getShardAttrName()))
        if (auto global =
                dyn_cast_or_null<DenseI64ArrayAttr>(shard.get("global_shape")))
          type = RankedTensorType::get(global.asArrayRef(),
                                       tensor.getElementType());
    return verifyStepAttribute(op, "argument", argIndex, type, attr);
  }
  if (name == getShardAttrName()) {
    Type type;
    Region &region = op->getRegion(regionIndex);
    if (!region.empty())
      type = region.front().getArgument(argIndex).getType();
    return verifyShardAttribute(op, "argument", argIndex, type, attr);
  }
  return op->emitError() << "unknown SOAP argument attribute '" << name << "'";
}

LogicalResult SoapDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getNameAttrName() || name == getRoleAttrName()) {
    Type type;
    if (auto function = dyn_cast<FunctionOpInterface>(op))
      if (resultIndex < function.getNumResults())
        type = function.getResultTypes()[resultIndex];
    return verifyStepAttribute(op, "result", resultIndex, type, attr);
  }
  if (name == getShardAttrName()) {
    Type type;
    if (auto function = dyn_cast<FunctionOpInterface>(op))
      if (resultIndex < function.getNumResults())
        type = function.getResultTypes()[resultIndex];
    return verifyShardAttribute(op, "result", resultIndex, type, attr);
  }
  return op->emitError() << "unknown SOAP result attribute '" << name << "'";
}
