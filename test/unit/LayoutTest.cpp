//===- LayoutTest.cpp - the reshard planner's hand-computed plans ---------===//
//
// Plans computed by hand for the regular cases: each collective, grids,
// device subsets and orders, halos, gradients of parts. LayoutValuesTest.cpp
// runs plans on values.
//
//===----------------------------------------------------------------------===//

#include "LayoutTesting.h"

using namespace soap::layout;
using namespace soap::layout::testing;

TEST(Layout, HeldLayoutNeedsNothingOrASlice) {
  TensorShape t = f32({8, 4});
  Layout whole = Layout::whole(t.shape, 2, {0, 1});
  EXPECT_TRUE(planReshard(t, {whole}, whole).steps.empty());
  ReshardPlan plan =
      planReshard(t, {whole}, Layout::split(t.shape, 2, 0, {0, 1}));
  EXPECT_EQ(kinds(plan), std::vector<StepKind>{StepKind::Slice});
  EXPECT_EQ(plan.piece, 0);
}

TEST(Layout, SplitToWholeIsAnAllGatherInDeviceOrder) {
  TensorShape t = f32({8, 4});
  ReshardPlan plan =
      planReshard(t, {Layout::split(t.shape, 4, 0, {2, 0, 3, 1})},
                  Layout::whole(t.shape, 4, {0, 1, 2, 3}));
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::AllGather});
  EXPECT_EQ(plan.steps[0].dim, 0);
  EXPECT_EQ(plan.steps[0].groups,
            (std::vector<std::vector<int>>{{2, 0, 3, 1}}));
  EXPECT_EQ(plan.steps[0].bytes, 8 * 4 * 4); // the gathered output
}

