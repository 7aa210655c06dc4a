//===- ConvolutionCalls.cpp - convolutions and poolings as runtime calls -===//
//
// After bufferization, 2-D convolutions (conv2dRoles: any layout, plain,
// grouped or depthwise) become calls of libsoaprt's oneDNN/cuDNN kernels:
// on the CPU an input gradient whose image is zero but at a strided grid
// of points runs as a backward-data convolution of the points
// (spreadImage), and a filter that only a relayout copy made is read from
// the copy's source (relaidFilter). On the GPU, NCHW poolings become cuDNN
// calls.
//
//===----------------------------------------------------------------------===//

#include "KernelCallBuilders.h"
#include "soap/support/LinearAffine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace soap::codegen {

/// Whether `op`'s body adds the product of its two inputs to the output
/// (a convolution, not a pooling that also has the interface).
static bool multipliesAndAdds(linalg::LinalgOp op) {
  return linalg::detail::isContractionBody(
      *op.getBlock(), [](Operation *first, Operation *second) {
        return (isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second)) ||
               (isa<arith::MulIOp>(first) && isa<arith::AddIOp>(second));
      });
}

std::optional<Conv2dRoles> conv2dRoles(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !linalg::isaConvolutionOpInterface(op) || !multipliesAndAdds(op))
    return std::nullopt;
  FailureOr<linalg::ConvolutionDimensions> dims =
      linalg::inferConvolutionDims(op);
  if (failed(dims) || dims->batch.size() > 1 ||
      dims->outputChannel.size() > 1 || dims->inputChannel.size() > 1 ||
      dims->depth.size() > 1 || dims->outputImage.size() != 2 ||
      dims->filterLoop.size() != 2)
    return std::nullopt;
  auto only = [](ArrayRef<unsigned> loops) -> std::optional<unsigned> {
    if (loops.empty())
      return std::nullopt;
    return loops.front();
  };
  Conv2dRoles roles;
  roles.batch = only(dims->batch);
  roles.group = only(dims->depth);
  roles.inputChannel = only(dims->inputChannel);
  roles.outputChannel = only(dims->outputChannel);
  // Every loop has a role.
  if (op.getNumLoops() != 4 + dims->batch.size() + dims->depth.size() +
                              dims->inputChannel.size() +
                              dims->outputChannel.size())
    return std::nullopt;
  // Where a plain loop is in `map`'s results.
  auto position = [](AffineMap map, unsigned loop) -> std::optional<unsigned> {
    for (auto [i, expr] : llvm::enumerate(map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        if (dim.getPosition() == loop)
          return i;
    return std::nullopt;
  };
  AffineMap image = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap filter = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap output = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // The image's two windowed results, in the order they appear: each is
  // stride * (output position) + dilation * (window offset).
  SmallVector<unsigned> windowed;
  for (auto [i, expr] : llvm::enumerate(image.getResults())) {
    if (isa<AffineDimExpr>(expr))
      continue;
    std::optional<LinearExpr> linear = linearize(expr);
    if (!linear || linear->terms.size() != 2 || linear->constant != 0)
      return std::nullopt;
    auto [a, aFactor] = linear->terms[0];
    auto [c, cFactor] = linear->terms[1];
    if (llvm::is_contained(dims->filterLoop, a))
      std::swap(a, c), std::swap(aFactor, cFactor);
    if (windowed.size() == 2 || aFactor <= 0 || cFactor <= 0 ||
        !llvm::is_contained(dims->outputImage, a) ||
        !llvm::is_contained(dims->filterLoop, c))
      return std::nullopt;
    roles.outputImage[windowed.size()] = a;
    roles.window[windowed.size()] = c;
    roles.strides[windowed.size()] = aFactor;
    roles.dilations[windowed.size()] = cFactor;
    roles.image[3 + windowed.size()] = i;
    windowed.push_back(i);
  }
  if (windowed.size() != 2)
    return std::nullopt;
  // Each operand reads exactly its roles: `loops` (nullopt: the role is
  // absent) at the positions `places` receives.
  auto place = [&](AffineMap map, ArrayRef<std::optional<unsigned>> loops,
                   MutableArrayRef<std::optional<unsigned>> places,
                   unsigned plain) {
    unsigned present = 0;
    for (auto [loop, where] : llvm::zip(loops, places)) {
      if (!loop)
        continue;
      where = position(map, *loop);
      if (!where)
        return false;
      ++present;
    }
    return map.getNumResults() == present + plain;
  };
  if (!place(image, {roles.batch, roles.group, roles.inputChannel},
             MutableArrayRef(roles.image).take_front(3), 2) ||
      !place(filter,
             {roles.group, roles.outputChannel, roles.inputChannel,
              roles.window[0], roles.window[1]},
             roles.filter, 0) ||
      !place(output,
             {roles.batch, roles.group, roles.outputChannel,
              roles.outputImage[0], roles.outputImage[1]},
             roles.output, 0))
    return std::nullopt;
  return roles;
}

/// Whether `user` reads `buffer` and writes none of it (bufferization
/// shares one zero fill between the uses of a zero tensor).
static bool onlyReads(Operation *user, Value buffer) {
  if (auto copy = dyn_cast<memref::CopyOp>(user))
    return copy.getTarget() != buffer;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user))
    return !llvm::is_contained(linalgOp.getDpsInits(), buffer);
  return false;
}

