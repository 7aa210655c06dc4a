//===- Layout.cpp - distributed tensor layouts ----------------------------===//
//
// Blocks, layouts and the steps of a reshard plan (the planner itself:
// Planner.cpp and ReshardPlanner.cpp).
//
//===----------------------------------------------------------------------===//

#include "soap/layout/Layout.h"

#include <algorithm>
#include <sstream>
#include <tuple>

namespace soap::layout {

//===----------------------------------------------------------------------===//
// Blocks and layouts
//===----------------------------------------------------------------------===//

Block Block::whole(const std::vector<int64_t> &shape) {
  return {std::vector<int64_t>(shape.size(), 0), shape};
}

int64_t Block::volume() const {
  int64_t v = 1;
  for (int64_t s : sizes)
    v *= s;
  return v;
}

bool Block::contains(const Block &inner) const {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (inner.offsets[d] < offsets[d] ||
        inner.offsets[d] + inner.sizes[d] > offsets[d] + sizes[d])
      return false;
  return true;
}

bool Block::overlaps(const Block &other) const {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (std::max(offsets[d], other.offsets[d]) >=
        std::min(offsets[d] + sizes[d], other.offsets[d] + other.sizes[d]))
      return false;
  return true;
}

std::optional<Block> Block::intersect(const Block &other) const {
  Block common;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t lo = std::max(offsets[d], other.offsets[d]);
    int64_t hi =
        std::min(offsets[d] + sizes[d], other.offsets[d] + other.sizes[d]);
    if (hi <= lo)
      return std::nullopt;
    common.offsets.push_back(lo);
    common.sizes.push_back(hi - lo);
  }
  return common;
}

void Block::extendTo(const Block &other) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    int64_t end =
        std::max(offsets[i] + sizes[i], other.offsets[i] + other.sizes[i]);
    offsets[i] = std::min(offsets[i], other.offsets[i]);
    sizes[i] = end - offsets[i];
  }
}

std::string Block::str() const {
  std::ostringstream os;
  os << '[';
  for (size_t d = 0; d < sizes.size(); ++d)
    os << (d ? "," : "") << offsets[d] << '+' << sizes[d];
  os << ']';
  return os.str();
}

const char *combineName(Combine combine) {
  switch (combine) {
  case Combine::Sum:
    return "sum";
  case Combine::Max:
    return "max";
  case Combine::Min:
    return "min";
  case Combine::Mean:
    return "mean";
  }
  return "sum";
}

std::vector<int> Layout::holders() const {
  std::vector<int> devices;
  for (int d = 0; d < numDevices(); ++d)
    if (blocks[d])
      devices.push_back(d);
  return devices;
}

std::string Layout::str() const {
  std::ostringstream os;
  if (partial)
    os << "partial " << combineName(*partial) << ' ';
  os << '{';
  bool first = true;
  for (int d = 0; d < numDevices(); ++d) {
    if (!blocks[d])
      continue;
    os << (first ? "" : " ") << d << ':' << blocks[d]->str();
    if (partial && d < static_cast<int>(tasks.size()))
      os << "#" << tasks[d];
    first = false;
  }
  os << '}';
  return os.str();
}

Layout Layout::whole(const std::vector<int64_t> &shape, int numDevices,
                     const std::vector<int> &devices) {
  Layout layout;
  layout.blocks.resize(numDevices);
  for (int d : devices)
    layout.blocks[d] = Block::whole(shape);
  return layout;
}

Layout Layout::everywhere(const std::vector<int64_t> &shape, int numDevices) {
  Layout layout;
  layout.blocks.assign(numDevices, Block::whole(shape));
  return layout;
}

Layout Layout::split(const std::vector<int64_t> &shape, int numDevices, int dim,
                     const std::vector<int> &group) {
  Layout layout;
  layout.blocks.resize(numDevices);
  int64_t part = shape[dim] / static_cast<int64_t>(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    Block block = Block::whole(shape);
    block.offsets[dim] = static_cast<int64_t>(i) * part;
    block.sizes[dim] = part;
    layout.blocks[group[i]] = block;
  }
  return layout;
}

int64_t TensorShape::bytes() const {
  return Block::whole(shape).volume() * elementBytes;
}

