//===- RuntimeInterface.cpp - the C ABI the driver reads -----------------===//
//
// describeEntry reads the entry's soap.* attributes (docs/train-step.md);
// emitRuntimeInterface writes them into the module as soap_model_info (a
// JSON string), the embedded initial values as constant globals listed by
// soap_init_data, and soap_train_step_packed, which unpacks an array of
// buffer pointers into the entry's bare-pointer arguments.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace soap::codegen {

static std::string dtypeName(Type type) {
  if (type.isIndex())
    return "i64";
  if (type.isBF16())
    return "bf16";
  if (auto f = dyn_cast<FloatType>(type))
    return "f" + std::to_string(f.getWidth());
  if (auto i = dyn_cast<IntegerType>(type))
    return "i" + std::to_string(i.getWidth());
  return "";
}

static LogicalResult describe(func::FuncOp entry, Type type,
                              DictionaryAttr attrs, const std::string &what,
                              const std::string &defaultName,
                              TensorDescription &out) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return entry.emitError() << what << " has type " << type
                             << "; the CPU lowering needs a statically "
                                "shaped tensor";
  out.dtype = dtypeName(tensor.getElementType());
  static const char *known[] = {"f32", "f64", "f16", "bf16", "i1",
                                "i8",  "i16", "i32", "i64"};
  if (!llvm::is_contained(known, out.dtype))
    return entry.emitError() << what << " has element type "
                             << tensor.getElementType()
                             << ", which the runtime does not handle";
  out.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  auto str = [&](StringRef key) -> std::string {
    if (!attrs)
      return "";
    if (auto s = attrs.getAs<StringAttr>(key))
      return s.str();
    return "";
  };
  out.role = str("soap.role");
  out.name = str("soap.name");
  if (out.role.empty())
    out.role = "input";
  if (out.name.empty())
    out.name = defaultName;
  if (!attrs)
    return success();
  if (auto range = attrs.getAs<IntegerAttr>("soap.range"))
    out.range = range.getInt();
  ArrayRef<int64_t> wholeShape = tensor.getShape();
  if (auto shard = attrs.getAs<DictionaryAttr>("soap.shard")) {
    auto global = shard.getAs<DenseI64ArrayAttr>("global_shape");
    auto offsets = shard.getAs<DenseI64ArrayAttr>("offsets");
    if (!global || !offsets)
      return entry.emitError() << what << " has a malformed soap.shard";
    out.globalShape.assign(global.asArrayRef().begin(),
                           global.asArrayRef().end());
    out.shardOffsets.assign(offsets.asArrayRef().begin(),
                            offsets.asArrayRef().end());
    if (auto holders = shard.getAs<DenseI64ArrayAttr>("holders"))
      out.shardHolders.assign(holders.asArrayRef().begin(),
                              holders.asArrayRef().end());
    wholeShape = global.asArrayRef();
  }
  Attribute init = attrs.get("soap.init");
  if (auto s = dyn_cast_or_null<StringAttr>(init)) {
    out.init = s.str();
    bool explicitFanIn = StringRef(out.init).starts_with("fan-in:");
    if (out.init != "fan-in" && out.init != "zeros" && out.init != "ones" &&
        !explicitFanIn)
      return entry.emitError()
             << what << " has soap.init = \"" << out.init
             << "\"; expected \"fan-in\", \"fan-in:N\", \"zeros\", "
                "\"ones\" or values";
  } else if (auto values = dyn_cast_or_null<ElementsAttr>(init)) {
    if (values.getShapedType().getShape() != wholeShape ||
        values.getElementType() != tensor.getElementType())
      return entry.emitError()
             << what << " has initial values of type "
             << values.getShapedType() << ", not its own type "
             << RankedTensorType::get(wholeShape, tensor.getElementType());
    out.init = "data";
    out.initValues = values;
  } else if (init) {
    return entry.emitError() << what << " has a soap.init that is neither a "
                                        "string nor an elements attribute";
  } else if (out.role == "param") {
    out.init = "fan-in";
  }
  return success();
}

LogicalResult describeEntry(func::FuncOp entry, ModelDescription &d) {
  d.entry = entry.getSymName().str();
  FunctionType type = entry.getFunctionType();
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    TensorDescription t;
    if (failed(describe(entry, type.getInput(i), entry.getArgAttrDict(i),
                        "argument " + std::to_string(i),
                        "arg" + std::to_string(i), t)))
      return failure();
    d.args.push_back(std::move(t));
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    TensorDescription t;
    if (failed(describe(entry, type.getResult(i), entry.getResultAttrDict(i),
                        "result " + std::to_string(i),
                        "result" + std::to_string(i), t)))
      return failure();
    t.init.clear();
    d.results.push_back(std::move(t));
  }
  return success();
}

static llvm::json::Value toJson(const TensorDescription &t) {
  llvm::json::Object o{{"role", t.role},
                       {"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", llvm::json::Array(t.shape)}};
  if (!t.init.empty())
    o["init"] = t.init;
  if (t.range >= 0)
    o["range"] = t.range;
  if (t.block > 0)
    o["block"] = t.block;
  if (t.inPlace)
    o["in_place"] = true;
  if (!t.globalShape.empty()) {
    o["global_shape"] = llvm::json::Array(t.globalShape);
    o["shard_offsets"] = llvm::json::Array(t.shardOffsets);
    if (!t.shardHolders.empty())
      o["shard_holders"] = llvm::json::Array(t.shardHolders);
  }
  return o;
}

