//===- LayoutTest.cpp - the reshard planner -------------------------------===//
//
// Hand-computed plans for the regular cases (each collective, grids, device
// subsets and orders, halos), and a randomized check that every plan
// delivers the right values: an interpreter moves the values of a tensor
// as the steps say and compares what each device ends with.
//
//===----------------------------------------------------------------------===//

#include "soap/layout/Layout.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>

using namespace soap::layout;

namespace {

Block block(std::vector<int64_t> offsets, std::vector<int64_t> sizes) {
  return {std::move(offsets), std::move(sizes)};
}

Layout partialWhole(const std::vector<int64_t> &shape, int n) {
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  Layout l = Layout::whole(shape, n, all);
  l.partial = Combine::Sum;
  l.tasks.assign(all.begin(), all.end());
  return l;
}

std::vector<StepKind> kinds(const ReshardPlan &plan) {
  std::vector<StepKind> k;
  for (const Step &s : plan.steps)
    k.push_back(s.kind);
  return k;
}

TensorShape f32(std::vector<int64_t> shape) { return {std::move(shape), 4}; }

} // namespace

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

//===----------------------------------------------------------------------===//
// Every plan delivers the right values
//===----------------------------------------------------------------------===//

namespace {

/// The values a device holds: global flat index -> value.
using Values = std::map<int64_t, double>;

struct Interpreter {
  const TensorShape &tensor;
  std::vector<int64_t> strides;