TEST(Layout, PartialSumsAllReduceOrReduceScatter) {
  TensorShape t = f32({8, 4});
  Layout partial = partialWhole(t.shape, 4);
  ReshardPlan toWhole =
      planReshard(t, {partial}, Layout::whole(t.shape, 4, {0, 1, 2, 3}));
  ASSERT_EQ(kinds(toWhole), std::vector<StepKind>{StepKind::AllReduce});
  EXPECT_EQ(toWhole.steps[0].groups,
            (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_EQ(toWhole.steps[0].bytes, 128);

  ReshardPlan toSplit =
      planReshard(t, {partial}, Layout::split(t.shape, 4, 1, {3, 2, 1, 0}));
  ASSERT_EQ(kinds(toSplit), std::vector<StepKind>{StepKind::ReduceScatter});
  EXPECT_EQ(toSplit.steps[0].dim, 1);
  EXPECT_EQ(toSplit.steps[0].groups,
            (std::vector<std::vector<int>>{{3, 2, 1, 0}}));
  EXPECT_EQ(toSplit.steps[0].bytes, 128); // each member's input
}

TEST(Layout, PartialRowsAllReduceInTwoGroups) {
  // A 2x2 grid: rows split over {0,1} | {2,3}, the reduction over the
  // other coordinate.
  TensorShape t = f32({8, 4});
  Layout partial;
  partial.blocks = {block({0, 0}, {4, 4}), block({0, 0}, {4, 4}),
                    block({4, 0}, {4, 4}), block({4, 0}, {4, 4})};
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1, 2, 3};
  Layout complete = partial;
  complete.partial.reset();
  complete.tasks.clear();
  ReshardPlan plan = planReshard(t, {partial}, complete);
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::AllReduce});
  EXPECT_EQ(plan.steps[0].groups,
            (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(plan.steps[0].bytes, 64);
}

TEST(Layout, PartialSumsReadInPartReduceScatterThenSlice) {
  // Readers of the first 8 columns of a partial 4x16 (the slice of a
  // concatenation's gradient), rows split: the reduce_scatter of the whole
  // along the rows, then a local slice, not an all-reduce of everything.
  TensorShape t = f32({4, 16});
  Layout target;
  target.blocks = {block({0, 0}, {2, 8}), block({2, 0}, {2, 8})};
  ReshardPlan plan = planReshard(t, {partialWhole(t.shape, 2)}, target);
  ASSERT_EQ(kinds(plan),
            (std::vector<StepKind>{StepKind::ReduceScatter, StepKind::Slice}));
  EXPECT_EQ(plan.steps[0].dim, 0);
  EXPECT_EQ(plan.steps[0].bytes, 4 * 16 * 4);
  EXPECT_EQ(*plan.steps[0].result.blocks[1], block({2, 0}, {2, 16}));
}

TEST(Layout, ReadersOfAPartTakeItFromTheWholeReSplit) {
  // Columns split over 2 devices; readers of columns [0, 4) with the rows
  // split (an LSTM's gate slice): the all_to_all of the whole tensor to
  // rows, then a local slice (the other slices read the same copy), not
  // point-to-point transfers of the part.
  TensorShape t = f32({4, 16});
  Layout target;
  target.blocks = {block({0, 0}, {2, 4}), block({2, 0}, {2, 4})};
  ReshardPlan plan =
      planReshard(t, {Layout::split(t.shape, 2, 1, {0, 1})}, target);
  ASSERT_EQ(kinds(plan),
            (std::vector<StepKind>{StepKind::AllToAll, StepKind::Slice}));
  EXPECT_EQ(*plan.steps[0].result.blocks[1], block({2, 0}, {2, 16}));
}

TEST(Layout, ReadersOfOneRangeReSplitThatRangeAlone) {
  // A pad's gradient (4x4x10x10, its channels split) read by the pad's
  // backward with the batch split: each device slices the interior out of
  // its part and an all_to_all re-splits the interior alone (2048 bytes
  // each), not an all_gather of the padded whole (6400).
  TensorShape t = f32({4, 4, 10, 10});
  Layout target;
  target.blocks = {block({0, 0, 1, 1}, {2, 4, 8, 8}),
                   block({2, 0, 1, 1}, {2, 4, 8, 8})};
  ReshardPlan plan =
      planReshard(t, {Layout::split(t.shape, 2, 1, {0, 1})}, target);
  ASSERT_EQ(kinds(plan),
            (std::vector<StepKind>{StepKind::Slice, StepKind::AllToAll}));
  EXPECT_EQ(*plan.steps[0].result.blocks[1], block({0, 2, 1, 1}, {4, 2, 8, 8}));
  EXPECT_EQ(plan.steps[1].dim, 0);
  EXPECT_EQ(plan.steps[1].fromDim, 1);
  EXPECT_EQ(plan.steps[1].bytes, 2048);
  EXPECT_EQ(plan.steps[1].result.blocks, target.blocks);
  // The same from the gradient of a pooling window that reads rows 0-8
  // only (zero elsewhere): the same steps, not point-to-point transfers.
  Layout window;
  window.blocks = {block({0, 0, 0, 0}, {4, 2, 9, 9}),
                   block({0, 2, 0, 0}, {4, 2, 9, 9})};
  EXPECT_EQ(kinds(planReshard(t, {window}, target, /*zerosElsewhere=*/true)),
            kinds(plan));
  // Readers that take different ranges along the dimension they split (an
  // LSTM's gate, its columns split, read from a row-split gate matrix):
  // the all_gather of the whole that the other gates reuse, then a slice.
  TensorShape gates = f32({4, 32});
  Layout gate;
  gate.blocks = {block({0, 0}, {4, 4}), block({0, 4}, {4, 4})};
  EXPECT_EQ(kinds(planReshard(gates, {Layout::split(gates.shape, 2, 0, {0, 1})},
                              gate)),
            (std::vector<StepKind>{StepKind::AllGather, StepKind::Slice}));
}

TEST(Layout, ReSplitInAnotherDeviceOrderSendsOnlyWhatIsMissing) {
  // The batch split over devices 0, 1 and read with the channels split
  // over 1, 0 (no all_to_all fits that order), from the gradient of a
  // pooling window that reads rows and columns 0-8 of 10 (zero elsewhere)
  // or from the whole: each device receives the quarter it lacks (1024
  // bytes each way), not the other's whole half by an all_gather (4096).
  TensorShape t = f32({4, 4, 10, 10});
  Layout target;
  target.blocks = {block({0, 2, 0, 0}, {4, 2, 9, 9}),
                   block({0, 0, 0, 0}, {4, 2, 9, 9})};
  Layout window;
  window.blocks = {block({0, 0, 0, 0}, {2, 4, 9, 9}),
                   block({2, 0, 0, 0}, {2, 4, 9, 9})};
  for (const Layout &held : {window, Layout::split(t.shape, 2, 0, {0, 1})}) {
    ReshardPlan plan = planReshard(t, {held}, target, /*zerosElsewhere=*/true);
    ASSERT_EQ(kinds(plan), (std::vector<StepKind>{StepKind::SendRecv}));
    EXPECT_EQ(plan.steps[0].bytes, 2 * 2 * 2 * 9 * 9 * 4);
    EXPECT_EQ(plan.steps[0].result.blocks, target.blocks);
  }
}

TEST(Layout, ResplitIsAnAllToAll) {
  TensorShape t = f32({8, 8});
  ReshardPlan plan = planReshard(t, {Layout::split(t.shape, 2, 0, {1, 0})},
                                 Layout::split(t.shape, 2, 1, {1, 0}));
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::AllToAll});
  EXPECT_EQ(plan.steps[0].dim, 1);
  EXPECT_EQ(plan.steps[0].fromDim, 0);
  EXPECT_EQ(plan.steps[0].bytes, 128); // each member's send buffer
}

