//===- Machine.h - devices, links and collective costs ----------*- C++ -*-===//
//
// Plain C++ (no MLIR types): the machine the simulator runs a strategy on.
// Devices are numbered 0..N-1 node-major; links are the contention resources
// of the simulator (switch ports, NVLink pairs, a PCIe bus, NIC ports); the
// collective cost models are the alpha-beta formulas of docs/machines.md.
// Machines are read from the JSON files in machines/.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_MACHINE_MACHINE_H
#define SOAP_MACHINE_MACHINE_H

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace soap {

/// Element types a peak FLOP/s can be given for: "f64", "f32", "tf32",
/// "f16", "bf16", "f8", "i8".
const std::vector<std::string> &machineDtypes();
/// Op classes an efficiency can be given for: "matmul", "conv",
/// "elementwise", "reduction", "data_movement" (OpClass names).
const std::vector<std::string> &machineOpClasses();

/// One kind of device (all devices of a machine have the same type).
struct DeviceType {
  std::string name;
  std::string description;
  /// Peak FLOP/s per element type (keys from machineDtypes(); "f32" always
  /// present in a valid machine).
  std::map<std::string, double> peakFlops;
  double memoryBandwidth = 0; ///< bytes/s
  int64_t memoryBytes = 0;    ///< bytes
  double launchOverhead = 0;  ///< seconds per kernel
  /// Whether a device computes while its data moves (GPUs: copy engines and
  /// NCCL on their own streams). When false (an MPI rank on a CPU core,
  /// whose thread makes blocking MPI calls), a transfer or collective also
  /// occupies the devices that take part in it.
  bool overlapsCommunication = true;
  /// Fraction of the roofline that kernels of an op class reach (keys from
  /// machineOpClasses()); 1 where absent.
  std::map<std::string, double> efficiency;

  /// Peak FLOP/s for `dtype` ("f16", or an MLIR element type name such as
  /// "i32"); the f32 peak when the machine gives none for it (a K80 has no
  /// f16 arithmetic and computes f16 at the f32 rate).
  double peakFlopsFor(const std::string &dtype) const;
  /// Efficiency of `opClass`, 1 when the machine gives none.
  double efficiencyFor(const std::string &opClass) const;
};

/// How the devices of one node are connected.
enum class IntraNodeTopology {
  Switch, ///< every device has an out-port and an in-port on a switch
  Mesh,   ///< a direct link for every ordered pair of devices
  Bus,    ///< one bus per node that every transfer inside the node shares
};

enum class CollectiveAlgorithm { Ring, Tree, Auto };

/// Whether a collective over a group that spans nodes runs as one flat
/// schedule, hierarchically (inside the nodes, between them, inside again),
/// or whichever of the two is faster.
enum class Hierarchy { Flat, Hierarchical, Auto };

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  AllToAll
};

/// "switch", "mesh", "bus"; "ring", "tree", "auto"; "all_reduce", ...
const char *topologyName(IntraNodeTopology topology);
/// The kinds of collectives, in the order of CollectiveKind.
const std::vector<CollectiveKind> &collectiveKinds();
const char *algorithmName(CollectiveAlgorithm algorithm);
const char *
hierarchyName(Hierarchy hierarchy); ///< "flat", "hierarchical", "auto"
const char *collectiveName(CollectiveKind kind);

struct IntraNodeSpec {
  IntraNodeTopology topology = IntraNodeTopology::Switch;
  /// bytes/s of one link: a switch port per direction, a mesh link per
  /// direction, or the whole bus.
  double bandwidth = 0;
  /// seconds, one way, of a transfer between two devices of the node.
  double latency = 0;
};

struct InterNodeSpec {
  int nicsPerNode = 1;  ///< device with local index i uses NIC i % nicsPerNode
  double bandwidth = 0; ///< bytes/s of one NIC per direction
  double latency = 0;   ///< seconds, one way, between two nodes
};

/// The value at `x` of a measured curve of (size, seconds) points with
/// increasing sizes: linear between the two nearest points, the first
/// point's time below them; above them, the last two points' slope when
/// `extendSlope` (and there are two), else time proportional to size from
/// the last point. Used for measured collectives and the profile's update
/// times.
double interpolateCurve(const std::vector<std::pair<int64_t, double>> &points,
                        double x, bool extendSlope);

/// Collective times measured on the machine itself (soap-profile --mpi times
/// libsoaprt's collectives, packing included): per kind, (bytes, seconds)
/// points with increasing bytes, `bytes` as Machine::collectiveCost counts
/// them. They replace the alpha-beta formulas for groups of exactly `ranks`
/// devices of one node.
struct MeasuredCollectives {
  int ranks = 0;
  std::map<CollectiveKind, std::vector<std::pair<int64_t, double>>> times;
  /// libsoaprt's send and receive of one message between two ranks of the
  /// node ("send_recv"; the sender's copy, the rendezvous and the
  /// receiver's copy included): (bytes, seconds) points with increasing
  /// bytes. They replace the links' latency and bandwidth for transfers
  /// between two devices of one node.
  std::vector<std::pair<int64_t, double>> sendRecv;

