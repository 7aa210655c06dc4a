//===- Driver.cpp - main() of executables built by soap-translate ---------===//
//
// Initialises the model's arguments, runs training steps through
// soap_train_step_packed, feeds each updated parameter and optimizer state
// back into the argument of the same role and name, prints the loss and
// time of each step, and saves, loads and traces on request
// (docs/runtime.md). Under mpirun (or for a model partitioned for several
// devices) every rank runs this loop on its shard after MPI starts; rank 0
// alone prints, saves and reports the slowest rank's step times.
//
// A GPU model ("target": "gpu" in soap_model_info) keeps the host buffers
// for initial values, data files, checkpoints and gathering, and device
// copies that the step receives (through libsoaprt_gpu's GpuHooks, so that
// this file needs no CUDA): arguments go to the device once (and after each
// data fill), results replace their arguments on the device by pointer
// swaps, the loss comes back after each step, and state is copied back
// before it is saved.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "Comm.h"
#include "GpuHooks.h"
#include "Memory.h"
#include "Model.h"
#include "Trace.h"
#include "soap/Runtime/Runtime.h"
#include "soap/support/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace soaprt;

namespace {

const char *kUsage =
    "usage: %s [options]\n"
    "Runs training steps of the compiled model.\n"
    "\n"
    "  --steps N        training steps to run (default 10)\n"
    "  --warmup N       untimed steps run first; their updates are discarded\n"
    "                   (default 0)\n"
    "  --seed S         seed of the initial parameters and synthetic data\n"
    "                   (default 0)\n"
    "  --data FILE      inputs and labels from FILE (checkpoint format; a\n"
    "                   tensor with one extra leading dimension holds one\n"
    "                   batch per step, used in turn)\n"
    "  --save FILE      write parameters and optimizer state after the last\n"
    "                   step (atomically)\n"
    "  --load FILE      start from the parameters and optimizer state in FILE\n"
    "  --trace FILE     write a Chrome trace (JSON) of steps and kernels\n"
    "                   (under MPI, one per rank: FILE with .rankK before its\n"
    "                   extension)\n"
    "  --timeout S      end the job when a step (or the final save) takes\n"
    "                   longer than S seconds: a receive without its send or\n"
    "                   a collective that not every rank entered would wait\n"
    "                   forever (default 1800; 0: no limit)\n"
    "  --print-model    print the model description (JSON) and exit\n"
    "  --help           print this message and exit\n";

struct Options {
  long steps = 10, warmup = 0, timeout = 1800;
  uint64_t seed = 0;
  std::string data, save, load, trace;
  bool printModel = false;
};

/// Exit codes (docs/runtime.md).
constexpr int kFileError = 1, kUsageError = 2, kLossError = 3, kRankError = 4,
              kGpuError = 5;

/// Under MPI the message names the rank and the whole job ends.
[[noreturn]] void fail(const std::string &message, int code = kFileError) {
  commFail(message, code);
}

bool parseInteger(const std::string &text, long &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtol(text.c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf(kUsage, argv[0]);
      std::exit(0);
    }
    if (arg == "--print-model") {
      options.printModel = true;
      continue;
    }
    std::string name = arg, value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    static const char *withValue[] = {"--steps", "--warmup", "--seed",
                                      "--data",  "--save",   "--load",
                                      "--trace", "--timeout"};
    if (std::find_if(std::begin(withValue), std::end(withValue),
                     [&](const char *f) { return name == f; }) ==
        std::end(withValue))
      fail("unknown option '" + arg + "' (see --help)", kUsageError);
    if (!hasValue) {
      if (i + 1 >= argc)
        fail("option '" + name + "' needs a value", kUsageError);
      value = argv[++i];
    }
    long number = 0;
    if (name == "--steps" || name == "--warmup" || name == "--seed" ||
        name == "--timeout") {
      if (!parseInteger(value, number) || number < 0)
        fail("option '" + name + "' needs a non-negative integer, not '" +
                 value + "'",
             kUsageError);
      if (name == "--steps")
        options.steps = number;
      else if (name == "--warmup")
        options.warmup = number;
      else if (name == "--timeout")
        options.timeout = number;
      else
        options.seed = static_cast<uint64_t>(number);
    } else if (value.empty()) {
      fail("option '" + name + "' needs a file name", kUsageError);
    } else if (name == "--data") {
      options.data = value;
    } else if (name == "--save") {
      options.save = value;
    } else if (name == "--load") {
      options.load = value;
    } else {
      options.trace = value;
    }
  }
  return options;
}

