//===- Machine.cpp - devices, links and routes ----------------------------===//
//
// Links are numbered node by node: the node's own links (switch ports, mesh
// links or its bus), then its NIC ports when the machine spans more than one
// node. A route between nodes goes out of the sender's NIC and into the
// receiver's NIC; the fabric between NICs is non-blocking.
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace soap {

std::optional<Machine> Machine::create(const MachineSpec &spec,
                                       std::string &error) {
  if (std::optional<std::string> problem = validateMachineSpec(spec)) {
    error = *problem;
    return std::nullopt;
  }
  Machine machine;
  machine.spec_ = spec;
  machine.numDevices_ = spec.nodes * spec.devicesPerNode;
  machine.buildLinks();
  return machine;
}

std::optional<Machine> Machine::parse(const std::string &jsonText,
                                      std::string &error) {
  std::optional<MachineSpec> spec = parseMachineSpec(jsonText, error);
  if (!spec)
    return std::nullopt;
  return create(*spec, error);
}

std::optional<Machine> Machine::load(const std::string &path,
                                     std::string &error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = path + ": cannot open the file: " + std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << file.rdbuf();
  std::optional<Machine> machine = parse(text.str(), error);
  if (!machine)
    error = path + ": " + error;
  return machine;
}

std::optional<Machine> Machine::withDevices(int n, std::string &error) const {
  int available = spec_.nodes * spec_.devicesPerNode;
  if (n < 1 || n > available) {
    error = "devices=" + std::to_string(n) + " is out of range: machine '" +
            spec_.name + "' has " + std::to_string(available) + " devices (" +
            std::to_string(spec_.nodes) + " nodes x " +
            std::to_string(spec_.devicesPerNode) + ")";
    return std::nullopt;
  }
  Machine machine = *this;
  machine.numDevices_ = n;
  machine.buildLinks();
  return machine;
}

const DeviceType &Machine::deviceType() const {
  return spec_.deviceTypes.at(spec_.deviceType);
}

int Machine::nicOf(int device) const {
  int nics = spec_.interNode ? spec_.interNode->nicsPerNode : 1;
  return localIndexOf(device) % nics;
}

LinkId Machine::addLink(std::string name, LinkKind kind, int node,
                        double bandwidth, double latency) {
  links_.push_back({std::move(name), kind, node, bandwidth, latency});
  return static_cast<LinkId>(links_.size() - 1);
}

void Machine::buildLinks() {
  const int dpn = spec_.devicesPerNode;
  numNodes_ = (numDevices_ + dpn - 1) / dpn;
  links_.clear();
  switchUp_.assign(numDevices_, -1);
  switchDown_.assign(numDevices_, -1);
  const bool meshed =
      spec_.intraNode && spec_.intraNode->topology == IntraNodeTopology::Mesh;
  mesh_.assign(meshed ? static_cast<size_t>(numNodes_) * dpn * dpn : 0, -1);
  bus_.assign(numNodes_, -1);
  const int nics = spec_.interNode ? spec_.interNode->nicsPerNode : 0;
  nicOut_.assign(static_cast<size_t>(numNodes_) * nics, -1);
  nicIn_.assign(static_cast<size_t>(numNodes_) * nics, -1);

  auto dev = [](int d) { return "d" + std::to_string(d); };
  for (int node = 0; node < numNodes_; ++node) {
    const std::string prefix = "node" + std::to_string(node) + "/";
    const int first = node * dpn;
    const int last = std::min(numDevices_, first + dpn); // exclusive
    if (spec_.intraNode && last - first > 1) {
      const IntraNodeSpec &intra = *spec_.intraNode;
      switch (intra.topology) {
      case IntraNodeTopology::Switch:
        // A transfer crosses two ports; each carries half of the latency so
        // that a route's latency is the file's.
        for (int d = first; d < last; ++d) {
          switchUp_[d] =
              addLink(prefix + dev(d) + "->switch", LinkKind::SwitchUp, node,
                      intra.bandwidth, intra.latency / 2);
          switchDown_[d] =
              addLink(prefix + "switch->" + dev(d), LinkKind::SwitchDown, node,
                      intra.bandwidth, intra.latency / 2);
        }
        break;
      case IntraNodeTopology::Mesh:
        for (int a = first; a < last; ++a)
          for (int b = first; b < last; ++b)
            if (a != b)
              mesh_[(static_cast<size_t>(node) * dpn + (a - first)) * dpn +
                    (b - first)] =
                  addLink(prefix + dev(a) + "->" + dev(b), LinkKind::Mesh, node,
                          intra.bandwidth, intra.latency);
        break;
      case IntraNodeTopology::Bus:
        bus_[node] = addLink(prefix + "bus", LinkKind::Bus, node,
                             intra.bandwidth, intra.latency);
        break;
      }
    }
    if (spec_.interNode && numNodes_ > 1) {
      const InterNodeSpec &inter = *spec_.interNode;
      for (int nic = 0; nic < nics; ++nic) {
        std::string name = prefix + "nic" + std::to_string(nic);
        nicOut_[node * nics + nic] =
            addLink(name + "->net", LinkKind::NicOut, node, inter.bandwidth,
                    inter.latency / 2);
        nicIn_[node * nics + nic] =
            addLink(prefix + "net->nic" + std::to_string(nic), LinkKind::NicIn,
                    node, inter.bandwidth, inter.latency / 2);
      }
    }
  }
}

Route Machine::route(int src, int dst) const {
  assert(src >= 0 && src < numDevices_ && dst >= 0 && dst < numDevices_ &&
         "device out of range");
  if (src == dst)
    return {};
  const int srcNode = nodeOf(src), dstNode = nodeOf(dst);
  if (srcNode != dstNode) {
    const int nics = spec_.interNode->nicsPerNode;
    return {nicOut_[srcNode * nics + nicOf(src)],
            nicIn_[dstNode * nics + nicOf(dst)]};
  }
  const int dpn = spec_.devicesPerNode;
  switch (spec_.intraNode->topology) {
  case IntraNodeTopology::Switch:
    return {switchUp_[src], switchDown_[dst]};
  case IntraNodeTopology::Mesh:
    return {
        mesh_[(static_cast<size_t>(srcNode) * dpn + localIndexOf(src)) * dpn +
              localIndexOf(dst)]};
  case IntraNodeTopology::Bus:
    return {bus_[srcNode]};
  }
  return {};
}

Machine::PathCost Machine::pathCost(int src, int dst) const {
  PathCost cost;
  for (LinkId id : route(src, dst)) {
    cost.latency += links_[id].latency;
    cost.bandwidth = std::min(cost.bandwidth, links_[id].bandwidth);
  }
  return cost;
}

Machine::StepCost
Machine::concurrentStep(const std::vector<std::pair<int, int>> &hops) const {
  StepCost step;
  step.bandwidth = std::numeric_limits<double>::infinity();
  std::vector<int> users(links_.size(), 0);
  std::vector<Route> routes;
  routes.reserve(hops.size());
  for (const auto &[src, dst] : hops) {
    routes.push_back(route(src, dst));
    for (LinkId id : routes.back())
      ++users[id];
  }
  for (const Route &path : routes) {
    double latency = 0;
    for (LinkId id : path) {
      latency += links_[id].latency;
      step.bandwidth =
          std::min(step.bandwidth, links_[id].bandwidth / users[id]);
    }
    step.latency = std::max(step.latency, latency);
  }
  return step;
}

std::vector<LinkId>
Machine::collectiveLinks(const std::vector<int> &group) const {
  std::vector<char> used(links_.size(), 0);
  for (int src : group)
    for (int dst : group)
      for (LinkId id : route(src, dst))
        used[id] = 1;
  std::vector<LinkId> result;
  for (LinkId id = 0; id < static_cast<LinkId>(used.size()); ++id)
    if (used[id])
      result.push_back(id);
  return result;
}

} // namespace soap