const char *stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Slice:
    return "slice";
  case StepKind::AllReduce:
    return "all_reduce";
  case StepKind::ReduceScatter:
    return "reduce_scatter";
  case StepKind::AllGather:
    return "all_gather";
  case StepKind::AllToAll:
    return "all_to_all";
  case StepKind::Broadcast:
    return "broadcast";
  case StepKind::SendRecv:
    return "send_recv";
  case StepKind::HaloExchange:
    return "halo_exchange";
  case StepKind::SendRecvCombine:
    return "send_recv_combine";
  case StepKind::LocalSum:
    return "local_sum";
  case StepKind::AllReduceWhole:
    return "all_reduce_whole";
  }
  return "?";
}

std::string Step::str() const {
  std::ostringstream os;
  os << stepKindName(kind);
  if (kind == StepKind::AllReduce || kind == StepKind::ReduceScatter ||
      kind == StepKind::LocalSum || kind == StepKind::SendRecvCombine ||
      kind == StepKind::AllReduceWhole)
    os << ' ' << combineName(combine);
  if (dim >= 0)
    os << " dim " << dim;
  if (fromDim >= 0)
    os << " from dim " << fromDim;
  if (root >= 0)
    os << " root " << root;
  for (const std::vector<int> &group : groups) {
    os << " [";
    for (size_t i = 0; i < group.size(); ++i)
      os << (i ? "," : "") << group[i];
    os << ']';
  }
  for (const Transfer &t : transfers)
    os << ' ' << t.from << "->" << t.to << ' ' << t.block.str();
  os << " bytes " << bytes;
  return os.str();
}

std::string ReshardPlan::str() const {
  std::string text;
  for (const Step &step : steps)
    text += step.str() + "\n";
  return text;
}

bool covers(const Layout &held, const Layout &target) {
  if (held.partial)
    return false;
  for (int d = 0; d < target.numDevices(); ++d)
    if (target.blocks[d] &&
        (!held.blocks[d] || *held.blocks[d] != *target.blocks[d]))
      return false;
  return true;
}

bool contains(const Layout &held, const Layout &target) {
  if (held.partial)
    return false;
  for (int d = 0; d < target.numDevices(); ++d)
    if (target.blocks[d] &&
        (!held.blocks[d] || !held.blocks[d]->contains(*target.blocks[d])))
      return false;
  return true;
}

Regrouping canonicalPieces(const std::vector<Layout> &pieces) {
  Regrouping regrouped;
  if (pieces.empty())
    return regrouped;
  int numDevices = pieces.front().numDevices();
  bool partial = std::any_of(pieces.begin(), pieces.end(),
                             [](const Layout &piece) { return piece.partial; });
  if (partial) {
    regrouped.pieces = pieces;
    for (size_t k = 0; k < pieces.size(); ++k) {
      regrouped.from.emplace_back(numDevices, -1);
      for (int d = 0; d < numDevices; ++d)
        if (pieces[k].blocks[d])
          regrouped.from[k][d] = static_cast<int>(k);
    }
    return regrouped;
  }
  auto before = [](const Block &a, const Block &b) {
    return std::tie(a.offsets, a.sizes) < std::tie(b.offsets, b.sizes);
  };
  for (int d = 0; d < numDevices; ++d) {
    // The device's distinct blocks in order, each from its first piece.
    std::vector<std::pair<Block, int>> held;
    for (size_t p = 0; p < pieces.size(); ++p) {
      const std::optional<Block> &block = pieces[p].blocks[d];
      if (block && std::none_of(held.begin(), held.end(),
                                [&](auto &h) { return h.first == *block; }))
        held.emplace_back(*block, static_cast<int>(p));
    }
    std::stable_sort(held.begin(), held.end(), [&](auto &a, auto &b) {
      return before(a.first, b.first);
    });
    for (size_t k = 0; k < held.size(); ++k) {
      if (k == regrouped.pieces.size()) {
        regrouped.pieces.emplace_back();
        regrouped.pieces.back().blocks.resize(numDevices);
        regrouped.from.emplace_back(numDevices, -1);
      }
      regrouped.pieces[k].blocks[d] = held[k].first;
      regrouped.from[k][d] = held[k].second;
    }
  }
  return regrouped;
}