  explicit Interpreter(const TensorShape &t) : tensor(t) {
    strides.assign(t.shape.size(), 1);
    for (int d = static_cast<int>(t.shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * t.shape[d + 1];
  }

  template <typename F> void forEach(const Block &b, F f) const {
    std::vector<int64_t> i(b.offsets);
    if (b.volume() == 0)
      return;
    while (true) {
      int64_t flat = 0;
      for (size_t d = 0; d < i.size(); ++d)
        flat += i[d] * strides[d];
      f(flat);
      int d = static_cast<int>(i.size()) - 1;
      for (; d >= 0; --d) {
        if (++i[d] < b.offsets[d] + b.sizes[d])
          break;
        i[d] = b.offsets[d];
      }
      if (d < 0)
        return;
    }
  }

  static double truth(int64_t flat) { return 0.5 + static_cast<double>(flat); }

  /// Per device the values of `layout` (partials: the task's share).
  std::vector<Values> fill(const Layout &layout, int partials) const {
    std::vector<Values> data(layout.numDevices());
    for (int d : layout.holders())
      forEach(*layout.blocks[d], [&](int64_t flat) {
        double v = truth(flat);
        if (layout.partial)
          v = v * (layout.tasks[d] + 1) / (partials * (partials + 1) / 2.0);
        data[d][flat] = v;
      });
    return data;
  }

  /// Reads `b` out of `from`; fails the test when a value is missing.
  Values read(const Values &from, const Block &b) const {
    Values out;
    forEach(b, [&](int64_t flat) {
      auto it = from.find(flat);
      if (it == from.end()) {
        ADD_FAILURE() << "value " << flat << " is not there";
        return;
      }
      out[flat] = it->second;
    });
    return out;
  }

  /// Runs `plan` on the pieces' data; returns what each device ends with.
  std::vector<Values> run(const ReshardPlan &plan,
                          const std::vector<Layout> &pieces,
                          const std::vector<std::vector<Values>> &data) const {
    int n = pieces.front().numDevices();
    std::vector<Values> current =
        plan.piece >= 0 ? data[plan.piece] : std::vector<Values>(n);
    Layout layout = plan.piece >= 0 ? pieces[plan.piece] : Layout();
    for (const Step &step : plan.steps) {
      std::vector<Values> next(n);
      for (int d : step.result.holders()) {
        const Block &b = *step.result.blocks[d];
        switch (step.kind) {
        case StepKind::Slice:
          next[d] = read(current[d], b);
          break;
        case StepKind::AllReduce:
        case StepKind::ReduceScatter: {
          const std::vector<int> *group = nullptr;
          for (const auto &g : step.groups)
            if (std::find(g.begin(), g.end(), d) != g.end())
              group = &g;
          if (!group) { // a block with one partial: already complete
            next[d] = read(current[d], b);
            break;
          }
          for (int m : *group) {
            Values part = read(current[m], b);
            for (auto &[flat, v] : part)
              next[d][flat] += v;
          }
          break;
        }
        case StepKind::AllGather:
        case StepKind::AllToAll:
        case StepKind::Broadcast: {
          const std::vector<int> *group = nullptr;
          for (const auto &g : step.groups)
            if (std::find(g.begin(), g.end(), d) != g.end())
              group = &g;
          if (!group) {
            next[d] = read(current[d], b);
            break;
          }
          Values pool;
          for (int m : *group)
            if (step.kind != StepKind::Broadcast || m == step.root)
              pool.insert(current[m].begin(), current[m].end());
          next[d] = read(pool, b);
          break;
        }
        case StepKind::SendRecv:
        case StepKind::HaloExchange:
        case StepKind::SendRecvCombine:
          // Parts assembled, or, of partial sums, added up.
          for (const Transfer &t : step.transfers) {
            if (t.to != d)
              continue;
            const Values &from =
                t.piece >= 0 ? data[t.piece][t.from] : current[t.from];
            for (auto &[flat, v] : read(from, t.block))
              next[d][flat] = step.kind == StepKind::SendRecvCombine
                                  ? next[d][flat] + v
                                  : v;
          }
          next[d] = read(next[d], b);
          break;
        case StepKind::LocalSum:
          for (int p : step.pieces)
            if (pieces[p].blocks[d])
              for (auto &[flat, v] : read(data[p][d], b))
                next[d][flat] += v;
          break;
        case StepKind::AllReduceWhole: {
          Values whole;
          for (int p : step.pieces) {
            std::map<int64_t, bool> seenTask;
            std::map<std::pair<int64_t, int64_t>, bool> seen;
            for (int m : pieces[p].holders())
              for (auto &[flat, v] : data[p][m]) {
                int64_t task = pieces[p].partial ? pieces[p].tasks[m] : -1;
                if (seen[{task, flat}])
                  continue;
                seen[{task, flat}] = true;
                whole[flat] = pieces[p].partial ? whole[flat] + v : v;
              }
          }
          next[d] = read(whole, b);
          break;
        }
        }
      }
      current = std::move(next);
      layout = step.result;
    }
    return current;
  }
};

/// A random layout of `shape` on `n` devices: a grid of equal parts over
/// some dimensions, on a random ordered subset of the devices, possibly
/// copied, possibly partial.
Layout randomLayout(const std::vector<int64_t> &shape, int n, std::mt19937 &rng,
                    bool allowPartial, int &partials) {
  std::vector<int64_t> degrees(shape.size(), 1);
  int64_t tasks = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t> options;
    for (int64_t k = 1; k <= shape[d]; ++k)
      if (shape[d] % k == 0 && tasks * k <= n)
        options.push_back(k);
    degrees[d] = options[rng() % options.size()];
    tasks *= degrees[d];
  }
  int64_t maxCopies = n / tasks;
  int64_t copies = 1 + rng() % maxCopies;
  std::vector<int> devices(n);
  std::iota(devices.begin(), devices.end(), 0);
  std::shuffle(devices.begin(), devices.end(), rng);
  Layout layout;
  layout.blocks.resize(n);
  bool partial = allowPartial && copies > 1 && rng() % 2;
  if (partial) {
    layout.partial = Combine::Sum;
    layout.tasks.assign(n, -1);
    partials = static_cast<int>(copies);
  }
  for (int64_t c = 0; c < copies; ++c)
    for (int64_t t = 0; t < tasks; ++t) {
      Block b;
      int64_t rest = t;
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        int64_t coordinate = rest % degrees[d];
        rest /= degrees[d];
        int64_t size = shape[d] / degrees[d];
        b.offsets.insert(b.offsets.begin(), coordinate * size);
        b.sizes.insert(b.sizes.begin(), size);
      }
      int device = devices[c * tasks + t];
      layout.blocks[device] = b;
      if (partial)
        layout.tasks[device] = c;
    }
  return layout;
}

} // namespace