/// Where a subview with static offsets, sizes and strides lies in the two
/// `spatial` dimensions of its source, when it keeps every other one
/// whole.
static std::optional<SpatialWindow>
spatialWindow(memref::SubViewOp subview, std::array<unsigned, 2> spatial) {
  MemRefType source = subview.getSourceType();
  ArrayRef<int64_t> offsets = subview.getStaticOffsets(),
                    sizes = subview.getStaticSizes(),
                    strides = subview.getStaticStrides();
  if (subview.getType().getRank() != source.getRank() ||
      ShapedType::isDynamicShape(offsets) ||
      ShapedType::isDynamicShape(sizes) || ShapedType::isDynamicShape(strides))
    return std::nullopt;
  SpatialWindow window;
  for (int64_t dim = 0; dim < source.getRank(); ++dim) {
    const auto *k = llvm::find(spatial, static_cast<unsigned>(dim));
    if (k != spatial.end()) {
      if (strides[dim] <= 0 || offsets[dim] < 0)
        return std::nullopt;
      size_t i = k - spatial.begin();
      window.offsets[i] = offsets[dim];
      window.strides[i] = strides[dim];
      window.sizes[i] = sizes[dim];
      continue;
    }
    if (offsets[dim] != 0 || strides[dim] != 1 ||
        sizes[dim] != source.getDimSize(dim))
      return std::nullopt;
  }
  return window;
}

/// Whether `op` writes zero to every element of `buffer`: a linalg.fill
/// with zero, or a linalg.map of no inputs that yields zero (what
/// tensor.pad bufferizes to).
static bool writesZeros(Operation *op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs()[0] == buffer &&
           matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  auto map = dyn_cast<linalg::MapOp>(op);
  if (!map || !map.getInputs().empty() || map.getInit() != buffer)
    return false;
  auto yield = cast<linalg::YieldOp>(map.getMapper().front().getTerminator());
  return matchPattern(yield.getValues().front(), m_AnyZeroFloat());
}

/// Whether no op strictly between `from` and `to` (one block) may write or
/// free `buffer`: allocations, constants, the trace hooks and ops whose
/// declared writes and frees are to buffers that cannot be `buffer`'s
/// memory (`classes`: a free of a buffer that a select or a guard's result
/// may be counts). Anything else counts as a write.
static bool untouchedBetween(Value buffer, Operation *from, Operation *to,
                             AliasClasses &classes) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      StringRef callee = call.getCallee();
      if (callee == "soaprt_op_begin" || callee == "soaprt_op_end")
        continue;
      return false;
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return false;
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect()))
        continue;
      Value written = effect.getValue();
      if (!written || classes.mayAlias(written, buffer))
        return false;
    }
  }
  return true;
}

