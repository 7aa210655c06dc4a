//===- LayoutTesting.h - helpers of the reshard planner's tests -*- C++ -*-===//
//
// Layouts built by hand, the kinds of a plan's steps, and an interpreter
// that moves the values of a tensor as a plan's steps say, so that a test
// compares what each device ends with.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TEST_UNIT_LAYOUTTESTING_H
#define SOAP_TEST_UNIT_LAYOUTTESTING_H

#include "soap/layout/Layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace soap::layout::testing {

inline Block block(std::vector<int64_t> offsets, std::vector<int64_t> sizes) {
  return {std::move(offsets), std::move(sizes)};
}

inline Layout partialWhole(const std::vector<int64_t> &shape, int n) {
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  Layout l = Layout::whole(shape, n, all);
  l.partial = Combine::Sum;
  l.tasks.assign(all.begin(), all.end());
  return l;
}

inline std::vector<StepKind> kinds(const ReshardPlan &plan) {
  std::vector<StepKind> k;
  for (const Step &s : plan.steps)
    k.push_back(s.kind);
  return k;
}

inline TensorShape f32(std::vector<int64_t> shape) {
  return {std::move(shape), 4};
}

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

} // namespace soap::layout::testing

#endif // SOAP_TEST_UNIT_LAYOUTTESTING_H