// A split reduction with two tasks on each device (a random strategy's
// weight gradient): each device adds its own partials up, then the devices
// combine theirs; on one device, nothing moves at all.
TEST(Layout, SeveralPartialsPerDeviceAddUpLocallyFirst) {
  TensorShape t = f32({4, 4});
  Interpreter interpreter(t);
  auto check = [&](const std::vector<Layout> &pieces, const Layout &target,
                   int partials, std::vector<StepKind> want) {
    ReshardPlan plan = planReshard(t, pieces, target);
    SCOPED_TRACE(plan.str());
    EXPECT_EQ(kinds(plan), want);
    std::vector<std::vector<Values>> data;
    for (const Layout &piece : pieces)
      data.push_back(interpreter.fill(piece, partials));
    std::vector<Values> result = interpreter.run(plan, pieces, data);
    for (int d : target.holders())
      interpreter.forEach(*target.blocks[d], [&](int64_t flat) {
        EXPECT_NEAR(result[d][flat], Interpreter::truth(flat), 1e-9);
      });
  };
  Layout first, second;
  first.blocks = {Block::whole(t.shape), std::nullopt};
  first.partial = Combine::Sum;
  first.tasks = {0, -1};
  second = first;
  second.tasks = {1, -1};
  check({first, second}, Layout::whole(t.shape, 2, {0}), 2,
        {StepKind::LocalSum});
  first.blocks[1] = second.blocks[1] = Block::whole(t.shape);
  first.tasks = {0, 1};
  second.tasks = {2, 3};
  check({first, second}, Layout::whole(t.shape, 2, {0, 1}), 4,
        {StepKind::LocalSum, StepKind::AllReduce});
}

TEST(Layout, RandomPlansDeliverTheRightValues) {
  std::mt19937 rng(7);
  std::map<StepKind, int> seen;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> shape;
    int rank = 1 + rng() % 3;
    for (int d = 0; d < rank; ++d)
      shape.push_back(std::vector<int64_t>{2, 4, 6, 8}[rng() % 4]);
    int n = std::vector<int>{2, 3, 4, 6, 8}[rng() % 5];
    TensorShape t{shape, 4};
    int partials = 1;
    std::vector<Layout> pieces = {randomLayout(shape, n, rng, true, partials)};
    if (!pieces[0].partial && rng() % 4 == 0) {
      int unused = 1;
      pieces.push_back(randomLayout(shape, n, rng, false, unused));
    }
    int unused = 1;
    Layout target = randomLayout(shape, n, rng, false, unused);
    // Window reads: every block one element wider along one dimension.
    if (rng() % 4 == 0) {
      int dim = rng() % rank;
      for (auto &b : target.blocks)
        if (b) {
          int64_t lo = std::max<int64_t>(0, b->offsets[dim] - 1);
          int64_t hi =
              std::min(shape[dim], b->offsets[dim] + b->sizes[dim] + 1);
          b->offsets[dim] = lo;
          b->sizes[dim] = hi - lo;
        }
    }
    // Interior reads (a pad's input): along a dimension every block holds
    // whole, all take the same inner range.
    if (rng() % 4 == 0) {
      int dim = rng() % rank;
      bool whole = shape[dim] > 2;
      for (auto &b : target.blocks)
        whole = whole && (!b || b->sizes[dim] == shape[dim]);
      if (whole)
        for (auto &b : target.blocks)
          if (b) {
            b->offsets[dim] = 1;
            b->sizes[dim] = shape[dim] - 2;
          }
    }
    // Every piece must hold the whole tensor between its devices.
    ReshardPlan plan = planReshard(t, pieces, target);
    Interpreter interpreter(t);
    std::vector<std::vector<Values>> data;
    for (const Layout &piece : pieces)
      data.push_back(interpreter.fill(piece, partials));
    std::vector<Values> result = interpreter.run(plan, pieces, data);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + pieces[0].str() +
                 " -> " + target.str() + "\n" + plan.str());
    for (int d : target.holders()) {
      Values want;
      interpreter.forEach(*target.blocks[d], [&](int64_t flat) {
        want[flat] = Interpreter::truth(flat);
      });
      ASSERT_EQ(result[d].size(), want.size()) << "device " << d;
      for (auto &[flat, v] : want)
        ASSERT_NEAR(result[d][flat], v, 1e-9) << "device " << d;
    }
    for (const Step &s : plan.steps) {
      ++seen[s.kind];
      // Complete values never need a whole copy.
      if (!pieces[0].partial) {
        EXPECT_NE(s.kind, StepKind::AllReduceWhole);
      }
    }
  }
  // The random cases reach every kind of step.
  for (StepKind k :
       {StepKind::Slice, StepKind::AllReduce, StepKind::ReduceScatter,
        StepKind::AllGather, StepKind::AllToAll, StepKind::Broadcast,
        StepKind::SendRecv, StepKind::HaloExchange})
    EXPECT_GT(seen[k], 0) << stepKindName(k);
}

