//===- PartitionableInterfaceTest.cpp - the interface through C++ ---------===//
//
// What an MLIR compiler embedding SOAP sees: parse IR, ask ops for their
// loops, maps, kinds and shard costs.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/DimensionKinds.h"
#include "soap/Dialect/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace soap;

namespace {

class PartitionableTest : public ::testing::Test {
protected:
  PartitionableTest() {
    DialectRegistry registry;
    registry.insert<func::FuncDialect, arith::ArithDialect,
                    cf::ControlFlowDialect>();
    registerSoapDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(StringRef source) {
    return parseSourceString<ModuleOp>(source, &context);
  }

  /// The `index`-th partitionable op of the module.
  PartitionableOpInterface nth(ModuleOp module, unsigned index) {
    PartitionableOpInterface found;
    unsigned seen = 0;
    module.walk([&](PartitionableOpInterface op) {
      if (seen++ == index)
        found = op;
    });
    return found;
  }

  MLIRContext context;
};

constexpr const char *kConv = R"mlir(
func.func @conv(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x3x3xf32> {soap.param},
                %o: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}
         ins(%x, %w : tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>)
         outs(%o : tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}
)mlir";

TEST_F(PartitionableTest, ConvolutionLoopsNamesAndKinds) {
  OwningOpRef<ModuleOp> module = parse(kConv);
  ASSERT_TRUE(module);
  PartitionableOpInterface conv = nth(*module, 0);
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv.getLoopSizes(),
            (SmallVector<int64_t>{2, 8, 4, 4, 3, 3, 3}));
  EXPECT_EQ(conv.getLoopNames(),
            (SmallVector<std::string>{"n", "f", "oh", "ow", "c", "kh", "kw"}));
  DimensionKindAnalysis analysis(module->getOperation());
  EXPECT_EQ(analysis.getLoopKinds(conv),
            (SmallVector<DimKind>{DimKind::Sample, DimKind::Parameter,
                                  DimKind::Attribute, DimKind::Attribute,
                                  DimKind::Reduction, DimKind::Reduction,
                                  DimKind::Reduction}));
}

/// torch-mlir's embedding: a generic over [tokens, width] reading
/// table[ids[n], d] with tensor.extract, with its bounds assertion.
constexpr const char *kGather = R"mlir(
func.func @embed(%table: tensor<30x8xf32> {soap.param}, %ids: tensor<6xi64>)
    -> tensor<6x8xf32> {
  %c30 = arith.constant 30 : index
  %e = tensor.empty() : tensor<6x8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 1 : index
    %ok = arith.cmpi slt, %r, %c30 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %table[%r, %c] : tensor<30x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}
)mlir";

TEST_F(PartitionableTest, GatherHasALookupLoopOverTheTableRows) {
  OwningOpRef<ModuleOp> module = parse(kGather);
  ASSERT_TRUE(module);
  PartitionableOpInterface gather = nth(*module, 1); // after tensor.empty
  ASSERT_TRUE(gather);
  EXPECT_EQ(gather.getLoopSizes(), (SmallVector<int64_t>{6, 8, 30}));
  EXPECT_EQ(gather.getLoopNames(), (SmallVector<std::string>{"d0", "d1", "v"}));
  EXPECT_EQ(gather.getLookupLoops(), (SmallVector<bool>{false, false, true}));
  DimensionKindAnalysis analysis(module->getOperation());
  // The width indexes the table (a parameter); the rows are summed over.
  EXPECT_EQ(analysis.getLoopKinds(gather),
            (SmallVector<DimKind>{DimKind::Sample, DimKind::Parameter,
                                  DimKind::Reduction}));
  SmallVector<OperandAccess> accesses = gather.getOperandAccesses();
  ASSERT_EQ(accesses.size(), 4u); // ids, init, table, result
  EXPECT_EQ(accesses[2].map.getNumDims(), 3u);
  EXPECT_EQ(toIndexExpr(accesses[2].map.getResult(0)).terms[0].loop, 2u);
  EXPECT_EQ(toIndexExpr(accesses[2].map.getResult(1)).terms[0].loop, 1u);
  EXPECT_EQ(accesses[3].role, AccessRole::Write);
  // Moves its rows: ids (8 B), 6 x 8 table elements, 6 x 8 results; half
  // the rows on a task move as much.
  EXPECT_DOUBLE_EQ(gather.getFlopsPerIteration(), 0);
  ShardCost whole = gather.getShardCost({6, 8, 30});
  EXPECT_DOUBLE_EQ(whole.bytesRead, 8.0 * 6 + 4.0 * 6 * 8);
  EXPECT_DOUBLE_EQ(whole.bytesWritten, 4.0 * 6 * 8);
  EXPECT_DOUBLE_EQ(gather.getShardCost({6, 8, 15}).bytesRead, whole.bytesRead);
}

