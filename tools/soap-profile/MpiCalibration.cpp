//===- MpiCalibration.cpp - calibrate cpu-local.json under mpirun ---------===//

#include "MpiCalibration.h"
#include "CalibrationMath.h"
#include "MachineFiles.h"

#include "soap/Runtime/Runtime.h"
#include "soap/machine/Machine.h"
#include "soap/support/AtomicFile.h"

#include "Comm.h" // libsoaprt's MPI state, which its collectives use

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <unistd.h>
#include <vector>

namespace soap::profile {

namespace {

/// Ends every rank when an MPI call fails, naming the call and the rank.
class MpiChecker {
public:
  int rank = -1;
  void operator()(int code, const char *call) const {
    if (code == MPI_SUCCESS)
      return;
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, message, &length) != MPI_SUCCESS)
      std::snprintf(message, sizeof(message), "error code %d", code);
    std::string name(call, std::strcspn(call, "("));
    std::fprintf(stderr, "soap-profile: rank %d: %s failed: %s\n", rank,
                 name.c_str(), message);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }
};
MpiChecker checkMpi;
#define MPI_CHECK(call) checkMpi((call), #call)

/// Repetitions for a message of `bytes`: about 256 MiB moved, 5 to 1000.
int repetitionsFor(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>(
      (int64_t(256) << 20) / std::max<int64_t>(bytes, 1), 5, 1000));
}