TEST(Layout, GridGathersOneDimensionAtATime) {
  TensorShape t = f32({8, 8});
  Layout grid; // device 2i + j holds rows i, columns j
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      grid.blocks.push_back(block({4 * i, 4 * j}, {4, 4}));
  ReshardPlan plan =
      planReshard(t, {grid}, Layout::whole(t.shape, 4, {0, 1, 2, 3}));
  ASSERT_EQ(kinds(plan),
            (std::vector<StepKind>{StepKind::AllGather, StepKind::AllGather}));
  EXPECT_EQ(plan.steps[0].dim, 0);
  EXPECT_EQ(plan.steps[0].groups,
            (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(plan.steps[0].bytes, 8 * 4 * 4);
  EXPECT_EQ(plan.steps[1].groups,
            (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(plan.steps[1].bytes, 8 * 8 * 4);
}

TEST(Layout, DisjointDeviceSetsSendOnlyWhatIsRead) {
  TensorShape t = f32({8, 4});
  ReshardPlan plan = planReshard(t, {Layout::split(t.shape, 4, 0, {0, 1})},
                                 Layout::whole(t.shape, 4, {2, 3}));
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::SendRecv});
  EXPECT_EQ(plan.steps[0].bytes, 2 * t.bytes()); // no whole copies
  std::map<int, int> sentBy;
  for (const Transfer &tr : plan.steps[0].transfers) {
    EXPECT_NE(tr.from, tr.to);
    ++sentBy[tr.from];
  }
  EXPECT_EQ(sentBy, (std::map<int, int>{{0, 2}, {1, 2}}));
}

TEST(Layout, OneHolderBroadcasts) {
  TensorShape t = f32({8, 4});
  ReshardPlan plan = planReshard(t, {Layout::whole(t.shape, 4, {1})},
                                 Layout::whole(t.shape, 4, {0, 1, 2, 3}));
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::Broadcast});
  EXPECT_EQ(plan.steps[0].root, 1);
  EXPECT_EQ(plan.steps[0].groups,
            (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
}

TEST(Layout, RowSplitWindowExchangesHalos) {
  // A 3x3 convolution's input split along its rows on 2 devices: each
  // reads one row of its neighbour's part.
  TensorShape t = f32({1, 2, 10, 6});
  Layout held = Layout::split(t.shape, 2, 2, {0, 1});
  Layout read;
  read.blocks = {block({0, 0, 0, 0}, {1, 2, 6, 6}),
                 block({0, 0, 4, 0}, {1, 2, 6, 6})};
  ReshardPlan plan = planReshard(t, {held}, read);
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::HaloExchange});
  EXPECT_EQ(plan.steps[0].bytes, 2 * (2 * 6) * 4); // one row each way
  int moved = 0;
  for (const Transfer &tr : plan.steps[0].transfers)
    if (tr.from != tr.to) {
      ++moved;
      EXPECT_EQ(tr.block.sizes[2], 1);
    }
  EXPECT_EQ(moved, 2);
}

TEST(Layout, IrregularPartialsFallBackToAWholeAllReduce) {
  TensorShape t = f32({8, 4});
  Layout partial;
  partial.blocks = {block({0, 0}, {6, 4}), block({2, 0}, {6, 4})};
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1};
  ReshardPlan plan =
      planReshard(t, {partial}, Layout::whole(t.shape, 2, {0, 1}));
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::AllReduceWhole});
  EXPECT_EQ(plan.steps[0].pieces, std::vector<int>{0});
}

TEST(Layout, GradientsOfPartsNeedOnlyThoseParts) {
  // A reader split along the batch took columns 8..16 of each device's
  // rows: the gradient it returns is zero elsewhere, so nothing moves.
  TensorShape t = f32({4, 32});
  Layout rows = Layout::split(t.shape, 2, 0, {0, 1});
  Layout read;
  read.blocks = {block({0, 8}, {2, 8}), block({2, 8}, {2, 8})};
  ReshardPlan plan = planReshard(t, {read}, rows, /*zerosElsewhere=*/true);
  for (const Step &step : plan.steps)
    EXPECT_EQ(step.bytes, 0) << step.str();
  // Without zeros the values outside the columns are missing: only a
  // whole all-reduce can make them up.
  EXPECT_EQ(kinds(planReshard(t, {read}, rows)),
            (std::vector<StepKind>{StepKind::AllReduceWhole, StepKind::Slice}));
}

