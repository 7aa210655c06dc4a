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

int64_t accessFootprint(const TensorAccess &access,
                        const std::vector<int64_t> &shardSizes) {
  int64_t elements = 1;
  for (size_t d = 0; d < access.indices.size(); ++d) {
    int64_t dimSize = d < access.shape.size() ? access.shape[d] : -1;
    elements *= accessExtent(access.indices[d], shardSizes, dimSize);
  }
  // An access reads at most one element per iteration: a gather (indices
  // computed from data, so a whole dimension in extent) moves the rows it
  // looks up, not its table.
  if (!shardSizes.empty()) {
    int64_t iterations = 1;
    for (int64_t size : shardSizes)
      iterations *= std::max<int64_t>(size, 1);
    elements = std::min(elements, iterations);
  }
  return elements;
}

ShardCost shardCost(const LoopNest &nest,
                    const std::vector<int64_t> &shardSizes) {
  ShardCost cost;
  double iterations = 1;
  for (int64_t size : shardSizes)
    iterations *= static_cast<double>(size);
  cost.flops = iterations * nest.flopsPerIteration;
  for (const TensorAccess &access : nest.accesses) {
    double bytes = static_cast<double>(accessFootprint(access, shardSizes)) *
                   static_cast<double>(access.elementBytes);
    if (access.role == AccessRole::Read)
      cost.bytesRead += bytes;
    else if (access.role == AccessRole::Write)
      cost.bytesWritten += bytes;
  }
  return cost;
}

} // namespace soap