  /// The time of `kind` over `bytes`: linear between the two nearest
  /// points, the smallest point's time below them and the last segment's
  /// slope above them; nothing when `kind` has no points.
  std::optional<double> interpolate(CollectiveKind kind, int64_t bytes) const;
};

struct CollectiveSpec {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// Applies to groups that span nodes with the same number of members on
  /// each; other groups always run flat.
  Hierarchy hierarchical = Hierarchy::Auto;
  /// Optional measured times (machine files written by soap-profile --mpi).
  std::optional<MeasuredCollectives> measured;
};

/// The contents of a machine file, as plain data.
struct MachineSpec {
  std::string name;
  std::string description;
  std::map<std::string, DeviceType> deviceTypes; ///< by name
  std::string deviceType;                        ///< the type of every device
  int nodes = 1;
  int devicesPerNode = 1;
  std::optional<IntraNodeSpec> intraNode; ///< required when devicesPerNode > 1
  std::optional<InterNodeSpec> interNode; ///< required when nodes > 1
  CollectiveSpec collectives;
};

/// The most devices SOAP plans for: a machine file's nodes *
/// devices_per_node, and a pass's devices=N or soap.num_devices.
constexpr int64_t kMaxDevices = 65536;

/// Reads a machine description. On failure returns nothing and sets `error`
/// to a message naming the field and what is wrong with it.
std::optional<MachineSpec> parseMachineSpec(const std::string &jsonText,
                                            std::string &error);
/// Checks the values of a spec (what parseMachineSpec checks beyond JSON
/// types). Returns the problem, or nothing when the spec is valid.
std::optional<std::string> validateMachineSpec(const MachineSpec &spec);
/// Writes a spec in the format parseMachineSpec reads (for soap-profile).
std::string machineSpecToJson(const MachineSpec &spec);

using LinkId = int;

/// The links of a point-to-point route, in order: at most two (a device's
/// switch port up and the peer's down, the sender's NIC out and the
/// receiver's NIC in, one mesh link or one bus). Held in place: the
/// simulator asks for routes hundreds of thousands of times per second.
class Route {
public:
  static constexpr size_t kMaxLinks = 2;
  Route() = default;
  Route(std::initializer_list<LinkId> ids) {
    assert(ids.size() <= kMaxLinks && "a route has at most two links");
    for (LinkId id : ids)
      links_[size_++] = id;
  }
  const LinkId *begin() const { return links_; }
  const LinkId *end() const { return links_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  LinkId operator[](size_t i) const { return links_[i]; }
  bool operator==(const Route &other) const {
    return std::equal(begin(), end(), other.begin(), other.end());
  }

private:
  LinkId links_[kMaxLinks] = {};
  size_t size_ = 0;
};

enum class LinkKind { SwitchUp, SwitchDown, Mesh, Bus, NicOut, NicIn };

/// A contention resource: one transfer at a time at full bandwidth.
struct Link {
  std::string name; ///< "node0/d1->switch", "node2/nic0->net", ...
  LinkKind kind = LinkKind::Bus;
  int node = 0;
  double bandwidth = 0; ///< bytes/s
  double latency = 0;   ///< seconds
};

/// A collective's predicted time and the schedule that gives it.
struct CollectiveCost {
  double time = 0;       ///< seconds
  std::string algorithm; ///< "ring", "hierarchical tree", "pairwise", "none"
};

class Machine {
public:
  /// Builds a machine from JSON text / a file. Errors name the field
  /// (`'inter_node.bandwidth' must be a positive number (bytes/s), got -3`);
  /// load() prefixes them with the path. Never throws.
  static std::optional<Machine> parse(const std::string &jsonText,
                                      std::string &error);
  static std::optional<Machine> load(const std::string &path,
                                     std::string &error);
  /// Builds a machine from a spec (validated first).
  static std::optional<Machine> create(const MachineSpec &spec,
                                       std::string &error);

  /// The first `n` devices of this machine (the simulator's `devices=N`):
  /// ceil(n / devicesPerNode) nodes, the last one possibly partial. Fails
  /// when n < 1 or n exceeds the devices of the machine.
  std::optional<Machine> withDevices(int n, std::string &error) const;

  const MachineSpec &spec() const { return spec_; }
  const std::string &name() const { return spec_.name; }
  const DeviceType &deviceType() const;

  int numDevices() const { return numDevices_; }
  int numNodes() const { return numNodes_; }
  int devicesPerNode() const { return spec_.devicesPerNode; }
  int nodeOf(int device) const { return device / spec_.devicesPerNode; }
  int localIndexOf(int device) const { return device % spec_.devicesPerNode; }
  /// The NIC (on its node) that `device` sends and receives through.
  int nicOf(int device) const;

