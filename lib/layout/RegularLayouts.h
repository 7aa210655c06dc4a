//===- RegularLayouts.h - recognizing regular layouts -----------*- C++ -*-===//
//
// Private to lib/layout: the recognizers the reshard planner
// (Planner.cpp, ReshardPlanner.cpp) builds its collectives on.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_LAYOUT_REGULARLAYOUTS_H
#define SOAP_LIB_LAYOUT_REGULARLAYOUTS_H

#include "soap/layout/Layout.h"

#include <optional>
#include <vector>

namespace soap::layout::detail {

/// Groups of devices that each hold equal, contiguous parts of one range
/// along `dim` (alike along the other dimensions), every group with the
/// same number of parts and every part the same size; copies of a part go
/// to different groups. Each group is in the order of its parts.
std::optional<std::vector<std::vector<int>>> partsAlong(const Layout &layout,
                                                        int dim);

/// `layout` with every block of each group extended to the group's range
/// along `dim`.
Layout gathered(const Layout &layout, int dim,
                const std::vector<std::vector<int>> &groups);

/// The devices of `target` that need something they do not hold
/// completely in `held`.
std::vector<int> needing(const Layout &held, const Layout &target);

/// Groups of the devices of a partial layout with identical blocks, each
/// group's partials distinct; every block the same size. None when blocks
/// overlap without being equal or copies of one partial share a block.
std::optional<std::vector<std::vector<int>>>
partialGroups(const Layout &layout);

/// Per dimension, whether every block of `target` takes the same range
/// along it (all false when it holds nothing or partial sums).
std::vector<bool> readAlike(const Layout &target, size_t rank);

/// `target` with every dimension along which all its blocks take the same
/// range given `to`'s range instead (the readers of one column range of a
/// row-split tensor: rows split, all columns).
Layout widened(const Layout &target, const Block &to);

} // namespace soap::layout::detail

#endif // SOAP_LIB_LAYOUT_REGULARLAYOUTS_H
