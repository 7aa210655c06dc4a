//===- ShardCost.cpp - FLOPs and bytes of one task of an op ---------------===//

#include "soap/cost/ShardCost.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace soap {

int64_t accessExtent(const IndexExpr &expr,
                     const std::vector<int64_t> &shardSizes, int64_t dimSize) {
  if (!expr.isLinear)
    return dimSize >= 0 ? dimSize : 1;
  // Add the terms from the smallest coefficient up, tracking both the span
  // of the values and how many distinct ones there are: copies of the inner
  // range that do not overlap (a strided 1x1 convolution) multiply the count,
  // copies that overlap (a convolution window, a reshape) fill the span.
  std::vector<std::pair<int64_t, int64_t>> steps; // (|coefficient|, extent)
  for (const IndexTerm &term : expr.terms) {
    if (term.loop >= shardSizes.size() || term.coefficient == 0)
      continue;
    steps.emplace_back(std::llabs(term.coefficient),
                       std::max<int64_t>(shardSizes[term.loop], 1));
  }
  std::sort(steps.begin(), steps.end());
  int64_t span = 1, count = 1;
  for (auto [coefficient, extent] : steps) {
    int64_t newSpan = coefficient * (extent - 1) + span;
    if (coefficient >= span)
      count *= extent;
    else if (count == span)
      count = newSpan;
    else
      count = std::min(count * extent, newSpan);
    span = newSpan;
  }
  if (dimSize >= 0)
    count = std::min(count, dimSize);
  return std::max<int64_t>(count, 1);
}

double LoopNest::points(const std::vector<int64_t> &shardSizes) const {
  double points = 1;
  for (size_t l = 0; l < shardSizes.size(); ++l)
    if (l >= lookupLoops.size() || !lookupLoops[l])
      points *= static_cast<double>(std::max<int64_t>(shardSizes[l], 1));
  return points;
}

int64_t accessFootprint(const LoopNest &nest, const TensorAccess &access,
                        const std::vector<int64_t> &shardSizes) {
  int64_t elements = 1;
  for (size_t d = 0; d < access.indices.size(); ++d) {
    int64_t dimSize = d < access.shape.size() ? access.shape[d] : -1;
    elements *= accessExtent(access.indices[d], shardSizes, dimSize);
  }
  // An access reads at most one element per point: a gather moves the rows
  // it looks up, not its table.
  if (!shardSizes.empty())
    elements = static_cast<int64_t>(
        std::min(static_cast<double>(elements), nest.points(shardSizes)));
  return elements;
}

ShardCost shardCost(const LoopNest &nest,
                    const std::vector<int64_t> &shardSizes) {
  ShardCost cost;
  cost.flops = nest.points(shardSizes) * nest.flopsPerIteration;
  for (const TensorAccess &access : nest.accesses) {
    double bytes =
        static_cast<double>(accessFootprint(nest, access, shardSizes)) *
        static_cast<double>(access.elementBytes);
    if (access.role == AccessRole::Read)
      cost.bytesRead += bytes;
    else if (access.role == AccessRole::Write)
      cost.bytesWritten += bytes;
  }
  return cost;
}

} // namespace soap