static std::string modelInfoJson(const ModelDescription &d) {
  llvm::json::Array args, results, ops;
  for (const TensorDescription &t : d.args)
    args.push_back(toJson(t));
  for (const TensorDescription &t : d.results)
    results.push_back(toJson(t));
  for (const std::string &op : d.ops)
    ops.push_back(op);
  llvm::json::Object root{{"entry", d.entry},
                          {"args", std::move(args)},
                          {"results", std::move(results)},
                          {"ops", std::move(ops)},
                          {"num_devices", d.numDevices}};
  if (d.target != "cpu")
    root["target"] = d.target;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(root));
  return s;
}

/// The initial values as a flat dense attribute an LLVM global can hold.
static DenseElementsAttr flatValues(ElementsAttr values) {
  ShapedType type = values.getShapedType();
  auto flat = RankedTensorType::get({type.getNumElements()},
                                    type.getElementType());
  if (auto dense = dyn_cast<DenseElementsAttr>(values))
    return dense.reshape(flat);
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(values)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return {};
    ArrayRef<char> data = blob->getData();
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(flat, data, splat))
      return {};
    return DenseElementsAttr::getFromRawBuffer(flat, data);
  }
  return {};
}

LogicalResult emitRuntimeInterface(ModuleOp module, StringRef function,
                                   const ModelDescription &d) {
  MLIRContext *context = module.getContext();
  OpBuilder b(context);
  Location loc = module.getLoc();
  b.setInsertionPointToEnd(module.getBody());
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i8 = IntegerType::get(context, 8);

  // soap_model_info: the description as a NUL-terminated string.
  std::string json = modelInfoJson(d);
  json.push_back('\0');
  LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(i8, json.size()),
                         /*isConstant=*/true, LLVM::Linkage::External,
                         "soap_model_info", b.getStringAttr(json));

  // The embedded initial values, and soap_init_data pointing at them.
  SmallVector<std::string> initGlobals;
  for (size_t i = 0; i < d.args.size(); ++i) {
    initGlobals.emplace_back();
    if (!d.args[i].initValues)
      continue;
    DenseElementsAttr values = flatValues(d.args[i].initValues);
    if (!values)
      return module.emitError() << "cannot read the initial values of '"
                                << d.args[i].name << "'";
    std::string name = "soap_init_" + std::to_string(i);
    Type element = values.getElementType();
    if (element.isIndex())
      element = b.getI64Type();
    LLVM::GlobalOp::create(
        b, loc, LLVM::LLVMArrayType::get(element, values.getNumElements()),
        /*isConstant=*/true, LLVM::Linkage::Internal, name, values,
        /*alignment=*/64);
    initGlobals.back() = name;
  }
  auto tableType =
      LLVM::LLVMArrayType::get(ptrType, std::max<size_t>(d.args.size(), 1));
  auto table =
      LLVM::GlobalOp::create(b, loc, tableType, /*isConstant=*/true,
                             LLVM::Linkage::External, "soap_init_data",
                             Attribute());
  {
    OpBuilder::InsertionGuard guard(b);
    b.createBlock(&table.getInitializerRegion());
    Value array = LLVM::UndefOp::create(b, loc, tableType);
    for (size_t i = 0; i < std::max<size_t>(d.args.size(), 1); ++i) {
      Value pointer =
          i < initGlobals.size() && !initGlobals[i].empty()
              ? Value(LLVM::AddressOfOp::create(b, loc, ptrType,
                                                initGlobals[i]))
              : Value(LLVM::ZeroOp::create(b, loc, ptrType));
      array = LLVM::InsertValueOp::create(b, loc, array, pointer,
                                          ArrayRef<int64_t>{(int64_t)i});
    }
    LLVM::ReturnOp::create(b, loc, array);
  }

  // soap_train_step_packed(void **buffers).
  auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(function);
  if (!callee)
    return module.emitError() << "internal: the lowered entry '" << function
                              << "' is missing";
  size_t expected = d.args.size() + d.results.size();
  if (callee.getNumArguments() != expected ||
      !llvm::all_of(callee.getArgumentTypes(),
                    [](Type t) { return isa<LLVM::LLVMPointerType>(t); }))
    return callee.emitError()
           << "internal: the lowered entry should take " << expected
           << " buffer pointers";
  auto packedType = LLVM::LLVMFunctionType::get(
      LLVM::LLVMVoidType::get(context), {ptrType});
  auto packed = LLVM::LLVMFuncOp::create(b, loc, "soap_train_step_packed",
                                         packedType);
  Block *entry = packed.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> pointers;
  for (size_t i = 0; i < expected; ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType,
                                     entry->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{(int32_t)i});
    pointers.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
  }
  LLVM::CallOp::create(b, loc, callee, pointers);
  LLVM::ReturnOp::create(b, loc, ValueRange());
  return success();
}

} // namespace soap::codegen