  const std::vector<Link> &links() const { return links_; }
  const Link &link(LinkId id) const { return links_[id]; }

  /// Links a point-to-point transfer from `src` to `dst` occupies, in order
  /// (empty when src == dst).
  Route route(int src, int dst) const;
  /// What a point-to-point transfer's time depends on: the sum of its
  /// route's latencies and the route's smallest bandwidth (0 and infinity
  /// when src == dst).
  struct PathCost {
    double latency = 0;
    double bandwidth = std::numeric_limits<double>::infinity();
    double time(int64_t bytes) const {
      return latency + static_cast<double>(bytes) / bandwidth;
    }
  };
  PathCost pathCost(int src, int dst) const;
  /// Sum of the route's latencies + bytes / its smallest bandwidth; 0 when
  /// src == dst.
  double transferTime(int64_t bytes, int src, int dst) const {
    return pathCost(src, dst).time(bytes);
  }

  /// Collective costs over `group` (distinct device ids, any order; the
  /// first member is the broadcast root). `bytes` is, as in nccl-tests, the
  /// size of the largest buffer one device holds:
  ///   all-reduce:     the buffer each device reduces (in and out);
  ///   all-gather:     the gathered output (each device contributes bytes/n);
  ///   reduce-scatter: the input of each device (each ends with bytes/n);
  ///   broadcast:      the buffer the root sends;
  ///   all-to-all:     the send buffer of each device (bytes/n to each peer).
  double allReduceTime(int64_t bytes, const std::vector<int> &group) const;
  double allGatherTime(int64_t bytes, const std::vector<int> &group) const;
  double reduceScatterTime(int64_t bytes, const std::vector<int> &group) const;
  double broadcastTime(int64_t bytes, const std::vector<int> &group) const;
  double allToAllTime(int64_t bytes, const std::vector<int> &group) const;
  /// The time and the schedule chosen per the file's "collectives" section:
  /// its measured times where they apply to the group (algorithm
  /// "measured"), else the alpha-beta formulas.
  CollectiveCost collectiveCost(CollectiveKind kind, int64_t bytes,
                                const std::vector<int> &group) const;
  /// The measured time of `kind` over `bytes` for a group of `groupSize`
  /// devices of one node, when the machine file has one for that size.
  std::optional<double> measuredCollectiveTime(CollectiveKind kind,
                                               int64_t bytes,
                                               size_t groupSize) const;
  /// The measured time of a transfer of `bytes` from `src` to `dst`, when
  /// both are devices of one node and the machine file measured
  /// libsoaprt's send and receive (collectives.measured.send_recv).
  std::optional<double> measuredTransferTime(int src, int dst,
                                             int64_t bytes) const;

  /// Links any collective on `group` may occupy (the union of the routes
  /// between its members), sorted, for the simulator's contention.
  std::vector<LinkId> collectiveLinks(const std::vector<int> &group) const;

  /// Bytes one device sends in a ring collective over n devices (rounded
  /// down), `bytes` as above: all-reduce 2(n-1)/n * bytes, all-gather,
  /// reduce-scatter and all-to-all (n-1)/n * bytes.
  static int64_t allReduceBytesPerDevice(int64_t bytes, int n);
  static int64_t allGatherBytesPerDevice(int64_t bytes, int n);
  static int64_t reduceScatterBytesPerDevice(int64_t bytes, int n);
  static int64_t allToAllBytesPerDevice(int64_t bytes, int n);

  /// Bandwidth (bytes/s) and latency (s) of a set of transfers that run at
  /// the same time: every link's bandwidth is shared by the transfers that
  /// use it; the result is the slowest transfer's bandwidth and the largest
  /// route latency. Exposed for tests and for the simulator.
  struct StepCost {
    double bandwidth = 0;
    double latency = 0;
  };
  StepCost concurrentStep(const std::vector<std::pair<int, int>> &hops) const;

private:
  Machine() = default;
  void buildLinks();
  LinkId addLink(std::string name, LinkKind kind, int node, double bandwidth,
                 double latency);
  CollectiveCost flatCollective(CollectiveKind kind, double bytes,
                                const std::vector<int> &sorted, int root) const;
  CollectiveCost
  hierarchicalCollective(CollectiveKind kind, double bytes,
                         const std::map<int, std::vector<int>> &byNode,
                         int root) const;

  MachineSpec spec_;
  int numDevices_ = 0;
  int numNodes_ = 0;
  std::vector<Link> links_;
  // Route tables; -1 where a link does not exist.
  std::vector<LinkId> switchUp_, switchDown_; // by device
  std::vector<LinkId> mesh_; // by node * dpn^2 + localSrc * dpn + localDst
  std::vector<LinkId> bus_;  // by node
  std::vector<LinkId> nicOut_, nicIn_; // by node * nicsPerNode + nic
};

} // namespace soap

#endif // SOAP_MACHINE_MACHINE_H
