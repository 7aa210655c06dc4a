//===- LayoutValuesTest.cpp - reshard plans deliver the right values -----===//
//
// An interpreter moves the values of a tensor as a plan's steps say and
// compares what each device ends with: random layouts and targets, and the
// partial sums and values zero outside their pieces that gradients make.
//
//===----------------------------------------------------------------------===//

#include "LayoutTesting.h"

#include <random>

using namespace soap::layout;
using namespace soap::layout::testing;

namespace {

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

TEST(Layout, SlotPartialsCompleteBlockByBlock) {
  // Four tasks of a product on devices [0, 1, 1, 0] that split its
  // reduction: each device holds partial sums of rows 0-3 in its first
  // slot and of rows 4-7 in its second.
  Layout first, second;
  first.blocks = {block({0, 0}, {4, 8}), block({0, 0}, {4, 8})};
  second.blocks = {block({4, 0}, {4, 8}), block({4, 0}, {4, 8})};
  for (Layout *l : {&first, &second}) {
    l->partial = Combine::Sum;
    l->tasks = {0, 1};
  }
  std::optional<SharedCompletion> done =
      completeSharedPartials({first, second});
  ASSERT_TRUE(done);
  ASSERT_EQ(done->groups.size(), 2u);
  EXPECT_EQ(done->groups[0].block, block({0, 0}, {4, 8}));
  EXPECT_EQ(done->groups[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(done->groups[1].devices, (std::vector<int>{0, 1}));
  ASSERT_EQ(done->pieces.size(), 2u);
  EXPECT_FALSE(done->pieces[0].partial);
  EXPECT_EQ(done->groupOf[1], (std::vector<int>{1, 1}));
  // Two slots of one block on device 0 add up there (no group to
  // all-reduce when only it holds the block); the second slot's copy goes.
  Layout again = first;
  again.blocks[1] = std::nullopt;
  Layout only = again;
  done = completeSharedPartials({again, only});
  ASSERT_TRUE(done);
  ASSERT_EQ(done->groups.size(), 1u);
  EXPECT_TRUE(done->groups[0].devices.empty());
  EXPECT_EQ(done->groups[0].partials.size(), 2u);
  EXPECT_EQ(done->pieces.size(), 1u);
  // Blocks that overlap without being equal (windows) are left to the
  // readers' reshards.
  Layout window = first;
  window.blocks[1] = block({2, 0}, {4, 8});
  EXPECT_FALSE(completeSharedPartials({window, second}));
  // One piece, or a complete one: nothing to complete here.
  EXPECT_FALSE(completeSharedPartials({first}));
  EXPECT_FALSE(
      completeSharedPartials({first, Layout::split({8, 8}, 2, 0, {0, 1})}));
}

TEST(Layout, EachDeviceTakesItsBlockFromAnyCopy) {
  // A value whole on device 0 that two readers broadcast in halves to
  // devices 0-2: a reader of rows 4-7 on device 1 and 0-3 on device 2
  // finds each block in one of the copies, and nothing moves.
  TensorShape t = f32({8, 8});
  Layout whole = Layout::whole(t.shape, 3, {0});
  Layout top = Layout::whole(t.shape, 3, {0, 1, 2});
  Layout bottom = top;
  for (auto &b : top.blocks)
    b = block({0, 0}, {4, 8});
  for (auto &b : bottom.blocks)
    b = block({4, 0}, {4, 8});
  Layout target;
  target.blocks = {std::nullopt, block({4, 0}, {4, 8}), block({0, 0}, {4, 8})};
  std::vector<Layout> pieces = {whole, top, bottom};
  ReshardPlan plan = planReshard(t, pieces, target);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].bytes, 0);
  for (const Transfer &transfer : plan.steps[0].transfers)
    EXPECT_EQ(transfer.from, transfer.to);
  Interpreter interpreter(t);
  std::vector<std::vector<Values>> data;
  for (const Layout &piece : pieces)
    data.push_back(interpreter.fill(piece, 1));
  std::vector<Values> result = interpreter.run(plan, pieces, data);
  for (int d : target.holders())
    interpreter.forEach(*target.blocks[d], [&](int64_t flat) {
      EXPECT_NEAR(result[d][flat], Interpreter::truth(flat), 1e-9);
    });
  // A block no device holds whole in one copy still moves.
  target.blocks[2] = block({2, 0}, {4, 8});
  EXPECT_GT(planReshard(t, pieces, target).steps.back().bytes, 0);
}

TEST(Layout, PiecesOfSeveralTasksGroupByOffsets) {
  // A gradient op whose tasks run in another order than the forward op's:
  // device 0 computes rows 4-7 first, device 1 rows 0-3. Regrouped, the
  // k-th piece holds each device's k-th block in order of offsets, as the
  // forward op's order would have grouped them.
  Layout first, second;
  first.blocks = {block({4, 0}, {4, 8}), block({0, 0}, {4, 8})};
  second.blocks = {block({0, 0}, {4, 8}), block({4, 0}, {4, 8})};
  Regrouping regrouped = canonicalPieces({first, second});
  ASSERT_EQ(regrouped.pieces.size(), 2u);
  EXPECT_EQ(regrouped.pieces[0].blocks,
            (std::vector<std::optional<Block>>{block({0, 0}, {4, 8}),
                                               block({0, 0}, {4, 8})}));
  EXPECT_EQ(regrouped.from[0], (std::vector<int>{1, 0}));
  EXPECT_EQ(regrouped.from[1], (std::vector<int>{0, 1}));
  // A block a device holds twice (copies) is kept once.
  Layout copy = second;
  copy.blocks[1] = std::nullopt;
  regrouped = canonicalPieces({second, copy});
  ASSERT_EQ(regrouped.pieces.size(), 1u);
  EXPECT_EQ(regrouped.from[0], (std::vector<int>{0, 0}));
  // Partial sums stay as they are.
  Layout partial = first;
  partial.partial = Combine::Sum;
  partial.tasks = {0, 1};
  regrouped = canonicalPieces({partial, second});
  EXPECT_EQ(regrouped.pieces[0].blocks, partial.blocks);
  EXPECT_EQ(regrouped.from[0], (std::vector<int>{0, 0}));
}