/// The autodiff's input gradient of a strided or padded window read, a
/// unit-stride convolution of the output's adjoint spread into zeros, as
/// bufferization leaves it: the image is a fresh buffer that a fill with
/// zero writes, then one strided subview of it that differs from it only
/// in the spatial dimensions (what the adjoint is copied into), and that
/// nothing else writes before the convolution (copies of the zeros
/// elsewhere may read it; a guard may yield it or a send read it after the
/// convolution). Then the image is zero outside the subview's points when
/// the convolution reads it. The points are the subview or, when the image
/// is read by nothing else and the adjoint is copied into the subview and
/// left alone until the convolution, the adjoint itself: then the fill,
/// the copy and the image go.
static std::optional<Spread> spreadImage(linalg::LinalgOp op,
                                         const Conv2dRoles &roles,
                                         AliasClasses &classes) {
  auto alloc = op.getDpsInputOperand(0)->get().getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return std::nullopt;
  Operation *fill = nullptr;
  memref::SubViewOp subview;
  SmallVector<Operation *> deallocs;
  bool otherReaders = false;
  Block *block = op->getBlock();
  for (Operation *user : alloc->getUsers()) {
    if (user == op.getOperation())
      continue;
    if (isa<memref::DeallocOp>(user)) {
      deallocs.push_back(user);
      continue;
    }
    // A use after the convolution in its block (a guard's yield, a send to
    // another rank) cannot change what the convolution reads of a buffer
    // allocated afresh in that block; it keeps the image, as a reader does.
    if (onlyReads(user, alloc.getResult()) ||
        (alloc->getBlock() == block && user->getBlock() == block &&
         op->isBeforeInBlock(user))) {
      otherReaders = true;
      continue;
    }
    if (!fill && writesZeros(user, alloc.getResult())) {
      fill = user;
      continue;
    }
    if (auto v = dyn_cast<memref::SubViewOp>(user); v && !subview) {
      subview = v;
      continue;
    }
    return std::nullopt;
  }
  if (!fill || !subview || fill->getBlock() != block ||
      subview->getBlock() != block || !fill->isBeforeInBlock(subview) ||
      !subview->isBeforeInBlock(op))
    return std::nullopt;
  std::optional<SpatialWindow> window =
      spatialWindow(subview, {*roles.image[3], *roles.image[4]});
  if (!window)
    return std::nullopt;
  Spread spread{*window};
  // Points further apart than one need the backward-data convolution,
  // which has unit strides; a padded image takes any.
  if (spread.strides != std::array<int64_t, 2>{1, 1} &&
      roles.strides != std::array<int64_t, 2>{1, 1})
    return std::nullopt;
  spread.points = subview.getResult();
  // The adjoint copied into the subview, read where it is.
  memref::CopyOp copy;
  if (subview->hasOneUse())
    copy = dyn_cast<memref::CopyOp>(*subview->getUsers().begin());
  if (otherReaders || !copy || copy.getTarget() != subview.getResult() ||
      copy->getBlock() != block || !copy->isBeforeInBlock(op) ||
      !untouchedBetween(copy.getSource(), copy, op, classes))
    return spread;
  spread.points = copy.getSource();
  spread.dead = {copy, subview, fill};
  spread.dead.append(deallocs);
  spread.dead.push_back(alloc);
  return spread;
}

static std::optional<RelaidFilter> relaidFilter(linalg::LinalgOp op,
                                                const Conv2dRoles &roles,
                                                AliasClasses &classes) {
  auto alloc = op.getDpsInputOperand(1)->get().getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return std::nullopt;
  RelaidFilter filter;
  SmallVector<Operation *> deallocs;
  for (Operation *user : alloc->getUsers()) {
    if (user == op.getOperation())
      continue;
    if (isa<memref::DeallocOp>(user)) {
      deallocs.push_back(user);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || filter.copy || generic.getDpsInits().front() != alloc)
      return std::nullopt;
    filter.copy = generic;
  }
  if (!filter.copy || filter.copy->getBlock() != op->getBlock() ||
      !filter.copy->isBeforeInBlock(op) ||
      !untouchedBetween(filter.copy.getDpsInputs().front(), filter.copy, op,
                        classes))
    return std::nullopt;
  std::optional<SmallVector<RelayoutRead>> reads = copyRelayout(filter.copy);
  if (!reads)
    return std::nullopt;
  filter.reads = *reads;
  // Only windows may be read backwards, and both together (a window of
  // one reads the same either way).
  auto type = cast<MemRefType>(alloc.getType());
  for (const RelayoutRead &read : filter.reads) {
    bool window =
        read.loop == *roles.filter[3] || read.loop == *roles.filter[4];
    if (read.backwards && !window)
      return std::nullopt;
    filter.backwards |= read.backwards && type.getDimSize(read.loop) > 1;
  }
  if (filter.backwards)
    for (unsigned k : {3u, 4u}) {
      unsigned dim = *roles.filter[k];
      if (type.getDimSize(dim) > 1 &&
          !llvm::any_of(filter.reads, [&](const RelayoutRead &read) {
            return read.loop == dim && read.backwards;
          }))
        return std::nullopt;
    }
  filter.dead = {filter.copy};
  filter.dead.append(deallocs);
  filter.dead.push_back(alloc);
  return filter;
}