std::optional<SharedCompletion>
completeSharedPartials(const std::vector<Layout> &pieces) {
  if (pieces.size() < 2 ||
      std::any_of(pieces.begin(), pieces.end(),
                  [](const Layout &piece) { return !piece.partial; }))
    return std::nullopt;
  int numDevices = pieces.front().numDevices();
  SharedCompletion done;
  auto groupOf = [&](const Block &block) -> int {
    for (size_t g = 0; g < done.groups.size(); ++g)
      if (done.groups[g].block == block)
        return static_cast<int>(g);
    return -1;
  };
  for (size_t p = 0; p < pieces.size(); ++p)
    for (int d = 0; d < numDevices; ++d) {
      const std::optional<Block> &block = pieces[p].blocks[d];
      if (!block)
        continue;
      int g = groupOf(*block);
      if (g < 0) {
        for (const SharedCompletion::Group &other : done.groups)
          if (other.block.overlaps(*block))
            return std::nullopt;
        g = static_cast<int>(done.groups.size());
        done.groups.push_back({*block, {}, {}});
      }
      SharedCompletion::Group &group = done.groups[g];
      group.partials.emplace_back(static_cast<int>(p), d);
      if (std::find(group.devices.begin(), group.devices.end(), d) ==
          group.devices.end())
        group.devices.push_back(d);
    }
  for (SharedCompletion::Group &group : done.groups) {
    std::sort(group.devices.begin(), group.devices.end());
    if (group.devices.size() < 2)
      group.devices.clear();
  }
  // The complete pieces: each device's blocks once, regrouped.
  std::vector<Layout> complete = pieces;
  for (Layout &piece : complete) {
    piece.partial.reset();
    piece.tasks.clear();
  }
  Regrouping regrouped = canonicalPieces(complete);
  for (size_t k = 0; k < regrouped.pieces.size(); ++k) {
    std::vector<int> groups(numDevices, -1);
    for (int d = 0; d < numDevices; ++d)
      if (const std::optional<Block> &block = regrouped.pieces[k].blocks[d])
        groups[d] = groupOf(*block);
    done.groupOf.push_back(std::move(groups));
  }
  done.pieces = std::move(regrouped.pieces);
  return done;
}

std::optional<Layout> combinedLayout(const std::vector<Layout> &pieces) {
  if (pieces.empty())
    return std::nullopt;
  bool partial = pieces.front().partial.has_value();
  int numDevices = pieces.front().numDevices();
  Layout combined;
  combined.blocks.resize(numDevices);
  std::vector<int64_t> volume(numDevices, 0);
  for (const Layout &piece : pieces) {
    if (piece.partial.has_value() != partial ||
        piece.numDevices() != numDevices)
      return std::nullopt;
    for (int d = 0; d < numDevices; ++d) {
      if (!piece.blocks[d])
        continue;
      const Block &block = *piece.blocks[d];
      std::optional<Block> &mine = combined.blocks[d];
      if (partial) {
        if (mine && *mine != block)
          return std::nullopt;
        mine = block;
        continue;
      }
      volume[d] += block.volume();
      if (!mine) {
        mine = block;
        continue;
      }
      mine->extendTo(block);
    }
  }
  if (!partial)
    for (int d = 0; d < numDevices; ++d)
      if (combined.blocks[d] && combined.blocks[d]->volume() != volume[d])
        return std::nullopt;
  return combined;
}

bool isGridLayout(const Layout &held, const std::vector<int64_t> &shape) {
  const Block *first = nullptr;
  for (const std::optional<Block> &block : held.blocks)
    if (block && !first)
      first = &*block;
  if (!first || first->sizes.size() != shape.size())
    return false;
  int64_t cells = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (first->sizes[i] <= 0 || shape[i] % first->sizes[i] != 0)
      return false;
    cells *= shape[i] / first->sizes[i];
  }
  std::vector<bool> covered(cells, false);
  for (const std::optional<Block> &block : held.blocks) {
    if (!block)
      continue;
    if (block->sizes != first->sizes)
      return false;
    int64_t cell = 0;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (block->offsets[i] % block->sizes[i] != 0)
        return false;
      cell = cell * (shape[i] / first->sizes[i]) +
             block->offsets[i] / block->sizes[i];
    }
    covered[cell] = true;
  }
  return std::all_of(covered.begin(), covered.end(), [](bool c) { return c; });
}

Layout nonzeroPart(const Layout &target, const std::vector<Layout> &pieces) {
  std::optional<Block> bounds;
  for (const Layout &piece : pieces)
    for (const std::optional<Block> &block : piece.blocks) {
      if (!block)
        continue;
      if (bounds)
        bounds->extendTo(*block);
      else
        bounds = block;
    }
  Layout part;
  part.blocks.resize(target.numDevices());
  for (int d = 0; d < target.numDevices(); ++d)
    if (target.blocks[d] && bounds)
      part.blocks[d] = target.blocks[d]->intersect(*bounds);
  return part;
}