/// --timeout: a thread that ends the job when the part of the run it
/// watches (a step, the final save) is not done by its deadline. A rank
/// blocked in a receive whose send never comes, or in a collective that
/// not every rank of its group entered, would otherwise wait forever;
/// every rank's watchdog fires, and mpirun ends the job when the first
/// rank exits. The thread calls no MPI: it prints and exits.
class Watchdog {
public:
  explicit Watchdog(long seconds) : seconds(seconds) {
    if (seconds > 0)
      thread = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    if (!thread.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    thread.join();
  }
  /// Starts watching `what` ("step 3").
  void arm(std::string what) {
    if (seconds <= 0)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      watched = std::move(what);
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::seconds(seconds);
      armed = true;
    }
    wake.notify_one();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex);
    armed = false;
  }

private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      if (!armed) {
        wake.wait(lock);
        continue;
      }
      if (wake.wait_until(lock, deadline) != std::cv_status::timeout ||
          !armed || std::chrono::steady_clock::now() < deadline)
        continue;
      std::fflush(stdout);
      std::fprintf(stderr,
                   "error: rank %d: %s did not finish within %ld s "
                   "(--timeout): a receive whose send never comes, or a "
                   "collective that not every rank of its group entered, "
                   "waits forever; ending the job\n",
                   commRank(), watched.c_str(), seconds);
      std::fflush(stderr);
      std::_Exit(kRankError);
    }
  }

  long seconds;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  std::chrono::steady_clock::time_point deadline;
  std::string watched;
  bool armed = false, stopping = false;
};

/// The state of a run: a buffer per argument and per result.
struct Run {
  ModelInfo model;
  std::vector<Buffer> args, results;
  /// For each result, the argument it replaces (-1: none).
  std::vector<int> feedsBack;
  int lossResult = -1;
  std::vector<void *> pointers;
  /// Training steps: results marked in_place are written into the buffer
  /// of the argument they replace (warm-up steps keep the arguments, so
  /// they write the results' own buffers).
  bool inPlace = false;
  /// A GPU model: device copies of args and results, which the step gets.
  bool gpu = false;
  std::vector<void *> deviceArgs, deviceResults;

  ~Run() {
    for (auto *list : {&deviceArgs, &deviceResults})
      for (void *p : *list)
        gpuHooks->free(p);
  }
  void refreshPointers() {
    pointers.clear();
    if (gpu) {
      pointers.insert(pointers.end(), deviceArgs.begin(), deviceArgs.end());
      pointers.insert(pointers.end(), deviceResults.begin(),
                      deviceResults.end());
      return;
    }
    for (Buffer &b : args)
      pointers.push_back(b.data());
    for (size_t r = 0; r < results.size(); ++r)
      pointers.push_back(writesInPlace(r) ? args[feedsBack[r]].data()
                                          : results[r].data());
  }
  bool writesInPlace(size_t r) const {
    return inPlace && !gpu && feedsBack[r] >= 0 && model.results[r].inPlace;
  }
  /// Starts the GPU (after MPI: the device follows the rank) and allocates
  /// the device buffers; results start zeroed like the host ones.
  void startDevice() {
    gpuHooks->start();
    for (Buffer &b : args)
      deviceArgs.push_back(gpuHooks->alloc(b.size()));
    for (Buffer &b : results) {
      deviceResults.push_back(gpuHooks->alloc(b.size()));
      gpuHooks->toDevice(deviceResults.back(), b.data(), b.size());
    }
    for (size_t a = 0; a < args.size(); ++a)
      upload(a);
    refreshPointers();
  }
  /// Host argument -> its device copy.
  void upload(size_t a) {
    if (gpu)
      gpuHooks->toDevice(deviceArgs[a], args[a].data(), args[a].size());
  }
  /// After the step function returns: on a GPU, issue deferred sends and
  /// wait for the device, so that times and the loss are the step's.
  void finishStep() {
    if (!gpu)
      return;
    commCompletePendingSends();
    gpuHooks->synchronize();
  }
  double loss() {
    const TensorSpec &spec = model.results[lossResult];
    if (gpu)
      gpuHooks->toHost(results[lossResult].data(), deviceResults[lossResult],
                       spec.elementBytes());
    return elementAsDouble(results[lossResult].data(), spec.dtype, 0);
  }
  /// A GPU model's training state back in the host buffers (to save it).
  void downloadState() {
    if (!gpu)
      return;
    for (size_t a = 0; a < args.size(); ++a)
      if (model.args[a].role == "param" || model.args[a].role == "opt_state")
        gpuHooks->toHost(args[a].data(), deviceArgs[a], args[a].size());
  }
  /// Results replace their arguments (the step never writes arguments, so
  /// the old values become the next step's result buffers); a result
  /// written in place already has. On a GPU the
  /// device pointers are swapped; the host copies of state go stale until
  /// downloadState.
  void feedBack() {
    for (size_t r = 0; r < results.size(); ++r)
      if (feedsBack[r] >= 0 && !writesInPlace(r)) {
        if (gpu)
          std::swap(deviceArgs[feedsBack[r]], deviceResults[r]);
        else
          args[feedsBack[r]].swap(results[r]);
      }
    refreshPointers();
  }
};