/// The filter as its relayout copy (`relaid`) reads the copy's source:
/// per dimension of the filter (`type`), the stride of the source
/// dimension that holds it, negated where it is read backwards, and a
/// pointer to the element the filter's first one is.
static StridedOperand relaidOperand(OpBuilder &b, Location loc,
                                    const RelaidFilter &relaid,
                                    MemRefType type) {
  linalg::GenericOp copy = relaid.copy;
  StridedOperand source = stridedOperand(b, loc, copy.getDpsInputs().front());
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
  };
  StridedOperand result;
  result.strides.resize(type.getRank());
  Value first = constant(0);
  for (auto [p, read] : llvm::enumerate(relaid.reads)) {
    Value stride = source.strides[p];
    if (read.backwards) {
      first = arith::AddIOp::create(
          b, loc, first,
          arith::MulIOp::create(
              b, loc, constant(type.getDimSize(read.loop) - 1), stride));
      stride = arith::SubIOp::create(b, loc, constant(0), stride);
    }
    result.strides[read.loop] = stride;
  }
  result.pointer = LLVM::GEPOp::create(b, loc, source.pointer.getType(),
                                       type.getElementType(), source.pointer,
                                       ValueRange{first});
  return result;
}

/// The autodiff's gradient of a padded image is the spread convolution's
/// whole output, of which only the unpadded part is read: when the output
/// is a fresh buffer that, from the convolution on, only one subview with
/// unit strides reads (whole but in the spatial dimensions, starting at
/// rows and columns the spread's offsets do not pass), the convolution
/// computes just that part. The spread's offsets shrink by its start.
static void interiorOutput(linalg::LinalgOp op, const Conv2dRoles &roles,
                           Spread &spread) {
  auto alloc = op.getDpsInitOperand(0)->get().getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return;
  memref::SubViewOp interior;
  for (Operation *user : alloc->getUsers()) {
    if (user == op.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (user->getBlock() != op->getBlock())
      return;
    // What runs before writes the whole buffer; no view of it lives on.
    if (user->isBeforeInBlock(op)) {
      if (isa<ViewLikeOpInterface>(user))
        return;
      continue;
    }
    auto subview = dyn_cast<memref::SubViewOp>(user);
    if (!subview || interior)
      return;
    interior = subview;
  }
  if (!interior)
    return;
  std::optional<SpatialWindow> window =
      spatialWindow(interior, {*roles.output[3], *roles.output[4]});
  if (!window)
    return;
  for (int k = 0; k < 2; ++k)
    if (window->strides[k] != 1 || window->offsets[k] > spread.offsets[k])
      return;
  // The call writes through the view.
  interior->moveBefore(op);
  spread.interior = interior.getResult();
  spread.interiorStart = window->offsets;
}

Operation *zeroFillBefore(linalg::LinalgOp op, AliasClasses &classes) {
  Value out = op.getDpsInitOperand(0)->get();
  auto touches = [&](Operation *other) {
    WalkResult result = other->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (isBuffer(operand) && classes.mayAlias(operand, out))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return result.wasInterrupted();
  };
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (writesZeros(prev, out))
      return prev;
    if (touches(prev))
      return nullptr;
  }
  return nullptr;
}

