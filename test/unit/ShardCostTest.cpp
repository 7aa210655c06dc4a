//===- ShardCostTest.cpp - footprints, FLOPs and bytes of tasks -----------===//

#include "soap/cost/ShardCost.h"

#include <gtest/gtest.h>

using namespace soap;

namespace {

IndexExpr loop(unsigned l, int64_t coefficient = 1) {
  IndexExpr e;
  e.terms.push_back({l, coefficient});
  return e;
}

IndexExpr sum(std::vector<IndexTerm> terms, int64_t constant = 0) {
  IndexExpr e;
  e.terms = std::move(terms);
  e.constant = constant;
  return e;
}

TEST(AccessExtent, PlainLoopCoversItsExtent) {
  EXPECT_EQ(accessExtent(loop(0), {16}, 64), 16);
  EXPECT_EQ(accessExtent(loop(1), {16, 8}, 64), 8);
}

TEST(AccessExtent, ConstantIndexTouchesOneElement) {
  EXPECT_EQ(accessExtent(sum({}, 3), {16}, 64), 1);
}

TEST(AccessExtent, ConvolutionWindowOverlaps) {
  // oh * 2 + kh over oh in [0, 4), kh in [0, 3): 0..8, 9 rows.
  EXPECT_EQ(accessExtent(sum({{0, 2}, {1, 1}}), {4, 3}, 100), 9);
  // Stride 1, 3x3 window on 56 rows of output: 58 input rows.
  EXPECT_EQ(accessExtent(sum({{0, 1}, {1, 1}}), {56, 3}, 58), 58);
  // Dilation 2: oh + 2 * kh, oh in [0, 4), kh in [0, 3): 0..7, 8 rows.
  EXPECT_EQ(accessExtent(sum({{0, 1}, {1, 2}}), {4, 3}, 100), 8);
}

TEST(AccessExtent, StridedOneByOneSkipsRows) {
  // A 1x1 convolution with stride 2 reads rows 0, 2, 4, 6 only.
  EXPECT_EQ(accessExtent(sum({{0, 2}, {1, 1}}), {4, 1}, 100), 4);
}

TEST(AccessExtent, CollapsedReshapeIsExact) {
  // d0 * 64 + d1 over d0 in [0, 2), d1 in [0, 64): 128 contiguous values.
  EXPECT_EQ(accessExtent(sum({{0, 64}, {1, 1}}), {2, 64}, 1024), 128);
  // Half of the inner loop: two runs of 32 values.
  EXPECT_EQ(accessExtent(sum({{0, 64}, {1, 1}}), {2, 32}, 1024), 64);
}

TEST(AccessExtent, CappedAtTheDimension) {
  EXPECT_EQ(accessExtent(sum({{0, 1}, {1, 1}}), {8, 3}, 8), 8);
}

TEST(AccessExtent, NonLinearTouchesTheWholeDimension) {
  IndexExpr e;
  e.isLinear = false;
  EXPECT_EQ(accessExtent(e, {4}, 37), 37);
}

/// C[m, n] += A[m, k] * B[k, n] with f32 elements.
LoopNest matmul(int64_t m, int64_t n, int64_t k) {
  LoopNest nest;
  nest.loopSizes = {m, n, k};
  nest.flopsPerIteration = 2;
  nest.accesses.push_back({{loop(0), loop(2)}, {m, k}, 4, AccessRole::Read});
  nest.accesses.push_back({{loop(2), loop(1)}, {k, n}, 4, AccessRole::Read});
  nest.accesses.push_back({{loop(0), loop(1)}, {m, n}, 4, AccessRole::Read});
  nest.accesses.push_back({{loop(0), loop(1)}, {m, n}, 4, AccessRole::Write});
  return nest;
}

TEST(ShardCost, WholeMatmul) {
  ShardCost cost = shardCost(matmul(64, 32, 16), {64, 32, 16});
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 64 * 32 * 16);
  EXPECT_DOUBLE_EQ(cost.bytesRead, 4.0 * (64 * 16 + 16 * 32 + 64 * 32));
  EXPECT_DOUBLE_EQ(cost.bytesWritten, 4.0 * 64 * 32);
  EXPECT_DOUBLE_EQ(cost.bytes(), cost.bytesRead + cost.bytesWritten);
}

TEST(ShardCost, RowSplitMatmulReadsAllOfB) {
  // Splitting m in 4: each task reads a quarter of A and C, all of B.
  ShardCost cost = shardCost(matmul(64, 32, 16), {16, 32, 16});
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 16 * 32 * 16);
  EXPECT_DOUBLE_EQ(cost.bytesRead, 4.0 * (16 * 16 + 16 * 32 + 16 * 32));
  EXPECT_DOUBLE_EQ(cost.bytesWritten, 4.0 * 16 * 32);
}