/// Waits for every rank without spinning, so that a rank measuring alone
/// has its core (and the memory system) to itself.
void quietBarrier() {
  MPI_Request request;
  MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  int done = 0;
  while (true) {
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

/// Passes of the point-to-point and collective measurements, each size's
/// fastest pass kept, with kPassGap between passes: this VM's host slows the
/// whole machine down for about five seconds at a time, which would
/// otherwise price every message and collective of the file at up to
/// several times its cost (a 4 MiB all-reduce measured 2.33 ms in one
/// calibration, 0.55 ms in the next).
constexpr int kPasses = 4;
constexpr std::chrono::milliseconds kPassGap(2500);

/// Waits for every rank, then for kPassGap, without spinning; the ranks
/// leave it together.
void pauseBetweenPasses() {
  quietBarrier();
  std::this_thread::sleep_for(kPassGap);
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/// One-way time of a message of `bytes` from `a` to `b` (half the median
/// round trip), known on rank `a`; other ranks return 0.
double pingPong(int rank, int a, int b, int64_t bytes,
                std::vector<char> &buffer) {
  int count = static_cast<int>(bytes);
  int reps = repetitionsFor(bytes);
  int warmup = std::max(2, reps / 10);
  std::vector<double> times;
  for (int i = 0; i < warmup + reps; ++i) {
    if (rank == a) {
      double start = MPI_Wtime();
      MPI_CHECK(MPI_Send(buffer.data(), count, MPI_BYTE, b, 1, MPI_COMM_WORLD));
      MPI_CHECK(MPI_Recv(buffer.data(), count, MPI_BYTE, b, 2, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
      if (i >= warmup)
        times.push_back((MPI_Wtime() - start) / 2);
    } else if (rank == b) {
      MPI_CHECK(MPI_Recv(buffer.data(), count, MPI_BYTE, a, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
      MPI_CHECK(MPI_Send(buffer.data(), count, MPI_BYTE, a, 2, MPI_COMM_WORLD));
    }
  }
  return rank == a ? median(times) : 0;
}

/// Median over `reps` timed calls of `call` (after `warmup` untimed ones),
/// each started together behind a barrier and counted as the slowest
/// rank's time, `after` run untimed after each; the same result on every
/// rank.
template <typename Call, typename After>
double slowestRankMedian(int warmup, int reps, Call call, After after) {
  std::vector<double> times;
  for (int i = 0; i < warmup + reps; ++i) {
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double start = MPI_Wtime();
    call();
    if (i >= warmup)
      times.push_back(MPI_Wtime() - start);
    after();
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, times.data(),
                          static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD));
  return median(times);
}

template <typename Call>
double slowestRankMedian(int warmup, int reps, Call call) {
  return slowestRankMedian(warmup, reps, call, [] {});
}

/// Time per message when every rank sends `bytes` to the next rank and
/// receives from the previous one at the same time (a ring step): what a
/// ring collective's step costs. The slowest rank's median, on every rank.
double ringStep(int rank, int size, int64_t bytes, std::vector<char> &send,
                std::vector<char> &receive) {
  int count = static_cast<int>(bytes);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  int reps = repetitionsFor(bytes);
  return slowestRankMedian(std::max(2, reps / 10), reps, [&] {
    MPI_CHECK(MPI_Sendrecv(send.data(), count, MPI_BYTE, next, 3,
                           receive.data(), count, MPI_BYTE, previous, 3,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  });
}

/// Median time of MPI_Allreduce (f32 sum) of `bytes` per rank, taken as the
/// slowest rank's time of each call; the same on every rank.
double allReduce(int64_t bytes, std::vector<float> &send,
                 std::vector<float> &receive) {
  int count = static_cast<int>(std::max<int64_t>(bytes / 4, 1));
  int reps = std::clamp(repetitionsFor(bytes) / 2, 3, 500);
  return slowestRankMedian(std::max(2, reps / 10), reps, [&] {
    MPI_CHECK(MPI_Allreduce(send.data(), receive.data(), count, MPI_FLOAT,
                            MPI_SUM, MPI_COMM_WORLD));
  });
}

/// Rows of 1 KiB (256 f32): the block size of the reshards that
/// libsoaprt's collectives reorder around the MPI call (a [rows, columns]
/// tensor split along one dimension, regathered or resplit along the
/// other).
constexpr int64_t kRowElements = 256;

/// libsoaprt's collective of `kind` over every rank, the way an executable
/// calls it, at about `bytes` as Machine::collectiveCost counts them
/// (rounded down to whole rows of n blocks; at least one element per
/// block). Returns the bytes actually used (0: too small to measure) and
/// sets `seconds` to the slowest rank's median time per call.
int64_t timeRuntimeCollective(CollectiveKind kind, int64_t bytes,
                              const std::vector<int64_t> &group,
                              std::vector<float> &in, std::vector<float> &out,
                              double &seconds) {
  int64_t n = static_cast<int64_t>(group.size());
  int64_t elements = bytes / 4;
  // Per-rank blocks of `chunk` elements in `outer` rows.
  int64_t perBlock = kind == CollectiveKind::AllReduce ||
                             kind == CollectiveKind::Broadcast
                         ? elements
                         : elements / n;
  if (perBlock < 1)
    return 0;
  int64_t chunk = std::min(kRowElements, perBlock);
  int64_t outer = perBlock / chunk;
  const int64_t *members = group.data();
  std::function<void()> call;
  int64_t used = 0;
  switch (kind) {
  case CollectiveKind::AllReduce:
    used = elements * 4;
    call = [&, elements] {
      soaprt_all_reduce(in.data(), out.data(), elements, SOAPRT_F32,
                        SOAPRT_SUM, members, n);
    };
    break;
  case CollectiveKind::Broadcast:
    used = elements * 4;
    call = [&, elements] {
      soaprt_broadcast(in.data(), out.data(), elements, SOAPRT_F32,
                       members[0], members, n);
    };
    break;
  case CollectiveKind::AllGather: // the gathered output
    used = n * outer * chunk * 4;
    call = [&, outer, chunk] {
      soaprt_all_gather(in.data(), out.data(), outer, chunk, SOAPRT_F32,
                        members, n);
    };
    break;
  case CollectiveKind::ReduceScatter: // the input of each rank
    used = n * outer * chunk * 4;
    call = [&, outer, chunk] {
      soaprt_reduce_scatter(in.data(), out.data(), outer, chunk, SOAPRT_F32,
                            SOAPRT_SUM, members, n);
    };
    break;
  case CollectiveKind::AllToAll: // the send buffer of each rank
    // [outer][n][chunk] split along the columns, regathered along the rows:
    // [n * outer][chunk].
    used = n * outer * chunk * 4;
    call = [&, outer, chunk] {
      soaprt_all_to_all(in.data(), out.data(), outer, chunk, 1, outer * chunk,
                        SOAPRT_F32, members, n);
    };
    break;
  }
  int reps = std::clamp(repetitionsFor(used) / 2, 3, 500);
  seconds = slowestRankMedian(std::max(2, reps / 10), reps, call);
  return used;
}

/// libsoaprt's transfer of `bytes` (rounded down to f32 elements, at least
/// one) from rank 0 to rank 1, the way an executable's soap.send and
/// soap.recv run it: the sender copies the message and posts it, the
/// receiver waits for it and takes it. The slowest rank's median time from
/// the barrier to the end of its call (the receiver's); the sender's
/// request completes outside the timed calls. Returns the bytes used.
int64_t timeRuntimeTransfer(int rank, int64_t bytes, std::vector<float> &in,
                            std::vector<float> &out, double &seconds) {
  int64_t elements = std::max<int64_t>(bytes / 4, 1);
  static const int64_t from[] = {0}, to[] = {1};
  int reps = std::clamp(repetitionsFor(elements * 4) / 2, 3, 500);
  seconds = slowestRankMedian(
      std::max(2, reps / 10), reps,
      [&] {
        if (rank == 0)
          soaprt_send(in.data(), elements, SOAPRT_F32, from, to, 1, 1);
        else if (rank == 1)
          soaprt_recv(out.data(), elements, SOAPRT_F32, from, to, 1, 1);
      },
      [] { soaprt::commCompletePendingSends(); });
  return elements * 4;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

} // namespace

int runMpiCalibration(int *argc, char ***argv, mlir::MLIRContext &context,
                      const MpiCalibrationOptions &options) {
  // libsoaprt starts MPI, so that its collectives can be timed here.
  std::string initError;
  if (!soaprt::commInit(argc, argv, initError)) {
    std::fprintf(stderr, "soap-profile: %s\n", initError.c_str());
    return 1;
  }
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  checkMpi.rank = rank;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  llvm::raw_ostream &os = llvm::outs();
  auto failAll = [&](const std::string &message) {
    if (rank == 0)
      llvm::errs() << "soap-profile: " << message << "\n";
    soaprt::commFinalize();
    return 1;
  };

  // Every rank must share one node: the machine file describes one.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int nameLength = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &nameLength));
  std::vector<char> names(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_CHECK(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                          MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD));
  for (int r = 1; r < size; ++r)
    if (std::strncmp(names.data() + r * MPI_MAX_PROCESSOR_NAME, names.data(),
                     MPI_MAX_PROCESSOR_NAME) != 0)
      return failAll("rank " + std::to_string(r) + " runs on '" +
                     std::string(names.data() + r * MPI_MAX_PROCESSOR_NAME) +
                     "', not on '" + std::string(names.data()) +
                     "': --mpi calibrates the ranks of one node");

  std::string error;
  std::string basePath = resolveMachinePath(options.base, error);
  if (basePath.empty())
    return failAll(error);
  std::optional<Machine> base = Machine::load(basePath, error);
  if (!base)
    return failAll(error);
  std::string outputPath = options.output.empty() ? basePath : options.output;
  if (options.minMessageBytes < 1 ||
      options.maxMessageBytes < options.minMessageBytes ||
      options.maxMessageBytes > (int64_t(1) << 30))
    return failAll("message sizes must satisfy 1 <= min <= max <= 1 GiB");

  if (rank == 0)
    os << "soap-profile --mpi: " << size << " rank(s) on " << name << " ("
       << cpuModel() << ")\n";

  // 1. One core alone: rank 0 measures, the others wait without spinning.
  std::optional<HostMeasurements> host;
  int hostOk = 1;
  if (rank == 0) {
    host = measureHost(context, options.host, error);
    hostOk = host.has_value();
  }
  quietBarrier();
  MPI_CHECK(MPI_Bcast(&hostOk, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (!hostOk)
    return failAll("measuring the core failed: " + error);
  if (rank == 0 && options.quiet)
    os << llvm::formatv("core: peak {0:F1} GFLOP/s f32, matmul {1:F1} "
                        "GFLOP/s, triad {2:F1} GB/s\n",
                        host->peakFlopsF32 / 1e9, host->matmulFlops / 1e9,
                        host->triadBandwidth / 1e9);
  if (rank == 0 && !options.quiet) {
    os << llvm::formatv("core: peak {0:F1} GFLOP/s f32, {1:F1} GFLOP/s f64 "
                        "(vector FMA chains)\n",
                        host->peakFlopsF32 / 1e9, host->peakFlopsF64 / 1e9);
    os << llvm::formatv("core: matmul {0}x{0}x{0} f32 {1:F1} GFLOP/s ({2:P0} "
                        "of peak; soap-profile's kernel codegen)\n",
                        host->matmulSize, host->matmulFlops / 1e9,
                        host->matmulFlops / host->peakFlopsF32);
    os << llvm::formatv("core: memory {0:F1} GB/s triad, {1:F1} GB/s copy "
                        "(STREAM, {2} per array)\n",
                        host->triadBandwidth / 1e9, host->copyBandwidth / 1e9,
                        formatBytes(host->streamBytes));
    os << "core: kernel call " << formatTime(host->callOverhead) << "\n";
    os << llvm::formatv("core: pad (fill + libsoaprt strided copy) {0:F1} "
                        "GB/s ({1:P0} of triad: the data_movement "
                        "efficiency)\n",
                        host->padBandwidth / 1e9,
                        host->padBandwidth / host->triadBandwidth);
  }

  // 2. Point to point: ping-pong between rank 0 and every other rank.
  std::vector<int64_t> sizes =
      messageSizes(options.minMessageBytes, options.maxMessageBytes, 2);
  std::vector<char> buffer(static_cast<size_t>(options.maxMessageBytes), 1);
  std::vector<std::pair<int64_t, double>> points;
  std::vector<double> oneWay(sizes.size(), 0);
  // fastest[peer - 1][i]: the fastest pass's one-way time (on rank 0).
  std::vector<std::vector<double>> fastestOneWay(
      size > 1 ? size - 1 : 0, std::vector<double>(sizes.size(), 0));
  for (int pass = 0; pass < kPasses && size > 1; ++pass) {
    if (pass > 0)
      pauseBetweenPasses();
    for (int peer = 1; peer < size; ++peer) {
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      for (size_t i = 0; i < sizes.size(); ++i) {
        double t = pingPong(rank, 0, peer, sizes[i], buffer);
        double &fastest = fastestOneWay[peer - 1][i];
        if (rank == 0 && (pass == 0 || t < fastest))
          fastest = t;
      }
    }
  }
  if (rank == 0)
    for (int peer = 1; peer < size; ++peer)
      for (size_t i = 0; i < sizes.size(); ++i) {
        double t = fastestOneWay[peer - 1][i];
        points.emplace_back(sizes[i], t);
        oneWay[i] += t / (size - 1);
      }
  std::optional<AlphaBeta> p2p;
  if (rank == 0 && size > 1) {
    p2p = fitAlphaBeta(points);
    if (!options.quiet) {
      os << "point to point (ping-pong, rank 0 with each other rank; one-way "
            "time):\n";
      for (size_t i = 0; i < sizes.size(); ++i)
        os << llvm::formatv("  {0,10} {1,12} {2,8:F2} GB/s\n",
                            formatBytes(sizes[i]), formatTime(oneWay[i]),
                            sizes[i] / oneWay[i] / 1e9);
    }
  }
  int fitOk = size == 1 || p2p.has_value();
  MPI_CHECK(MPI_Bcast(&fitOk, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (!fitOk)
    return failAll("the ping-pong times do not fit latency + bytes / "
                   "bandwidth");

  // 3. A ring step with every rank sending at once, for the report.
  double ringBytes = static_cast<double>(options.maxMessageBytes);
  double ringTime = 0;
  if (size > 1) {
    std::vector<char> receive(buffer.size());
    ringTime = ringStep(rank, size, options.maxMessageBytes, buffer, receive);
  }

  // 4. The calibrated machine: every rank builds it (the same numbers, sent
  // from rank 0) to compare all-reduce predictions.
  double numbers[7] = {};
  if (rank == 0) {
    numbers[0] = host->peakFlopsF32;
    numbers[1] = host->peakFlopsF64;
    numbers[2] = host->matmulFlops;
    numbers[3] = host->triadBandwidth;
    numbers[4] = p2p ? p2p->alpha : 0;
    numbers[5] = p2p ? p2p->beta : 0;
    numbers[6] = host->padBandwidth;
  }
  MPI_CHECK(MPI_Bcast(numbers, 7, MPI_DOUBLE, 0, MPI_COMM_WORLD));

  // Four significant digits: what the measurements support, and readable.
  for (double &n : numbers)
    n = roundToFourDigits(n);

  MachineSpec spec = base->spec();
  spec.nodes = 1;
  spec.devicesPerNode = size;
  spec.interNode.reset();
  DeviceType &device = spec.deviceTypes[spec.deviceType];
  device.peakFlops["f32"] = numbers[0];
  device.peakFlops["f64"] = numbers[1];
  device.memoryBandwidth = numbers[3];
  device.efficiency["matmul"] = std::clamp(numbers[2] / numbers[0], 0.01, 1.0);
  device.efficiency["data_movement"] =
      std::clamp(roundToFourDigits(numbers[6] / numbers[3]), 0.01, 1.0);
  int64_t physical =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (physical > 0)
    device.memoryBytes = physical / size;
  if (rank == 0) {
    device.launchOverhead = roundToFourDigits(host->callOverhead);
    device.description = "One core of " + cpuModel() +
                         ", measured by soap-profile --mpi on " + today() + ".";
  }
  double overhead = device.launchOverhead;
  MPI_CHECK(MPI_Bcast(&overhead, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  device.launchOverhead = overhead;
  if (size > 1) {
    IntraNodeSpec intra;
    intra.topology = IntraNodeTopology::Bus;
    intra.latency = numbers[4];
    intra.bandwidth = numbers[5];
    spec.intraNode = intra;
  }
  if (rank == 0) {
    std::string text;
    llvm::raw_string_ostream d(text);
    d << "This machine's CPU cores as MPI ranks: one node, one rank per "
         "core. Calibrated by soap-profile --mpi on "
      << today() << " with " << size << " rank(s) on " << cpuModel()
      << llvm::formatv(": peak {0:F1} GFLOP/s f32 and {1:F1} f64 per core "
                       "(vector FMA chains compiled for this CPU); a "
                       "{2}x{2}x{2} f32 matmul compiled by soap-profile's "
                       "kernel codegen reaches {3:F1} GFLOP/s (the matmul "
                       "efficiency); STREAM triad {4:F1} GB/s on one core; "
                       "{5} per kernel call; memory split evenly among the "
                       "ranks",
                       numbers[0] / 1e9, numbers[1] / 1e9, host->matmulSize,
                       numbers[2] / 1e9, numbers[3] / 1e9,
                       formatTime(overhead));
    if (size > 1)
      d << llvm::formatv("; ranks exchange data through Open MPI's shared "
                         "memory, modelled as one bus: ping-pong fits "
                         "{0} latency and {1:F2} GB/s",
                         formatTime(numbers[4]), numbers[5] / 1e9);
    d << llvm::formatv("; a pad (fill and libsoaprt's strided copy) moves "
                       "{0:F1} GB/s, the data_movement efficiency",
                       numbers[6] / 1e9);
    d << ". Other efficiencies are the defaults of the base file.";
    spec.description = text;
  }
  std::optional<Machine> calibrated = Machine::create(spec, error);
  if (!calibrated)
    return failAll("the calibrated machine is invalid: " + error);

  // 5. All-reduce: measured against the model's prediction.
  if (size > 1) {
    std::vector<int64_t> reduceSizes =
        messageSizes(std::max<int64_t>(options.minMessageBytes, 4),
                     options.maxMessageBytes, 4);
    std::vector<float> send(options.maxMessageBytes / 4 + 1, 1.0f),
        receive(send.size());
    std::vector<int> group(size);
    for (int r = 0; r < size; ++r)
      group[r] = r;
    if (rank == 0 && !options.quiet)
      os << "all-reduce (MPI_Allreduce, f32 sum over " << size
         << " ranks) against the model:\n"
         << llvm::formatv("  {0,10} {1,12} {2,12} {3,9}\n", "bytes", "measured",
                          "predicted", "ratio");
    double worst = 0;
    for (int64_t bytes : reduceSizes) {
      double measured = allReduce(bytes, send, receive);
      CollectiveCost predicted =
          calibrated->collectiveCost(CollectiveKind::AllReduce, bytes, group);
      double ratio = predicted.time / measured;
      worst = std::max(worst, std::max(ratio, 1 / ratio));
      if (rank == 0 && !options.quiet)
        os << llvm::formatv("  {0,10} {1,12} {2,12} {3,9:F2}  ({4})\n",
                            formatBytes(bytes), formatTime(measured),
                            formatTime(predicted.time), ratio,
                            predicted.algorithm);
    }
    if (rank == 0) {
      os << llvm::formatv("point to point: latency {0}, bandwidth {1:F2} GB/s "
                          "(fit within {2:P0} of every size)\n",
                          formatTime(p2p->alpha), p2p->beta / 1e9,
                          p2p->worstError);
      os << llvm::formatv("ring step of {0} with all {1} ranks sending: "
                          "{2:F2} GB/s per rank\n",
                          formatBytes(options.maxMessageBytes), size,
                          ringBytes / ringTime / 1e9);
      os << llvm::formatv("all-reduce: the model is within a factor {0:F2} "
                          "of MPI_Allreduce over these sizes\n",
                          worst);
    }
  }

  // 6. libsoaprt's collectives as executables call them (blocks reordered
  // around the MPI call included), at sizes up to 16 MiB: the simulator
  // takes these times for groups of all the ranks.
  spec.collectives.measured.reset();
  if (size > 1) {
    int64_t largest = std::min<int64_t>(options.maxMessageBytes, 16 << 20);
    std::vector<int64_t> sizes = messageSizes(64, std::max<int64_t>(largest, 64), 4);
    std::vector<float> in(largest / 4 + kRowElements * size, 1.0f),
        out(in.size() * size);
    std::vector<int64_t> group(size);
    for (int r = 0; r < size; ++r)
      group[r] = r;
    MeasuredCollectives measured;
    measured.ranks = size;
    if (rank == 0 && !options.quiet)
      os << "libsoaprt's collectives over " << size
         << " ranks (the simulator's times for groups of " << size << "):\n";
    // Every size of every kind is measured in kPasses passes over all of
    // them, kPassGap apart, keeping the fastest pass's median: a slowdown
    // of the host during one pass (another process, a frequency drop, the
    // host's slow seconds) would otherwise price that collective at
    // several times its cost in every simulation that uses the file.
    std::map<std::pair<CollectiveKind, int64_t>, std::pair<int64_t, double>>
        fastest; // (kind, size) -> (bytes used, seconds)
    std::map<int64_t, std::pair<int64_t, double>> fastestTransfer;
    auto keepFastest = [](auto &table, auto key, int64_t used, double seconds) {
      auto [at, added] = table.try_emplace(key, used, seconds);
      if (!added)
        at->second.second = std::min(at->second.second, seconds);
    };
    for (int pass = 0; pass < kPasses; ++pass) {
      if (pass > 0)
        pauseBetweenPasses();
      for (CollectiveKind kind : collectiveKinds())
        for (int64_t bytes : sizes) {
          double seconds = 0;
          int64_t used =
              timeRuntimeCollective(kind, bytes, group, in, out, seconds);
          keepFastest(fastest, std::make_pair(kind, bytes), used, seconds);
        }
      for (int64_t bytes : sizes) {
        double seconds = 0;
        int64_t used = timeRuntimeTransfer(rank, bytes, in, out, seconds);
        keepFastest(fastestTransfer, bytes, used, seconds);
      }
    }
    for (CollectiveKind kind : collectiveKinds()) {
      std::vector<std::pair<int64_t, double>> &points = measured.times[kind];
      for (int64_t bytes : sizes) {
        auto [used, seconds] = fastest.at({kind, bytes});
        if (used == 0 || (!points.empty() && used <= points.back().first))
          continue;
        points.emplace_back(used, roundToFourDigits(seconds));
      }
      if (rank == 0 && !options.quiet) {
        os << llvm::formatv("  {0,-15}", collectiveName(kind));
        for (auto [bytes, seconds] : points)
          os << " " << formatBytes(bytes) << " " << formatTime(seconds) << ";";
        os << "\n";
      }
    }
    for (int64_t bytes : sizes) {
      auto [used, seconds] = fastestTransfer.at(bytes);
      if (measured.sendRecv.empty() || used > measured.sendRecv.back().first)
        measured.sendRecv.emplace_back(used, roundToFourDigits(seconds));
    }
    if (rank == 0 && !options.quiet) {
      os << llvm::formatv("  {0,-15}", "send_recv");
      for (auto [bytes, seconds] : measured.sendRecv)
        os << " " << formatBytes(bytes) << " " << formatTime(seconds) << ";";
      os << "\n";
    }
    spec.collectives.measured = std::move(measured);
    if (rank == 0)
      spec.description +=
          llvm::formatv(" The collectives' times (collectives.measured) are "
                        "libsoaprt's over all {0} ranks, measured from 64 B "
                        "to {1}; the simulator takes them for groups of {0}. "
                        "Its transfers between two ranks take libsoaprt's "
                        "send and receive (collectives.measured.send_recv).",
                        size, formatBytes(largest))
              .str();
    if (rank == 0)
      os << llvm::formatv("libsoaprt's collectives: {0} sizes from 64 B to "
                          "{1} measured\n",
                          sizes.size(), formatBytes(largest));
  }

  // 7. Rank 0 writes the file; it must load again.
  int written = 1;
  if (rank == 0) {
    written = writeFileAtomically(outputPath, machineSpecToJson(spec) + "\n", error) &&
              Machine::load(outputPath, error).has_value();
    if (written)
      os << "soap-profile: wrote " << outputPath << " (" << spec.name << ", "
         << size << " devices of " << spec.deviceType << ")\n";
  }
  MPI_CHECK(MPI_Bcast(&written, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (!written)
    return failAll(error);
  os.flush();
  soaprt::commFinalize();
  return 0;
}

} // namespace soap::profile