bool isState(const std::string &role) {
  return role == "param" || role == "opt_state";
}

void setUp(Run &run, const Options &options) {
  std::string error;
  if (!run.model.parse(soap_model_info, error))
    fail(error);
  ModelInfo &model = run.model;
  if (model.target == "gpu") {
    if (!gpuHooks)
      fail("this executable runs a GPU model (\"target\": \"gpu\") but "
           "was linked without libsoaprt_gpu (SOAP was built without CUDA, "
           "cuDNN and NCCL?)",
           kGpuError);
    run.gpu = true;
  }
  for (size_t a = 0; a < model.args.size(); ++a)
    run.args.emplace_back(model.args[a].bytes());
  for (size_t r = 0; r < model.results.size(); ++r) {
    const TensorSpec &spec = model.results[r];
    run.results.emplace_back(spec.bytes());
    int target = -1;
    if (spec.role == "loss" && run.lossResult < 0)
      run.lossResult = static_cast<int>(r);
    for (size_t a = 0; a < model.args.size() && isState(spec.role); ++a)
      if (model.args[a].role == spec.role && model.args[a].name == spec.name) {
        target = static_cast<int>(a);
        if (model.args[a].shape != spec.shape ||
            model.args[a].dtype != spec.dtype)
          fail("result '" + spec.name + "' (" + spec.dtype +
               spec.shapeString() + ") does not match its argument (" +
               model.args[a].dtype + model.args[a].shapeString() + ")");
      }
    run.feedsBack.push_back(target);
  }
  if (run.lossResult < 0)
    fail("the model's entry '" + model.entry +
         "' has no result with soap.role = \"loss\"");
  if (model.results[run.lossResult].numElements() < 1)
    fail("the loss result is empty");
  run.refreshPointers();
}

/// Initial values of the arguments, once the rank is known: a sharded
/// argument takes its part of the whole tensor (drawn from the same seed,
/// so every partitioning starts from the single-device values).
void initializeArgs(Run &run, uint64_t seed) {
  for (size_t a = 0; a < run.model.args.size(); ++a) {
    const TensorSpec &spec = run.model.args[a];
    Buffer plain(spec.block ? spec.bytes() : 0);
    void *part = spec.block ? plain.data() : run.args[a].data();
    if (!spec.sharded()) {
      initialize(spec, spec.block ? plain : run.args[a], seed,
                 soap_init_data[a]);
    } else {
      TensorSpec whole = spec.whole();
      Buffer buffer(whole.bytes());
      initialize(whole, buffer, seed, soap_init_data[a]);
      extractShard(spec, commRank(), buffer.data(), part);
    }
    // Weights the step keeps in blocks start in them.
    if (spec.block)
      toBlocked(spec, part, run.args[a].data());
  }
}