/// A unit-stride convolution's whole image as a spread of every point (for
/// the spread kernel, which runs a filter read backwards without a copy).
static Spread wholeImage(linalg::LinalgOp op, const Conv2dRoles &roles) {
  Value image = op.getDpsInputOperand(0)->get();
  auto type = cast<MemRefType>(image.getType());
  Spread spread{
      {{0, 0},
       {1, 1},
       {type.getDimSize(*roles.image[3]), type.getDimSize(*roles.image[4])}}};
  spread.points = image;
  return spread;
}

/// A 2-D convolution (conv2dRoles) as a call of the runtime's kernel, each
/// operand's dimensions passed in the runtime's order through their
/// strides (0 for a role the operand lacks, whose size is 1; a filter read
/// backwards along a window gets a pointer to its last element there and
/// a negated stride): soaprt_conv2d_nchw_fchw_* (n, c, h, w, f, kh, kw, oh,
/// ow, strides, dilations, then in[n,c,h,w], filter[f,c,kh,kw],
/// out[n,f,oh,ow]) or, with groups, soaprt_conv2d_grouped_* (g first, then
/// the same sizes per group and in[n,g,c,h,w], filter[g,f,c,kh,kw],
/// out[n,g,f,oh,ow]), or, for a spread image (spreadImage),
/// soaprt_conv2d_spread_* (the grouped form with the spread's offsets,
/// strides and sizes after the dilations, and the points [n,g,c,a,b] in
/// place of the image).
bool replaceConvolution(linalg::LinalgOp op, const Conv2dRoles &roles,
                        const std::string &suffix, const CallTarget &target,
                        const std::optional<Spread> &spread,
                        const std::optional<RelaidFilter> &relaid,
                        bool overwrite, std::pair<int64_t, int64_t> blocks) {
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  auto size = [&](std::optional<unsigned> loop) {
    return loop ? loops[*loop] : int64_t{1};
  };
  Value image = op.getDpsInputOperand(0)->get();
  auto imageType = cast<MemRefType>(image.getType());
  // The spread kernel takes the grouped form (a group of 1 without one).
  bool grouped = roles.group.has_value() || spread.has_value();
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
  };
  SmallVector<Value> args;
  if (target.math)
    args.push_back(constant(*target.math));
  if (grouped)
    args.push_back(constant(size(roles.group)));
  // An interior output (interiorOutput) is the output of the image from
  // its start on.
  Value output = op.getDpsInitOperand(0)->get();
  std::array<int64_t, 2> start = {0, 0};
  if (spread && spread->interior) {
    output = spread->interior;
    start = spread->interiorStart;
  }
  auto outputType = cast<MemRefType>(output.getType());
  for (int64_t v :
       {size(roles.batch), size(roles.inputChannel),
        imageType.getDimSize(*roles.image[3]) - start[0],
        imageType.getDimSize(*roles.image[4]) - start[1],
        size(roles.outputChannel), loops[roles.window[0]],
        loops[roles.window[1]], outputType.getDimSize(*roles.output[3]),
        outputType.getDimSize(*roles.output[4]), roles.strides[0],
        roles.strides[1], roles.dilations[0], roles.dilations[1]})
    args.push_back(constant(v));
  if (spread)
    for (int64_t v : {spread->offsets[0] - start[0],
                      spread->offsets[1] - start[1], spread->strides[0],
                      spread->strides[1], spread->sizes[0], spread->sizes[1]})
      args.push_back(constant(v));
  // The group is the second role of the image and the output, the first
  // of the filter.
  auto add = [&](const StridedOperand &strided,
                 ArrayRef<std::optional<unsigned>> results,
                 unsigned groupRole) {
    args.push_back(strided.pointer);
    Value zero;
    for (auto [role, result] : llvm::enumerate(results)) {
      if (role == groupRole && !grouped)
        continue;
      if (result) {
        args.push_back(strided.strides[*result]);
        continue;
      }
      if (!zero)
        zero = constant(0);
      args.push_back(zero);
    }
  };
  // The points keep the image's order of dimensions.
  add(stridedOperand(b, loc, spread ? spread->points : image), roles.image, 1);
  Value filter = op.getDpsInputOperand(1)->get();
  add(relaid
          ? relaidOperand(b, loc, *relaid, cast<MemRefType>(filter.getType()))
          : stridedOperand(b, loc, filter),
      roles.filter, 0);
  add(stridedOperand(b, loc, output), roles.output, 1);
  // libsoaprt's CPU convolutions take whether to add to the output, and
  // the blocks of the filter's and the output's blocked weights.
  if (!target.math) {
    args.push_back(constant(overwrite ? 0 : 1));
    args.push_back(constant(blocks.first));
    args.push_back(constant(blocks.second));
  }
  func::FuncOp callee =
      declareRuntimeFunction(op->getParentOfType<ModuleOp>(),
                             target.prefix +
                                 (spread    ? "conv2d_spread_"
                                  : grouped ? "conv2d_grouped_"
                                            : "conv2d_nchw_fchw_") +
                                 suffix,
                             ValueRange(args).getTypes());
  func::CallOp::create(b, loc, callee, args);
  op->erase();
  return true;
}

