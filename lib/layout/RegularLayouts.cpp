//===- RegularLayouts.cpp - recognizing regular layouts -------------------===//
//
// The shapes of layouts that collectives fit (RegularLayouts.h): equal
// parts along a dimension, partial sums over groups, layouts that tile the
// tensor.
//
//===----------------------------------------------------------------------===//

#include "RegularLayouts.h"

#include <algorithm>
#include <map>

namespace soap::layout::detail {

std::optional<std::vector<std::vector<int>>> partsAlong(const Layout &layout,
                                                        int dim) {
  // Blocks alike but for `dim` share a key.
  std::map<std::vector<int64_t>, std::vector<int>> byRest;
  for (int d : layout.holders()) {
    const Block &b = *layout.blocks[d];
    std::vector<int64_t> key;
    for (size_t k = 0; k < b.sizes.size(); ++k)
      if (static_cast<int>(k) != dim) {
        key.push_back(b.offsets[k]);
        key.push_back(b.sizes[k]);
      }
    byRest[key].push_back(d);
  }
  if (byRest.empty())
    return std::nullopt;
  std::vector<std::vector<int>> groups;
  std::optional<size_t> parts;
  std::optional<int64_t> partSize;
  for (auto &[key, devices] : byRest) {
    // Devices by their offset along `dim`.
    std::map<int64_t, std::vector<int>> byOffset;
    for (int d : devices) {
      const Block &b = *layout.blocks[d];
      if (partSize && b.sizes[dim] != *partSize)
        return std::nullopt;
      partSize = b.sizes[dim];
      byOffset[b.offsets[dim]].push_back(d);
    }
    if (parts && byOffset.size() != *parts)
      return std::nullopt;
    parts = byOffset.size();
    if (*parts < 2)
      return std::nullopt;
    size_t copies = byOffset.begin()->second.size();
    int64_t expected = byOffset.begin()->first;
    for (auto &[offset, holders] : byOffset) {
      if (offset != expected || holders.size() != copies)
        return std::nullopt;
      expected += *partSize;
    }
    for (size_t c = 0; c < copies; ++c) {
      std::vector<int> group;
      for (auto &[offset, holders] : byOffset)
        group.push_back(holders[c]);
      groups.push_back(std::move(group));
    }
  }
  return groups;
}

Layout gathered(const Layout &layout, int dim,
                const std::vector<std::vector<int>> &groups) {
  Layout result = layout;
  for (const std::vector<int> &group : groups) {
    const Block &first = *layout.blocks[group.front()];
    int64_t size = first.sizes[dim] * static_cast<int64_t>(group.size());
    for (int d : group) {
      result.blocks[d]->offsets[dim] = first.offsets[dim];
      result.blocks[d]->sizes[dim] = size;
    }
  }
  return result;
}

std::vector<int> needing(const Layout &held, const Layout &target) {
  std::vector<int> devices;
  for (int d = 0; d < target.numDevices(); ++d)
    if (target.blocks[d] && (held.partial || !held.blocks[d] ||
                             !held.blocks[d]->contains(*target.blocks[d])))
      devices.push_back(d);
  return devices;
}

std::optional<std::vector<std::vector<int>>>
partialGroups(const Layout &layout) {
  std::vector<std::vector<int>> groups;
  std::vector<Block> blocks;
  for (int d : layout.holders()) {
    const Block &b = *layout.blocks[d];
    auto it = std::find(blocks.begin(), blocks.end(), b);
    if (it == blocks.end()) {
      for (const Block &other : blocks)
        if (b.overlaps(other))
          return std::nullopt;
      if (!blocks.empty() && blocks.front().sizes != b.sizes)
        return std::nullopt;
      blocks.push_back(b);
      groups.push_back({d});
      continue;
    }
    std::vector<int> &group = groups[it - blocks.begin()];
    for (int other : group)
      if (layout.tasks[other] == layout.tasks[d])
        return std::nullopt;
    group.push_back(d);
  }
  return groups;
}

std::vector<bool> readAlike(const Layout &target, size_t rank) {
  std::vector<bool> alike(rank, false);
  std::vector<int> readers = target.holders();
  if (readers.empty() || target.partial)
    return alike;
  const Block &first = *target.blocks[readers.front()];
  for (size_t dim = 0; dim < rank; ++dim)
    alike[dim] = std::all_of(readers.begin(), readers.end(), [&](int d) {
      return target.blocks[d]->offsets[dim] == first.offsets[dim] &&
             target.blocks[d]->sizes[dim] == first.sizes[dim];
    });
  return alike;
}

Layout widened(const Layout &target, const Block &to) {
  Layout wide = target;
  std::vector<bool> alike = readAlike(target, to.sizes.size());
  for (size_t dim = 0; dim < alike.size(); ++dim)
    if (alike[dim])
      for (std::optional<Block> &block : wide.blocks)
        if (block) {
          block->offsets[dim] = to.offsets[dim];
          block->sizes[dim] = to.sizes[dim];
        }
  return wide;
}

} // namespace soap::layout::detail

namespace soap::layout {

/// Whether the distinct blocks of `count` complete layouts tile the whole
/// tensor without overlapping.
static bool tileEverything(const Layout *const *layouts, size_t count,
                           const TensorShape &tensor) {
  std::vector<Block> distinct;
  int64_t volume = 0;
  for (size_t i = 0; i < count; ++i) {
    const Layout &layout = *layouts[i];
    if (layout.partial)
      return false;
    for (int d : layout.holders()) {
      const Block &b = *layout.blocks[d];
      if (std::find(distinct.begin(), distinct.end(), b) != distinct.end())
        continue;
      for (const Block &other : distinct)
        if (b.overlaps(other))
          return false;
      distinct.push_back(b);
      volume += b.volume();
    }
  }
  return volume == Block::whole(tensor.shape).volume();
}

bool holdsEverything(const Layout &layout, const TensorShape &tensor) {
  const Layout *one = &layout;
  return tileEverything(&one, 1, tensor);
}

bool holdsEverything(const std::vector<Layout> &pieces,
                     const TensorShape &tensor) {
  std::vector<const Layout *> layouts;
  for (const Layout &piece : pieces)
    layouts.push_back(&piece);
  return tileEverything(layouts.data(), layouts.size(), tensor);
}

} // namespace soap::layout