void loadCheckpoint(Run &run, const std::string &path, uint64_t &step) {
  std::string error;
  Checkpoint checkpoint;
  if (!checkpoint.read(path, error))
    fail(error);
  size_t used = 0;
  for (size_t a = 0; a < run.model.args.size(); ++a) {
    const TensorSpec &spec = run.model.args[a];
    if (!isState(spec.role))
      continue;
    const NamedTensor *t = checkpoint.find(spec.name);
    if (!t)
      fail("checkpoint '" + path + "' has no tensor '" + spec.name + "'");
    TensorSpec whole = spec.whole();
    if (t->dtype != whole.dtype || t->shape != whole.shape)
      fail("checkpoint '" + path + "': tensor '" + spec.name + "' is " +
           t->dtype + shapeString(t->shape) + " but the model expects " +
           whole.dtype + whole.shapeString());
    if (t->bytes.size() != whole.bytes())
      fail("checkpoint '" + path + "': tensor '" + spec.name + "' has " +
           std::to_string(t->bytes.size()) + " bytes, expected " +
           std::to_string(whole.bytes()));
    // Blocked weights go through a plain copy of this rank's part.
    Buffer plain(spec.block ? spec.bytes() : 0);
    void *part = spec.block ? plain.data() : run.args[a].data();
    if (spec.sharded())
      extractShard(spec, commRank(), t->bytes.data(), part);
    else
      std::memcpy(part, t->bytes.data(), t->bytes.size());
    if (spec.block)
      toBlocked(spec, part, run.args[a].data());
    ++used;
  }
  if (used != checkpoint.tensors.size())
    for (const NamedTensor &t : checkpoint.tensors) {
      bool known = false;
      for (const TensorSpec &spec : run.model.args)
        known |= isState(spec.role) && spec.name == t.name;
      if (!known)
        fail("checkpoint '" + path + "' has tensor '" + t.name +
             "', which the model does not have");
    }
  step = checkpoint.step;
}

/// Called on every rank: sharded state is gathered to rank 0, which writes
/// the whole tensors.
void saveCheckpoint(const Run &run, const std::string &path, uint64_t step) {
  bool rank0 = commRank() == 0;
  Checkpoint checkpoint;
  checkpoint.step = step;
  for (size_t a = 0; a < run.model.args.size(); ++a) {
    const TensorSpec &spec = run.model.args[a];
    if (!isState(spec.role))
      continue;
    // Checkpoints hold the plain layout.
    Buffer plain(spec.block ? spec.bytes() : 0);
    if (spec.block)
      fromBlocked(spec, run.args[a].data(), plain.data());
    const char *data = static_cast<const char *>(
        spec.block ? plain.data() : run.args[a].data());
    if (!spec.sharded()) {
      if (rank0)
        checkpoint.tensors.push_back({spec.name, spec.dtype, spec.shape,
                                      std::string(data, spec.bytes())});
      continue;
    }
    int ranks = commWorldSize();
    std::vector<char> parts(rank0 ? spec.bytes() * ranks : 1);
    commGatherToRoot(data, spec.bytes(), parts.data());
    if (!rank0)
      continue;
    TensorSpec whole = spec.whole();
    std::string bytes(whole.bytes(), '\0');
    for (int r = 0; r < ranks; ++r)
      if (spec.holds(r)) // the others' copies are not kept up to date
        insertShard(spec, r, parts.data() + r * spec.bytes(), bytes.data());
    checkpoint.tensors.push_back(
        {spec.name, spec.dtype, whole.shape, std::move(bytes)});
  }
  std::string error;
  if (rank0 && !soap::writeFileAtomically(path, checkpoint.serialize(), error))
    fail(error);
}

/// Integer inputs and labels with a range (class labels, token ids: the
/// loss and the gathers index with them) must hold values in [0, range):
/// a label of 12 for 10 classes would train on a wrong loss, an id past
/// the table would read outside it.
void checkRange(const TensorSpec &spec, const NamedTensor &t,
                const std::string &path) {
  if (!spec.range || spec.dtype[0] != 'i')
    return;
  size_t width = spec.elementBytes();
  size_t count = width ? t.bytes.size() / width : 0;
  for (size_t i = 0; i < count; ++i) {
    const char *at = t.bytes.data() + i * width;
    int64_t value = 0;
    if (width == 8) {
      std::memcpy(&value, at, 8);
    } else if (width == 4) {
      int32_t v;
      std::memcpy(&v, at, 4);
      value = v;
    } else if (width == 2) {
      int16_t v;
      std::memcpy(&v, at, 2);
      value = v;
    } else {
      value = static_cast<int8_t>(*at);
    }
    if (value < 0 || value >= *spec.range)
      fail("data file '" + path + "': tensor '" + spec.name + "' holds " +
           std::to_string(value) + " at element " + std::to_string(i) +
           "; the model takes values in [0, " + std::to_string(*spec.range) +
           ") (its soap.range" +
           (spec.role == "label" ? ": the number of classes)" : ")"));
  }
}