TEST_F(PartitionableTest, ConvolutionInputMapIsNotProjected) {
  OwningOpRef<ModuleOp> module = parse(kConv);
  ASSERT_TRUE(module);
  SmallVector<OperandAccess> accesses = nth(*module, 0).getOperandAccesses();
  ASSERT_EQ(accesses.size(), 4u); // input, filter, init, result
  AffineMap input = accesses[0].map;
  EXPECT_FALSE(input.isProjectedPermutation());
  // Row index of the input: oh * 2 + kh.
  IndexExpr row = toIndexExpr(input.getResult(2));
  ASSERT_TRUE(row.isLinear);
  ASSERT_EQ(row.terms.size(), 2u);
  EXPECT_EQ(outermostLoop(row), 2u); // oh, coefficient 2
  EXPECT_EQ(accesses[3].role, AccessRole::Write);
}

TEST_F(PartitionableTest, ConvolutionShardCost) {
  OwningOpRef<ModuleOp> module = parse(kConv);
  ASSERT_TRUE(module);
  PartitionableOpInterface conv = nth(*module, 0);
  // Whole op: 2 * (2*8*4*4) * (3*3*3) FLOPs; the input is read entirely
  // except the last row and column (rows 0..8 of 10).
  ShardCost whole = conv.getShardCost({2, 8, 4, 4, 3, 3, 3});
  EXPECT_DOUBLE_EQ(whole.flops, 2.0 * 2 * 8 * 4 * 4 * 27);
  double input = 2 * 3 * 9 * 9, filter = 8 * 27, output = 2 * 8 * 4 * 4;
  EXPECT_DOUBLE_EQ(whole.bytesRead, 4 * (input + filter + output));
  EXPECT_DOUBLE_EQ(whole.bytesWritten, 4 * output);
  // Half of the output rows (oh = 2): input rows 0..4, 5 of them.
  ShardCost half = conv.getShardCost({2, 8, 2, 4, 3, 3, 3});
  EXPECT_DOUBLE_EQ(half.flops, whole.flops / 2);
  EXPECT_DOUBLE_EQ(half.bytesRead,
                   4 * (2 * 3 * 5 * 9 + filter + output / 2));
}

TEST_F(PartitionableTest, BroadcastBiasInitKeepsBatch) {
  // The torch-mlir pattern: the bias is broadcast into the matmul's init.
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param},
                  %b: tensor<8xf32> {soap.param}) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<16x8xf32>
  %bb = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<16x8xf32>)
          dimensions = [0]
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>)
                     outs(%bb : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
)mlir");
  ASSERT_TRUE(module);
  DimensionKindAnalysis analysis(module->getOperation());
  PartitionableOpInterface broadcast = nth(*module, 1);
  PartitionableOpInterface matmul = nth(*module, 2);
  EXPECT_TRUE(analysis.isParameter(broadcast->getResult(0)));
  EXPECT_EQ(analysis.getLoopKinds(broadcast),
            (SmallVector<DimKind>{DimKind::Sample, DimKind::Parameter}));
  EXPECT_EQ(analysis.getLoopKinds(matmul),
            (SmallVector<DimKind>{DimKind::Sample, DimKind::Parameter,
                                  DimKind::Reduction}));
  EXPECT_FALSE(analysis.isParameter(matmul->getResult(0)));
  EXPECT_TRUE(analysis.getSampleDims(matmul->getResult(0)).test(0));
}

TEST_F(PartitionableTest, CollapseMapIsLinear) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @flatten(%x: tensor<4x6x8xf32>) -> tensor<4x48xf32> {
  %0 = tensor.collapse_shape %x [[0], [1, 2]] : tensor<4x6x8xf32> into tensor<4x48xf32>
  return %0 : tensor<4x48xf32>
}
)mlir");
  ASSERT_TRUE(module);
  PartitionableOpInterface collapse = nth(*module, 0);
  EXPECT_EQ(collapse.getLoopSizes(), (SmallVector<int64_t>{4, 6, 8}));
  SmallVector<OperandAccess> accesses = collapse.getOperandAccesses();
  ASSERT_EQ(accesses.size(), 2u);
  IndexExpr flat = toIndexExpr(accesses[1].map.getResult(1));
  ASSERT_EQ(flat.terms.size(), 2u);
  EXPECT_EQ(outermostLoop(flat), 1u);
  // A reshape is a view: no bytes move.
  EXPECT_DOUBLE_EQ(collapse.getShardCost({4, 6, 8}).bytes(), 0);
}

TEST_F(PartitionableTest, GenericFlopsCountTheBody) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @gelu_like(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    %m = arith.mulf %t, %c : f32
    %a = arith.addf %m, %in : f32
    linalg.yield %a : f32
  } -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
)mlir");
  ASSERT_TRUE(module);
  PartitionableOpInterface generic = nth(*module, 1);
  EXPECT_DOUBLE_EQ(generic.getFlopsPerIteration(), 3);
  ShardCost cost = generic.getShardCost({8, 16});
  EXPECT_DOUBLE_EQ(cost.flops, 3.0 * 128);
  // The init is not read by the body.
  EXPECT_DOUBLE_EQ(cost.bytesRead, 4.0 * 128);
  EXPECT_DOUBLE_EQ(cost.bytesWritten, 4.0 * 128);
}

} // namespace