// A value zero outside its pieces (a gradient of a slice) completes where
// its holders' boxes tile the tensor, else whole on every device.
TEST(Layout, ZerosElsewhereCompleteWhereTheyTileElseEverywhere) {
  std::vector<int64_t> shape{8, 3};
  // Rows 0-2 on device 0, 2-4 on device 1: half the rows no one holds.
  Layout slice;
  slice.blocks = {block({0, 0}, {2, 3}), block({2, 0}, {2, 3})};
  EXPECT_EQ(completedZerosElsewhere({slice}, shape).blocks,
            Layout::everywhere(shape, 2).blocks);
  // One holder: the whole tensor there.
  Layout one;
  one.blocks = {block({0, 0}, {4, 3}), std::nullopt};
  Layout wholeOnZero = completedZerosElsewhere({one}, shape);
  ASSERT_TRUE(wholeOnZero.blocks[0].has_value());
  EXPECT_EQ(*wholeOnZero.blocks[0], Block::whole(shape));
  EXPECT_FALSE(wholeOnZero.blocks[1].has_value());
  // Columns 0-1 of rows 0-3 on device 0 and of rows 4-7 on device 1: the
  // columns widen to whole (every holder has the same range), rows 0-4 and
  // 4-8 tile the tensor.
  Layout cols;
  cols.blocks = {block({0, 0}, {4, 1}), block({4, 0}, {4, 1})};
  Layout halves = completedZerosElsewhere({cols}, shape);
  EXPECT_EQ(halves.blocks[0], block({0, 0}, {4, 3}));
  EXPECT_EQ(halves.blocks[1], block({4, 0}, {4, 3}));
}

TEST(Layout, InitsThatSplitReductionsAddWhereTheyLie) {
  // A product that splits its reduction over devices 0 and 1 writes the
  // whole 4x8 block on each.
  Layout blocks;
  blocks.blocks = {block({0, 0}, {4, 8}), block({0, 0}, {4, 8})};
  // Partial sums in those blocks, a distinct partial on each device: each
  // adds its own.
  Layout partial = blocks;
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1};
  EXPECT_TRUE(initAddsLocally(partial, blocks));
  // Copies of one partial would count it twice.
  partial.tasks = {0, 0};
  EXPECT_FALSE(initAddsLocally(partial, blocks));
  // Complete rows that tile the block: each device puts its rows into
  // zeros.
  EXPECT_TRUE(initAddsLocally(Layout::split({4, 8}, 2, 0, {0, 1}), blocks));
  // Rows on one device only leave the other's part out.
  Layout half;
  half.blocks = {block({0, 0}, {2, 8}), std::nullopt};
  EXPECT_FALSE(initAddsLocally(half, blocks));
  // The whole init on both devices would be added twice.
  EXPECT_FALSE(initAddsLocally(Layout::everywhere({4, 8}, 2), blocks));
}