/// Inputs and labels from a --data file: for each, the tensor of its name,
/// with the argument's shape or with one more leading dimension (batches).
struct DataSource {
  Checkpoint file;
  std::vector<const NamedTensor *> perArg;
  std::vector<int64_t> batches;

  void open(const Run &run, const std::string &path) {
    std::string error;
    if (!file.read(path, error))
      fail(error);
    for (const TensorSpec &spec : run.model.args) {
      const NamedTensor *t = nullptr;
      int64_t count = 1;
      if (spec.role == "input" || spec.role == "label") {
        t = file.find(spec.name);
        if (!t)
          fail("data file '" + path + "' has no tensor '" + spec.name + "'");
        bool same = t->shape == spec.shape;
        bool batched =
            t->shape.size() == spec.shape.size() + 1 && !t->shape.empty() &&
            std::equal(spec.shape.begin(), spec.shape.end(),
                       t->shape.begin() + 1);
        if (t->dtype != spec.dtype || !(same || batched))
          fail("data file '" + path + "': tensor '" + spec.name + "' is " +
               t->dtype + shapeString(t->shape) + " but the model expects " +
               spec.dtype + spec.shapeString() + " (or N batches of it)");
        count = same ? 1 : t->shape[0];
        if (t->bytes.size() != spec.bytes() * count)
          fail("data file '" + path + "': tensor '" + spec.name +
               "' has the wrong number of bytes");
        checkRange(spec, *t, path);
      }
      perArg.push_back(t);
      batches.push_back(count);
    }
  }
  /// Copies the batch of step `step` (0-based) into the arguments.
  void fill(Run &run, uint64_t step) {
    for (size_t a = 0; a < perArg.size(); ++a) {
      if (!perArg[a] || batches[a] < 1)
        continue;
      size_t bytes = run.model.args[a].bytes();
      size_t which = static_cast<size_t>(step % batches[a]);
      std::memcpy(run.args[a].data(), perArg[a]->bytes.data() + which * bytes,
                  bytes);
      run.upload(a);
    }
  }
};

/// Starts MPI when the model runs on several devices or a launcher started
/// this process, and checks that the job has one rank per device. A
/// single-device executable started directly never touches MPI.
void startRanks(const ModelInfo &model, int *argc, char ***argv) {
  if (model.numDevices <= 1 && !launchedByMpi())
    return;
  std::string error;
  if (!commInit(argc, argv, error))
    fail("MPI cannot start (the model runs on " +
             std::to_string(model.numDevices) + " device" +
             (model.numDevices == 1 ? "" : "s") + "): " + error,
         kRankError);
  if (commWorldSize() != model.numDevices)
    fail("the model was partitioned for " + std::to_string(model.numDevices) +
             " device" + (model.numDevices == 1 ? "" : "s") +
             " (soap.num_devices) but the job has " +
             std::to_string(commWorldSize()) + " rank" +
             (commWorldSize() == 1 ? "" : "s") + "; run it with mpirun -np " +
             std::to_string(model.numDevices),
         kRankError);
}