TEST(ShardCost, GatherMovesItsRowsNotItsTable) {
  // out[n, d] = table[ids[n], d]: the table's row index comes from data (a
  // whole dimension in extent), but each of the 8 x 16 iterations reads one
  // element, so a task reads 8 x 16 table elements, not 30000 x 16; split
  // in two along n, half of that.
  IndexExpr row;
  row.isLinear = false;
  LoopNest nest;
  nest.loopSizes = {8, 16};
  nest.accesses.push_back({{loop(0)}, {8}, 8, AccessRole::Read});
  nest.accesses.push_back({{row, loop(1)}, {30000, 16}, 4, AccessRole::Read});
  nest.accesses.push_back({{loop(0), loop(1)}, {8, 16}, 4, AccessRole::Write});
  ShardCost whole = shardCost(nest, {8, 16});
  EXPECT_DOUBLE_EQ(whole.bytesRead, 8.0 * 8 + 4.0 * 8 * 16);
  ShardCost half = shardCost(nest, {4, 16});
  EXPECT_DOUBLE_EQ(half.bytesRead, 8.0 * 4 + 4.0 * 4 * 16);
}

TEST(ShardCost, LookupLoopAddsNoPoints) {
  // The same gather with its row as a lookup loop v (soap/Dialect/Gather.h):
  // loops n, d, v of 8, 16, 30000. A task's points are n x d; split along v
  // in 4, a task holds 7500 rows but still reads at most one per point.
  LoopNest nest;
  nest.loopSizes = {8, 16, 30000};
  nest.lookupLoops = {false, false, true};
  nest.accesses.push_back({{loop(0)}, {8}, 8, AccessRole::Read});
  nest.accesses.push_back(
      {{loop(2), loop(1)}, {30000, 16}, 4, AccessRole::Read});
  nest.accesses.push_back({{loop(0), loop(1)}, {8, 16}, 4, AccessRole::Write});
  EXPECT_DOUBLE_EQ(nest.points({8, 16, 30000}), 8.0 * 16);
  ShardCost whole = shardCost(nest, {8, 16, 30000});
  EXPECT_DOUBLE_EQ(whole.bytesRead, 8.0 * 8 + 4.0 * 8 * 16);
  EXPECT_DOUBLE_EQ(whole.bytesWritten, 4.0 * 8 * 16);
  ShardCost rows = shardCost(nest, {8, 16, 7500});
  EXPECT_DOUBLE_EQ(rows.bytesRead, whole.bytesRead);
  // A table smaller than the points: every row of the part, once.
  ShardCost few = shardCost(nest, {8, 16, 4});
  EXPECT_DOUBLE_EQ(few.bytesRead, 8.0 * 8 + 4.0 * 4 * 16);
  // Split along the width: half of everything but the ids.
  ShardCost columns = shardCost(nest, {8, 8, 30000});
  EXPECT_DOUBLE_EQ(columns.bytesRead, 8.0 * 8 + 4.0 * 8 * 8);
}

TEST(ShardCost, UnreadAccessesMoveNoBytes) {
  LoopNest nest;
  nest.loopSizes = {8, 8};
  nest.accesses.push_back(
      {{loop(0), loop(1)}, {8, 8}, 4, AccessRole::Unread});
  ShardCost cost = shardCost(nest, {8, 8});
  EXPECT_DOUBLE_EQ(cost.flops, 0);
  EXPECT_DOUBLE_EQ(cost.bytes(), 0);
}

TEST(ShardCost, TasksAddUpForParallelSplits) {
  // Splitting only parallel loops that index every tensor partitions the
  // work exactly: four quarter tasks cost one whole.
  LoopNest nest;
  nest.loopSizes = {32, 64};
  nest.flopsPerIteration = 3;
  nest.accesses.push_back({{loop(0), loop(1)}, {32, 64}, 2, AccessRole::Read});
  nest.accesses.push_back(
      {{loop(0), loop(1)}, {32, 64}, 2, AccessRole::Write});
  ShardCost whole = shardCost(nest, {32, 64});
  ShardCost quarter = shardCost(nest, {16, 32});
  EXPECT_DOUBLE_EQ(4 * quarter.flops, whole.flops);
  EXPECT_DOUBLE_EQ(4 * quarter.bytes(), whole.bytes());
}

} // namespace