TEST(Layout, OverlappingPartialsSendOnlyTheOverlaps) {
  // The input gradient of a convolution split along its output rows: each
  // device's partial sums cover the input rows its task read (6 of 10, the
  // window's halo overlapping the other's). Re-split by rows, only the
  // overlapping rows move, each added where it goes (not a whole
  // all-reduce).
  TensorShape t = f32({4, 2, 10, 10});
  Layout partial;
  partial.blocks = {block({0, 0, 0, 0}, {4, 2, 6, 10}),
                    block({0, 0, 4, 0}, {4, 2, 6, 10})};
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1};
  Layout target = Layout::split(t.shape, 2, 2, {0, 1});
  ReshardPlan plan = planReshard(t, {partial}, target);
  ASSERT_EQ(kinds(plan), std::vector<StepKind>{StepKind::SendRecvCombine});
  // One row of 4x2x10 each way.
  EXPECT_EQ(plan.steps[0].bytes, 2 * 4 * 2 * 10 * 4);
  // The values: each element is the sum of the partials whose blocks
  // hold it.
  Interpreter interpreter(t);
  std::vector<Values> data(2);
  for (int d = 0; d < 2; ++d)
    interpreter.forEach(*partial.blocks[d], [&](int64_t flat) {
      int64_t row = (flat / 10) % 10;
      int covering = (row < 6) + (row >= 4);
      data[d][flat] = Interpreter::truth(flat) / covering;
    });
  std::vector<Values> result = interpreter.run(plan, {partial}, {data});
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(result[d].size(), static_cast<size_t>(4 * 2 * 5 * 10));
    for (auto &[flat, v] : result[d])
      EXPECT_NEAR(v, Interpreter::truth(flat), 1e-9);
  }
  // Gathered whole on device 0: the other device's six partial rows go
  // there and add up.
  Layout one = Layout::whole(t.shape, 2, {0});
  ReshardPlan toOne = planReshard(t, {partial}, one);
  ASSERT_EQ(kinds(toOne), std::vector<StepKind>{StepKind::SendRecvCombine});
  EXPECT_EQ(toOne.steps[0].bytes, 4 * 2 * 6 * 10 * 4);
}

TEST(Layout, PartialsAddWhereTheyLieWhicheverTasksMadeThem) {
  // Devices [1, 0] hold tasks 0 and 1 of one reduction, [0, 1] those of
  // another: each device holds a distinct partial in both.
  EXPECT_TRUE(
      sameCopies(std::vector<int64_t>{1, 0}, std::vector<int64_t>{0, 1}));
  // Copies of one partial on devices 0 and 1 in one, distinct in the other.
  EXPECT_FALSE(
      sameCopies(std::vector<int64_t>{0, 0, 1}, std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(
      sameCopies(std::vector<int64_t>{0, 0, 1}, std::vector<int64_t>{3, 3, 2}));
}

TEST(Layout, GradientsZeroElsewhereNeedOnlyTheirNonzeroPart) {
  // A strided convolution's input gradient: partial sums of rows 0-4 of a
  // 4x6 tensor on both devices; a reader of rows 0-1 and one of rows 2-5.
  Layout partial;
  partial.blocks = {block({0, 0}, {5, 6}), block({0, 0}, {5, 6})};
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1};
  Layout target;
  target.blocks = {block({0, 0}, {2, 6}), block({2, 0}, {4, 6})};
  Layout needed = nonzeroPart(target, {partial});
  EXPECT_EQ(needed.blocks[0], block({0, 0}, {2, 6}));
  EXPECT_EQ(needed.blocks[1], block({2, 0}, {3, 6}));
  // All-reduced, then each device cuts its block out with zeros after the
  // rows the gradient has: the copy readers reuse is the all-reduce's
  // result, not the local cut.
  TensorShape t = f32({6, 6});
  Layout one;
  one.blocks = {block({0, 0}, {6, 6}), std::nullopt};
  ReshardPlan plan = planReshard(t, {partial}, one, /*zerosElsewhere=*/true);
  ASSERT_FALSE(plan.steps.empty());
  ASSERT_EQ(kinds(plan), (std::vector<StepKind>{StepKind::AllReduce,
                                                StepKind::HaloExchange}));
  int kept = communicatedStep(plan);
  ASSERT_GE(kept, 0);
  EXPECT_EQ(plan.steps[kept].kind, StepKind::AllReduce);
  EXPECT_EQ(communicatedLayout(plan)->blocks[1], block({0, 0}, {5, 6}));
  // A plan of local steps alone keeps what it assembled.
  Layout halves;
  halves.blocks = {block({0, 0}, {3, 6}), std::nullopt};
  Layout others;
  others.blocks = {block({3, 0}, {3, 6}), std::nullopt};
  ReshardPlan local = planReshard(t, {halves, others}, one);
  ASSERT_EQ(local.steps.size(), 1u);
  for (const Transfer &transfer : local.steps[0].transfers)
    EXPECT_EQ(transfer.from, transfer.to);
  EXPECT_EQ(communicatedStep(local), 0);
}