/// linalg.pooling_nchw_max/sum (no dilation) as a call of
/// soaprt_gpu_pool2d_nchw_f32(kind, sizes..., in, strides..., out,
/// strides...): kind 0 is max, 1 is sum.
bool replacePooling(linalg::LinalgOp op, int64_t kind) {
  DenseIntElementsAttr stridesAttr =
      op->getAttrOfType<DenseIntElementsAttr>("strides");
  DenseIntElementsAttr dilationsAttr =
      op->getAttrOfType<DenseIntElementsAttr>("dilations");
  if (!stridesAttr || !dilationsAttr)
    return false;
  SmallVector<int64_t> strides(stridesAttr.getValues<int64_t>());
  SmallVector<int64_t> dilations(dilationsAttr.getValues<int64_t>());
  if (dilations != SmallVector<int64_t>{1, 1})
    return false;
  Value input = op.getDpsInputOperand(0)->get();
  Value window = op.getDpsInputOperand(1)->get();
  Value output = op.getDpsInitOperand(0)->get();
  auto in = cast<MemRefType>(input.getType());
  auto win = cast<MemRefType>(window.getType());
  auto out = cast<MemRefType>(output.getType());
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> args;
  for (int64_t v : {kind, in.getDimSize(0), in.getDimSize(1), in.getDimSize(2),
                    in.getDimSize(3), win.getDimSize(0), win.getDimSize(1),
                    out.getDimSize(2), out.getDimSize(3), strides[0],
                    strides[1], dilations[0], dilations[1]})
    args.push_back(arith::ConstantIntOp::create(b, loc, v, 64));
  for (Value operand : {input, output}) {
    StridedOperand strided = stridedOperand(b, loc, operand);
    args.push_back(strided.pointer);
    args.append(strided.strides);
  }
  func::FuncOp callee = declareRuntimeFunction(op->getParentOfType<ModuleOp>(),
                                               "soaprt_gpu_pool2d_nchw_f32",
                                               ValueRange(args).getTypes());
  func::CallOp::create(b, loc, callee, args);
  op->erase();
  return true;
}

PlannedConvolution planConvolution(linalg::LinalgOp op,
                                   const Conv2dRoles &roles,
                                   const std::string &suffix, bool gpu,
                                   AliasClasses &classes) {
  PlannedConvolution planned{op,           roles,        suffix,
                             std::nullopt, std::nullopt, nullptr};
  if (gpu)
    return planned;
  bool unitStrides = roles.strides == std::array<int64_t, 2>{1, 1};
  planned.zeroFill = zeroFillBefore(op, classes);
  planned.relaid = relaidFilter(op, roles, classes);
  if (suffix == "f32")
    planned.spread = spreadImage(op, roles, classes);
  // A flipped filter is read without its copy only by the spread kernel's
  // backward-data convolution, which reads it forwards.
  if (planned.relaid && planned.relaid->backwards) {
    if (!planned.spread && unitStrides && suffix == "f32")
      planned.spread = wholeImage(op, roles);
    if (!planned.spread || !unitStrides)
      planned.relaid.reset();
  }
  if (planned.spread && unitStrides)
    interiorOutput(op, roles, *planned.spread);
  return planned;
}

} // namespace soap::codegen