// Where an elementwise op without a config (a parameter's update) runs:
// the pieces of its operand as one block per device, then whether those
// blocks make a grid.
TEST(Layout, UpdatesRunWhereTheirGradientIsOnlyOnAGrid) {
  std::vector<int64_t> shape = {8, 3};
  // Device 0 computes column 1, device 1 columns 0 and 2 (two tasks): no
  // one block on device 1.
  Layout first, second;
  first.blocks = {block({0, 1}, {8, 1}), block({0, 0}, {8, 1})};
  second.blocks = {std::nullopt, block({0, 2}, {8, 1})};
  EXPECT_FALSE(combinedLayout({first, second}));
  // Columns 1 and 2 on device 1 make one block, but not one of the size
  // of device 0's.
  second.blocks[1] = block({0, 2}, {8, 1});
  first.blocks[1] = block({0, 1}, {8, 1});
  first.blocks[0] = block({0, 0}, {8, 1});
  std::optional<Layout> uneven = combinedLayout({first, second});
  ASSERT_TRUE(uneven);
  EXPECT_EQ(*uneven->blocks[1], block({0, 1}, {8, 2}));
  EXPECT_FALSE(isGridLayout(*uneven, shape));
  // Row halves on two devices each: a grid; one half alone is not.
  std::vector<int64_t> square = {4, 4};
  Layout rows = Layout::split(square, 4, 0, {0, 1});
  EXPECT_TRUE(isGridLayout(rows, square));
  Layout half = rows;
  half.blocks[1] = block({0, 0}, {2, 4});
  EXPECT_FALSE(isGridLayout(half, square));
  // Blocks off the grid's multiples are none of its tasks.
  Layout shifted;
  shifted.blocks = {block({1, 0}, {2, 4}), block({3, 0}, {1, 4})};
  EXPECT_FALSE(isGridLayout(shifted, square));
  EXPECT_TRUE(isGridLayout(Layout::whole(square, 2, {0, 1}), square));
  // Partial sums of one block per device combine into that block; of two
  // different blocks, into none.
  Layout partial = rows;
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1, -1, -1};
  EXPECT_TRUE(combinedLayout({partial, partial}));
  Layout other = partial;
  other.blocks[0] = block({2, 0}, {2, 4});
  EXPECT_FALSE(combinedLayout({partial, other}));
  EXPECT_FALSE(combinedLayout({partial, rows}));
}

TEST(Layout, GradientsOfSeveralPartsTakeEveryPart) {
  // Two slices' gradients, zero elsewhere: columns 0..4 split by rows,
  // columns 4..8 by columns; and a copy of row block 0 that an earlier
  // reader assembled overlaps both (the partitioner plans such values from
  // their disjoint parts alone; the planner must still never drop a part).
  // The reader of rows 4..8 on device 0 needs both slices' parts: one
  // piece alone would leave the other's columns zero.
  TensorShape t = f32({8, 8});
  Layout left;
  left.blocks = {block({0, 0}, {4, 4}), block({4, 0}, {4, 4})};
  Layout right;
  right.blocks = {block({0, 4}, {8, 2}), block({0, 6}, {8, 2})};
  Layout copy;
  copy.blocks = {block({0, 0}, {4, 8}), std::nullopt};
  Layout target;
  target.blocks = {block({4, 0}, {4, 8}), std::nullopt};
  ReshardPlan plan = planReshard(t, {left, right, copy}, target,
                                 /*zerosElsewhere=*/true);
  // The overlapping copy rules out transfers from all pieces at once, and
  // one piece alone would drop the other's part: a whole all-reduce.
  EXPECT_EQ(kinds(plan),
            (std::vector<StepKind>{StepKind::AllReduceWhole, StepKind::Slice}));
  for (const Step &step : plan.steps)
    if (step.kind == StepKind::SendRecv ||
        step.kind == StepKind::HaloExchange) {
      int64_t fromRight = 0;
      for (const Transfer &tr : step.transfers)
        if (tr.block.offsets[1] >= 4)
          fromRight += tr.block.volume();
      EXPECT_GT(fromRight, 0) << "the right slice's rows 4..8 are dropped";
    }
}

TEST(Layout, PrefersAPieceThatHoldsTheTarget) {
  TensorShape t = f32({8, 4});
  Layout split = Layout::split(t.shape, 2, 0, {0, 1});
  Layout whole = Layout::whole(t.shape, 2, {0, 1});
  ReshardPlan plan =
      planReshard(t, {split, whole}, Layout::split(t.shape, 2, 1, {0, 1}));
  EXPECT_EQ(kinds(plan), std::vector<StepKind>{StepKind::Slice});
  EXPECT_EQ(plan.piece, 1);
}