Layout completedZerosElsewhere(const std::vector<Layout> &pieces,
                               const std::vector<int64_t> &shape) {
  size_t numDevices = pieces.empty() ? 0 : pieces.front().blocks.size();
  Layout around;
  around.blocks.resize(numDevices);
  for (const Layout &piece : pieces)
    for (size_t d = 0; d < numDevices; ++d) {
      const std::optional<Block> &block = piece.blocks[d];
      if (!block)
        continue;
      std::optional<Block> &box = around.blocks[d];
      if (box)
        box->extendTo(*block);
      else
        box = *block;
    }
  // Dimensions along which every holder has the same range are not split.
  for (size_t i = 0; i < shape.size(); ++i) {
    const Block *first = nullptr;
    bool same = true;
    for (const std::optional<Block> &box : around.blocks) {
      if (!box)
        continue;
      same &= !first || (first->offsets[i] == box->offsets[i] &&
                         first->sizes[i] == box->sizes[i]);
      if (!first)
        first = &*box;
    }
    if (same)
      for (std::optional<Block> &box : around.blocks)
        if (box) {
          box->offsets[i] = 0;
          box->sizes[i] = shape[i];
        }
  }
  std::vector<Block> distinct;
  for (const std::optional<Block> &box : around.blocks)
    if (box &&
        std::find(distinct.begin(), distinct.end(), *box) == distinct.end())
      distinct.push_back(*box);
  bool tiles = !distinct.empty();
  int64_t covered = 0;
  for (size_t i = 0; i < distinct.size() && tiles; ++i) {
    tiles &= distinct[i].sizes == distinct.front().sizes;
    for (size_t j = i + 1; j < distinct.size() && tiles; ++j)
      tiles &= !distinct[i].overlaps(distinct[j]);
    covered += distinct[i].volume();
  }
  if (tiles && covered == Block::whole(shape).volume())
    return around;
  return Layout::everywhere(shape, static_cast<int>(numDevices));
}

bool keptAcrossSteps(const Layout &held) {
  if (held.partial)
    return false;
  const Block *first = nullptr;
  bool split = false, subset = false;
  for (const std::optional<Block> &block : held.blocks) {
    if (!block) {
      subset = true;
      continue;
    }
    if (!first)
      first = &*block;
    else if (block->sizes != first->sizes)
      return false;
    else
      split |= block->offsets != first->offsets;
  }
  if (!first)
    return false;
  if (split)
    return true;
  return subset && std::all_of(first->offsets.begin(), first->offsets.end(),
                               [](int64_t o) { return o == 0; });
}

bool initAddsLocally(const Layout &init, const Layout &blocks) {
  std::vector<int> holders = blocks.holders();
  if (init.partial) {
    std::vector<int64_t> partials;
    for (size_t d = 0; d < blocks.blocks.size(); ++d) {
      if (init.blocks[d].has_value() != blocks.blocks[d].has_value() ||
          (init.blocks[d] && !(*init.blocks[d] == *blocks.blocks[d])))
        return false;
      if (init.blocks[d])
        partials.push_back(init.tasks[d]);
    }
    std::sort(partials.begin(), partials.end());
    return std::adjacent_find(partials.begin(), partials.end()) ==
           partials.end();
  }
  for (int d : holders)
    if (!init.blocks[d] || !blocks.blocks[d]->contains(*init.blocks[d]))
      return false;
  for (size_t i = 0; i < holders.size(); ++i) {
    const Block &block = *blocks.blocks[holders[i]];
    bool firstOfGroup = true;
    for (size_t j = 0; j < i; ++j)
      firstOfGroup &= !(*blocks.blocks[holders[j]] == block);
    if (!firstOfGroup)
      continue;
    int64_t covered = 0;
    std::vector<const Block *> parts;
    for (size_t j = i; j < holders.size(); ++j) {
      if (!(*blocks.blocks[holders[j]] == block))
        continue;
      const Block &part = *init.blocks[holders[j]];
      for (const Block *other : parts)
        if (other->overlaps(part))
          return false;
      parts.push_back(&part);
      covered += part.volume();
    }
    if (covered != block.volume())
      return false;
  }
  return true;
}

bool scatterRunsWhole(int64_t tableBytes, int64_t readBytes) {
  return tableBytes > readBytes;
}

} // namespace soap::layout
