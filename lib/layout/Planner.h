//===- Planner.h - the steps of one reshard ---------------------*- C++ -*-===//
//
// Private to lib/layout: the planner of the collectives, transfers and local
// steps that take a tensor's pieces to one target layout (Planner.cpp).
// planReshard (ReshardPlanner.cpp) runs it on the target and on variants of
// it (the readers' shared range widened or narrowed, collectives off) and
// keeps the plan that moves least.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_LAYOUT_PLANNER_H
#define SOAP_LIB_LAYOUT_PLANNER_H

#include "soap/layout/Layout.h"

#include <optional>
#include <vector>

namespace soap::layout::detail {

/// Plans one target: a piece that covers it (a local slice), partials
/// combined (all-reduce, reduce-scatter, local sums, or overlaps sent and
/// summed), then the collectives that re-split or gather a regular layout
/// (all-to-all, all-gather, broadcast) and, for what they leave missing,
/// point-to-point transfers; the whole tensor all-reduced where nothing
/// else fits.
class Planner {
public:
  Planner(const TensorShape &tensor, const std::vector<Layout> &pieces,
          const Layout &target, bool zerosElsewhere, bool collectives = true)
      : tensor(tensor), pieces(pieces), target(target),
        zerosElsewhere(zerosElsewhere), collectives(collectives) {}

  ReshardPlan run();

private:
  /// Appends the step that combines partials, or that re-splits them
  /// straight into the target.
  void combine(Layout &current);
  bool tryAllToAll(const Layout &current);
  bool tryAllGather(Layout &current);
  bool tryBroadcast(Layout &current);
  /// Point-to-point transfers of what each reader misses, from the pieces
  /// `sourcePieces` (none: from the last step's result `current`).
  bool trySendRecv(const Layout &current, const std::vector<int> &sourcePieces);
  /// Partial results in blocks that overlap without being equal: the
  /// overlaps sent to the target's devices and combined there, when that
  /// moves less than the whole tensor (SendRecvCombine).
  bool trySendRecvCombine(Layout &current);
  void allReduceWhole();
  /// Each device's target block inside a complete block it holds in some
  /// piece (copies earlier readers made in other layouts): local copies,
  /// nothing moves.
  bool tryLocalParts();

  void push(Step step) { plan.steps.push_back(std::move(step)); }
  /// The LocalSum step of several partial pieces, when each device holds
  /// one block of them all (of one shape) and two devices hold either the
  /// same partials (copies) or none in common.
  std::optional<Step> localSums() const;

  const TensorShape &tensor;
  const std::vector<Layout> &pieces;
  const Layout &target;
  bool zerosElsewhere;
  /// False: no all-to-all, all-gather or broadcast of a tensor held
  /// whole; what is missing moves point to point.
  bool collectives;
  ReshardPlan plan;
};

} // namespace soap::layout::detail

#endif // SOAP_LIB_LAYOUT_PLANNER_H