/// --trace FILE on several ranks: FILE with ".rankK" before its extension.
std::string traceFileOfRank(const std::string &path) {
  if (commWorldSize() <= 1)
    return path;
  std::string tag = ".rank" + std::to_string(commRank());
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace

/// Every step allocates the same intermediate buffers again. glibc serves
/// large blocks with fresh mmap()ed pages and returns them on free(), so
/// each step paid page faults on every intermediate (and MPI re-registered
/// fresh buffers): a 4 MiB all-reduce took 11 ms on fresh buffers against
/// 1.2 ms on reused ones. Keeping freed memory in the heap lets the next
/// step reuse it.
static void keepFreedMemory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char **argv) {
  // Fully buffered even on a terminal: the step loop flushes (below).
  std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);
  keepFreedMemory();
  soaprt_select_blas_core(argv);
  Options options = parseOptions(argc, argv);
  if (options.printModel) {
    std::printf("%s\n", soap_model_info);
    return 0;
  }
  Run run;
  setUp(run, options);
  startRanks(run.model, &argc, &argv);
  bool rank0 = commRank() == 0;
  initializeArgs(run, options.seed);

  uint64_t step = 0;
  if (!options.load.empty())
    loadCheckpoint(run, options.load, step);
  DataSource data;
  bool haveData = !options.data.empty();
  if (haveData)
    data.open(run, options.data);
  if (run.gpu)
    run.startDevice();

  // peak_tensor_mb is the steps' high-water mark: the state, and what the
  // steps allocate (not the whole tensors initialization draws shards of).
  restartTensorPeak();
  Watchdog watchdog(options.timeout);
  // Warm-up steps run on the current state and discard their results.
  for (long i = 0; i < options.warmup; ++i) {
    if (haveData)
      data.fill(run, step);
    watchdog.arm("warm-up step " + std::to_string(i + 1));
    soap_train_step_packed(run.pointers.data());
    run.finishStep();
    commCompletePendingSends();
    watchdog.disarm();
  }

  run.inPlace = true;
  run.refreshPointers();
  bool tracing = !options.trace.empty();
  // About one event per kernel, one per buffer allocated or freed (the
  // memory counter), one per communication call: four per op bounds it.
  if (tracing)
    reserveTraceEvents(static_cast<size_t>(options.steps) *
                       (4 * run.model.opNames.size() + 16));
  setOpTracing(tracing);
  std::vector<double> times;
  double loss = NAN;
  // Under mpirun a rank's output goes through mpirun's own process (on a
  // pseudo-terminal, so line by line), which wakes for every write; where
  // each rank has a core of its own, that process takes its time from a
  // rank (a 2 ms step of zoo resnet18 on 2 ranks here ran 5 % slower with
  // a write each step). Step lines go out at least once a second, and when
  // the steps end (fail and the watchdog flush before they report). main
  // makes stdout fully buffered.
  double lastFlush = nowUs();
  for (long i = 0; i < options.steps; ++i) {
    if (haveData)
      data.fill(run, step);
    watchdog.arm("step " + std::to_string(step + 1));
    double start = nowUs();
    soap_train_step_packed(run.pointers.data());
    run.finishStep();
    double elapsed = nowUs() - start;
    commCompletePendingSends();
    double slowest = commMaxOverRanks(elapsed);
    watchdog.disarm();
    ++step;
    if (tracing)
      traceEvents().push_back(
          {nullptr, "step", start, elapsed, static_cast<int64_t>(step)});
    loss = run.loss();
    // The step takes as long as its slowest rank (slowest, above).
    times.push_back(slowest / 1000.0);
    if (rank0) {
      std::printf("step=%llu loss=%.9g time_ms=%.3f\n",
                  static_cast<unsigned long long>(step), loss,
                  slowest / 1000.0);
      if (double now = nowUs(); now - lastFlush >= 1e6) {
        std::fflush(stdout);
        lastFlush = now;
      }
      // The loss is replicated: rank 0 judges it for the job.
      if (!std::isfinite(loss))
        fail("the loss is " +
                 std::string(std::isnan(loss) ? "NaN" : "infinite") +
                 " at step " + std::to_string(step),
             kLossError);
    }
    run.feedBack();
  }
  setOpTracing(false);

  double mean = 0;
  for (double t : times)
    mean += t;
  if (!times.empty())
    mean /= times.size();
  // The largest resident set of any rank so far (its high-water mark).
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  double peakMb = commMaxOverRanks(usage.ru_maxrss / 1024.0);
  // The most bytes any rank's tensors held at once during the steps (host
  // buffers: the driver's state and what the step allocates; a GPU step's
  // buffers are device memory, not counted here).
  double tensorMb = commMaxOverRanks(peakTensorBytes() / (1024.0 * 1024.0));
  if (rank0)
    std::printf("summary steps=%ld mean_ms=%.3f median_ms=%.3f "
                "final_loss=%.9g peak_rss_mb=%.1f peak_tensor_mb=%.2f\n",
                options.steps, mean, median(times), loss, peakMb, tensorMb);
  std::fflush(stdout);

  // Every rank takes part (sharded state is gathered); rank 0 writes.
  std::string error;
  if (!options.save.empty()) {
    watchdog.arm("saving '" + options.save + "'");
    run.downloadState();
    saveCheckpoint(run, options.save, step);
    watchdog.disarm();
  }
  if (tracing && !writeChromeTrace(traceFileOfRank(options.trace),
                                   run.model.opNames, error))
    fail(error);
  commFinalize();
  return 0;
}
