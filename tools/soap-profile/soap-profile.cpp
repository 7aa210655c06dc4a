//===- soap-profile.cpp - measure op costs and calibrate machines ---------===//
//
//   soap-profile MODEL.mlir -o profile.json [--machine NAME]
//       [--strategy NAME|FILE.json]... [--devices N]... [--repeat N]
//       [--warmup N] [--func NAME] [--max-seconds S] [--max-op-seconds S]
//       [--max-buffer-mb M] [--codegen blas|vector|loops] [--merge] [--quiet]
//       [--device cpu|gpu] [--gpu-math f32|tf32|bf16] [--gpu-chip sm_XY]
//   mpirun -np N soap-profile --mpi [-o MACHINE.json] [--base NAME]
//       [--max-message-bytes B] [--stream-mb M] [--matmul-size N] [--quiet]
//   soap-profile --device gpu --calibrate [-o MACHINE.json] [--base NAME]
//       [--matmul-size N] [--bandwidth-mb M] [--max-message-bytes B]
//
// See docs/profiler.md.
//
//===----------------------------------------------------------------------===//

#include "GpuProfiler.h"
#include "HostBenchmarks.h"
#include "KernelCodegen.h"
#include "KernelProfiler.h"
#include "MachineFiles.h"
#include "MpiCalibration.h"
#include "ProgramProfiler.h"

#include "soap/Dialect/Registration.h"
#include "soap/Runtime/Runtime.h"
#include "soap/codegen/GpuLowering.h"
#include "soap/graph/OpGraphBuilder.h"
#include "soap/support/AtomicFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace soap;
using namespace soap::profile;

static constexpr const char *kUsage =
    "usage: soap-profile MODEL.mlir -o PROFILE.json [options]\n"
    "       soap-profile --device gpu MODEL.mlir -o PROFILE.json [options]\n"
    "       mpirun -np N soap-profile --mpi [-o MACHINE.json] [options]\n"
    "       soap-profile --device gpu --calibrate [-o MACHINE.json] "
    "[options]\n";

static void printHelp(llvm::raw_ostream &os) {
  os << "soap-profile: measures the ops of a model on this CPU (or, with "
        "--device gpu,\non this node's GPU) and writes a profile database for "
        "--soap-simulate=\n\"... profile=FILE\"; with --mpi, calibrates the "
        "local machine file\n(cpu-local.json) under mpirun; with --device gpu "
        "--calibrate, a GPU machine\nfile.\n\n"
     << kUsage
     << "\nProfiling a model:\n"
        "  -o FILE              the database to write (required)\n"
        "  --machine NAME       machine whose device kind keys the entries "
        "(cpu-local)\n"
        "  --strategy S         data-parallel, model-parallel, "
        "layer-pipeline,\n"
        "                       owt, megatron or a strategy .json file;\n"
        "                       repeatable (data-parallel)\n"
        "  --devices N          device counts for named strategies; "
        "repeatable (2)\n"
        "                       the whole op (1 device) is always measured\n"
        "  --repeat N           timed runs per kernel; the median is kept "
        "(10)\n"
        "  --warmup N           untimed runs first (3)\n"
        "  --func NAME          the function to profile (the only one with a "
        "body)\n"
        "  --max-seconds S      stop measuring after S seconds (300)\n"
        "  --max-op-seconds S   skip kernels whose run takes longer (2)\n"
        "  --max-buffer-mb M    skip kernels whose buffers are larger "
        "(1024)\n"
        "  --codegen C          as executables compile the kernels: blas\n"
        "                       (OpenBLAS calls for contractions and NCHW\n"
        "                       convolutions, vectorized tiles for the other\n"
        "                       contractions and convolutions, loops for the\n"
        "                       rest), vector (tiles for every contraction "
        "and\n"
        "                       convolution) or loops (blas)\n"
        "  --merge              keep the entries already in the output file\n"
        "  --no-backward        estimate backward times (forward x gradients)\n"
        "                       instead of timing the ops autodiff emits\n"
        "  --optimizer O        the optimizer whose update is measured, at\n"
        "                       sizes up to the largest parameter: sgd,\n"
        "                       momentum or adam (sgd, as --soap-simulate)\n"
        "  --program            time the kernels the training step runs (the\n"
        "                       programs of one device and of the strategies,\n"
        "                       lowered as --soap-lower-cpu lowers them, with\n"
        "                       their fused elementwise chains and merged\n"
        "                       reductions), each counted for the op it comes\n"
        "                       from, instead of each op alone\n"
        "  --run                with --program: run each training step (linked "
        "as\n"
        "                       soap-translate links it; strategies on their\n"
        "                       ranks through --mpirun) for --repeat steps\n"
        "                       after --warmup, and time each kernel where\n"
        "                       the step runs it (its trace), instead of each\n"
        "                       kernel alone\n"
        "  --runs N             with --run: runs of each step, the steps\n"
        "                       taking turns; kernels are timed over each\n"
        "                       step's fastest quarter of steps of all its\n"
        "                       runs (3)\n"
        "  --mpirun CMD         with --run: the MPI launcher and its options,\n"
        "                       split at spaces, before -np N (mpirun)\n"
        "  --before-run CMD     with --run: a shell command run before each\n"
        "                       run of a step (bench/validate.sh waits for\n"
        "                       a quiet host there: soap-host-probe); a\n"
        "                       failing command stops the profiling\n"
        "  --loss L             with --program: the loss the training step\n"
        "                       appends to a model that returns no scalar (an\n"
        "                       export's logits): --soap-training-step's "
        "loss=\n"
        "                       (softmax-xent, mse; none)\n"
        "  --warm-cache         time kernels back to back on warm buffers\n"
        "                       (default: each sample starts with the buffers\n"
        "                       out of the core's private caches, as in a\n"
        "                       training step where other ops ran between)\n"
        "  --check              compare each blas or vectorized kernel's\n"
        "                       results with scalar loops'\n"
        "  --quiet              no line per kernel, only the summary\n"
        "  --verbose            say why a kernel runs as scalar loops\n"
        "  --device D           cpu, or gpu: compile each kernel as\n"
        "                       --soap-lower-gpu does (cuBLAS/cuDNN calls or "
        "a\n"
        "                       generated CUDA kernel), time it with CUDA\n"
        "                       events on this node's GPU, and key the "
        "entries\n"
        "                       by the machine's GPU type (--machine, default\n"
        "                       h100-8 for gpu) (cpu)\n"
        "  --gpu-math M         with --device gpu: the arithmetic of cuBLAS\n"
        "                       and cuDNN calls, f32, tf32 or bf16, as\n"
        "                       --soap-lower-gpu's math= (f32)\n"
        "  --gpu-chip C         with --device gpu: the architecture generated\n"
        "                       kernels are compiled for (the GPU's, sm_XY)\n"
        "\nCalibrating the machine (--mpi, under mpirun on one node):\n"
        "  -o FILE              the machine file to write (the base file)\n"
        "  --base NAME          machine file to start from (cpu-local)\n"
        "  --max-message-bytes B  largest message measured (67108864);\n"
        "                       libsoaprt's collectives, whose times the\n"
        "                       simulator uses, up to 16 MiB of it\n"
        "  --min-message-bytes B  smallest message measured (8)\n"
        "  --stream-mb M        STREAM array size (4 x last-level cache)\n"
        "  --matmul-size N      the N^3 f32 matmul for the matmul "
        "efficiency (512)\n"
        "  --codegen C          how that matmul is compiled (vector)\n"
        "  --quiet              no tables, only the summary\n"
        "\nCalibrating a GPU machine file (--device gpu --calibrate, on one "
        "node):\n"
        "  -o FILE              the machine file to write (default: BASE-\n"
        "                       calibrated.json here; never a file of\n"
        "                       machines/ unless -o names it)\n"
        "  --base NAME          machine file to start from (h100-8)\n"
        "  --matmul-size N      the N^3 product timed through cuBLAS in f32,\n"
        "                       tf32 and bf16 math (8192)\n"
        "  --bandwidth-mb M     the device-to-device copy (1024)\n"
        "  --max-message-bytes B  largest NCCL all-reduce, with several "
        "GPUs\n"
        "                       (268435456)\n"
        "  --gpu-chip C         as above, for the generated kernel timed\n"
        "  --quiet              no tables, only the summary\n"
        "\nWithout a usable CUDA device the GPU modes stop with \"no CUDA "
        "device usable:\n<reason>\"; a build without libsoaprt_gpu says that "
        "it has no GPU support.\n"
        "\nSee docs/profiler.md.\n";
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "soap-profile: " << message << "\n";
  return 1;
}

namespace {
/// The command line, split into flags with values and positionals.
struct CommandLine {
  bool mpi = false, help = false, noBackward = false, warmCache = false,
       merge = false, quiet = false, check = false, verbose = false,
       calibrate = false, program = false, run = false;
  std::vector<std::string> positionals;
  std::map<std::string, std::vector<std::string>> values;

  std::optional<std::string> last(const std::string &flag) const {
    auto it = values.find(flag);
    if (it == values.end() || it->second.empty())
      return std::nullopt;
    return it->second.back();
  }
};
} // namespace

static const std::vector<std::string> &flagsWithValues() {
  static const std::vector<std::string> flags = {"-o",
                                                 "--machine",
                                                 "--strategy",
                                                 "--devices",
                                                 "--repeat",
                                                 "--warmup",
                                                 "--func",
                                                 "--max-seconds",
                                                 "--max-op-seconds",
                                                 "--max-buffer-mb",
                                                 "--codegen",
                                                 "--optimizer",
                                                 "--mpirun",
                                                 "--before-run",
                                                 "--runs",
                                                 "--loss",
                                                 "--base",
                                                 "--max-message-bytes",
                                                 "--min-message-bytes",
                                                 "--stream-mb",
                                                 "--matmul-size",
                                                 "--device",
                                                 "--gpu-math",
                                                 "--gpu-chip",
                                                 "--bandwidth-mb"};
  return flags;
}

static std::optional<CommandLine> parseCommandLine(int argc, char **argv,
                                                   std::string &error) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      cl.help = true;
      continue;
    }
    if (arg == "--no-backward") {
      cl.noBackward = true;
      continue;
    }
    if (arg == "--warm-cache") {
      cl.warmCache = true;
      continue;
    }
    if (arg == "--calibrate") {
      cl.calibrate = true;
      continue;
    }
    if (arg == "--program") {
      cl.program = true;
      continue;
    }
    if (arg == "--run") {
      cl.run = true;
      continue;
    }
    if (arg == "--mpi" || arg == "--merge" || arg == "--quiet" ||
        arg == "--check" || arg == "--verbose") {
      (arg == "--mpi"       ? cl.mpi
       : arg == "--merge"   ? cl.merge
       : arg == "--check"   ? cl.check
       : arg == "--verbose" ? cl.verbose
                            : cl.quiet) = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      std::string flag = arg, value;
      size_t eq = arg.find('=');
      bool inlineValue = eq != std::string::npos && arg.rfind("--", 0) == 0;
      if (inlineValue)
        flag = arg.substr(0, eq);
      if (!llvm::is_contained(flagsWithValues(), flag)) {
        error =
            "unknown option '" + flag + "' (soap-profile --help lists them)";
        return std::nullopt;
      }
      if (inlineValue) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        error = "option '" + flag + "' needs a value";
        return std::nullopt;
      }
      cl.values[flag].push_back(value);
      continue;
    }
    cl.positionals.push_back(arg);
  }
  return cl;
}

/// `text` as a number in [lo, hi], or an error naming the flag.
template <typename T>
static bool parseNumber(const CommandLine &cl, const std::string &flag, T lo,
                        T hi, T &out, std::string &error) {
  std::optional<std::string> text = cl.last(flag);
  if (!text)
    return true;
  char *end = nullptr;
  double value = std::strtod(text->c_str(), &end);
  bool integral = std::is_integral<T>::value;
  if (text->empty() || *end != '\0' || value < static_cast<double>(lo) ||
      value > static_cast<double>(hi) ||
      (integral && value != static_cast<double>(static_cast<int64_t>(value)))) {
    error = flag + " needs " + (integral ? "an integer" : "a number") +
            " in [" + llvm::formatv("{0}", lo).str() + ", " +
            llvm::formatv("{0}", hi).str() + "], got '" + *text + "'";
    return false;
  }
  out = static_cast<T>(value);
  return true;
}

static void registerEverything(mlir::DialectRegistry &registry) {
  // The kernel lowering parses its pipelines by pass name.
  mlir::registerAllPasses();
  // --program builds training steps with SOAP's passes.
  soap::registerSoapPasses();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  soap::registerSoapDialects(registry);
  registerKernelCodegen(registry);
  // --device gpu lowers kernels as --soap-lower-gpu does.
  soap::getGpuLoweringDependentDialects(registry);
}

/// `--codegen`'s value, or an error.
static std::optional<Codegen> parseCodegen(const CommandLine &cl,
                                           const char *byDefault,
                                           std::string &error) {
  std::string text = cl.last("--codegen").value_or(byDefault);
  if (text == "blas")
    return Codegen::Blas;
  if (text == "vector")
    return Codegen::Vector;
  if (text == "loops")
    return Codegen::Loops;
  error = "--codegen must be blas, vector or loops, got '" + text + "'";
  return std::nullopt;
}

/// Under mpirun every rank parses the command line: only rank 0 (as the
/// launcher numbers it) reports a mistake in it.
static int failOnRankZero(const llvm::Twine &message) {
  for (const char *variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *rank = std::getenv(variable))
      if (std::string(rank) != "0")
        return 1;
  return fail(message);
}

static int runMpiMode(int &argc, char **&argv, const CommandLine &cl) {
  std::string error;
  MpiCalibrationOptions options;
  if (!cl.positionals.empty())
    return failOnRankZero("--mpi takes no model (got '" +
                          cl.positionals.front() + "')");
  for (const char *flag :
       {"--machine", "--strategy", "--devices", "--repeat", "--warmup",
        "--func", "--max-seconds", "--max-op-seconds", "--max-buffer-mb"})
    if (cl.last(flag))
      return failOnRankZero(std::string(flag) +
                            " profiles a model; it does not go with --mpi");
  for (const char *flag :
       {"--device", "--gpu-math", "--gpu-chip", "--bandwidth-mb"})
    if (cl.last(flag))
      return failOnRankZero(std::string(flag) +
                            " is for the GPU; --mpi calibrates this CPU (a "
                            "GPU: --device gpu --calibrate)");
  if (cl.merge || cl.check || cl.verbose)
    return failOnRankZero(std::string(cl.merge   ? "--merge"
                                      : cl.check ? "--check"
                                                 : "--verbose") +
                          " profiles a model; it does not go with --mpi");
  options.output = cl.last("-o").value_or("");
  options.base = cl.last("--base").value_or("cpu-local");
  options.quiet = cl.quiet;
  int64_t streamMb = 0;
  if (!parseNumber<int64_t>(cl, "--max-message-bytes", 1, int64_t(1) << 30,
                            options.maxMessageBytes, error) ||
      !parseNumber<int64_t>(cl, "--min-message-bytes", 1, int64_t(1) << 30,
                            options.minMessageBytes, error) ||
      !parseNumber<int64_t>(cl, "--stream-mb", 1, 1 << 16, streamMb, error) ||
      !parseNumber<int>(cl, "--matmul-size", 8, 4096, options.host.matmulSize,
                        error))
    return failOnRankZero(error);
  if (options.minMessageBytes > options.maxMessageBytes)
    return failOnRankZero(
        "--min-message-bytes is larger than --max-message-bytes");
  options.host.streamBytes = streamMb << 20;
  // The matmul efficiency is still that of the vectorized codegen.
  std::optional<Codegen> codegen = parseCodegen(cl, "vector", error);
  if (!codegen)
    return failOnRankZero(error);
  options.host.codegen = *codegen;
  useOneBlasThread();

  mlir::DialectRegistry registry;
  registerEverything(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  return runMpiCalibration(&argc, &argv, context, options);
}

static int runGpuCalibrationMode(const CommandLine &cl) {
  std::string error;
  if (!cl.positionals.empty())
    return fail("--calibrate takes no model (got '" + cl.positionals.front() +
                "')");
  for (const char *flag :
       {"--machine", "--strategy", "--devices", "--repeat", "--warmup",
        "--func", "--max-seconds", "--max-op-seconds", "--max-buffer-mb",
        "--codegen", "--optimizer", "--loss", "--gpu-math", "--stream-mb",
        "--min-message-bytes"})
    if (cl.last(flag))
      return fail(std::string(flag) +
                  " does not go with --device gpu --calibrate");
  GpuCalibrationOptions options;
  options.output = cl.last("-o").value_or("");
  options.base = cl.last("--base").value_or("h100-8");
  options.chip = cl.last("--gpu-chip").value_or("");
  options.quiet = cl.quiet;
  int64_t bandwidthMb = options.bandwidthBytes >> 20;
  if (!parseNumber<int>(cl, "--matmul-size", 64, 65536, options.matmulSize,
                        error) ||
      !parseNumber<int64_t>(cl, "--bandwidth-mb", 1, int64_t(1) << 20,
                            bandwidthMb, error) ||
      !parseNumber<int64_t>(cl, "--max-message-bytes", 8, int64_t(1) << 34,
                            options.maxMessageBytes, error))
    return fail(error);
  options.bandwidthBytes = bandwidthMb << 20;
  mlir::DialectRegistry registry;
  registerEverything(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  return runGpuCalibration(context, options);
}

static int runKernelMode(const CommandLine &cl, bool onGpu) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::string error;
  for (const char *flag :
       {"--base", "--max-message-bytes", "--min-message-bytes", "--stream-mb",
        "--matmul-size", "--bandwidth-mb"})
    if (cl.last(flag))
      return fail(std::string(flag) + " calibrates the machine; it needs "
                                      "--mpi (or --device gpu --calibrate)");
  if (onGpu) {
    if (cl.last("--codegen") || cl.check || cl.warmCache || cl.program)
      return fail(std::string(cl.last("--codegen") ? "--codegen"
                              : cl.check           ? "--check"
                              : cl.program         ? "--program"
                                                   : "--warm-cache") +
                  " is about CPU kernels; it does not go with --device gpu");
  } else {
    for (const char *flag : {"--gpu-math", "--gpu-chip"})
      if (cl.last(flag))
        return fail(std::string(flag) + " needs --device gpu");
  }
  if (cl.positionals.empty())
    return fail("no model given\n" + llvm::Twine(kUsage));
  if (cl.positionals.size() > 1)
    return fail("one model at a time (got '" + cl.positionals[0] + "' and '" +
                cl.positionals[1] + "')");
  std::optional<std::string> output = cl.last("-o");
  if (!output)
    return fail("no output file: use -o PROFILE.json");

  // Fail before measuring, not after.
  if (!soap::checkWritable(*output, error))
    return fail(error);

  KernelProfileOptions options;
  int64_t maxBufferMb = options.maxBufferBytes >> 20;
  if (!parseNumber<int>(cl, "--repeat", 1, 1000000, options.repeat, error) ||
      !parseNumber<int>(cl, "--warmup", 0, 1000000, options.warmup, error) ||
      !parseNumber<double>(cl, "--max-seconds", 0, 1e9, options.maxSeconds,
                           error) ||
      !parseNumber<double>(cl, "--max-op-seconds", 0, 1e9, options.maxOpSeconds,
                           error) ||
      !parseNumber<int64_t>(cl, "--max-buffer-mb", 1, int64_t(1) << 30,
                            maxBufferMb, error))
    return fail(error);
  options.maxBufferBytes = maxBufferMb << 20;
  options.quiet = cl.quiet;
  options.check = cl.check;
  options.verbose = cl.verbose;
  options.backward = !cl.noBackward;
  options.runPrograms = cl.run;
  options.keepRecorded = cl.merge;
  if (!parseNumber<int>(cl, "--runs", 1, 1000, options.runs, error))
    return fail(error);
  if (cl.last("--runs") && !cl.run)
    return fail("--runs counts the runs of --run; it needs --run");
  if (std::optional<std::string> launcher = cl.last("--mpirun")) {
    options.launcher.clear();
    for (llvm::StringRef part : llvm::split(*launcher, ' '))
      if (!part.empty())
        options.launcher.push_back(part.str());
    if (options.launcher.empty())
      return fail("--mpirun needs a command, got '" + *launcher + "'");
  }
  if (std::optional<std::string> hook = cl.last("--before-run")) {
    if (!cl.run)
      return fail("--before-run runs before each run of --run; it needs "
                  "--run");
    if (llvm::StringRef(*hook).trim().empty())
      return fail("--before-run needs a command");
    options.beforeRun = *hook;
  }
  if ((cl.run || cl.last("--mpirun")) && !cl.program)
    return fail(std::string(cl.run ? "--run" : "--mpirun") +
                " runs the training steps --program builds; it needs "
                "--program");
  if (cl.last("--mpirun") && !cl.run)
    return fail("--mpirun is the launcher of --run; it needs --run");
  CompiledKernel::coldCaches = !cl.warmCache;
  std::optional<Codegen> codegen = parseCodegen(cl, "blas", error);
  if (!codegen)
    return fail(error);
  // One device of cpu-local.json is one core: BLAS kernels run on one
  // thread, as in executables (bench/validate.sh: OPENBLAS_NUM_THREADS=1).
  useOneBlasThread();
  options.codegen = *codegen;
  if (cl.values.count("--strategy"))
    options.strategies = cl.values.at("--strategy");
  if (cl.values.count("--devices")) {
    options.deviceCounts.clear();
    for (const std::string &text : cl.values.at("--devices")) {
      char *end = nullptr;
      long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || n < 1 || n > 1 << 20)
        return fail("--devices needs a positive integer, got '" + text + "'");
      options.deviceCounts.push_back(static_cast<int>(n));
    }
  }

  // On the GPU: fail now, clearly, rather than after reading the model.
  std::optional<GpuShardTimer> gpuTimer;
  if (onGpu) {
    GpuTimingOptions timing;
    std::string math = cl.last("--gpu-math").value_or("f32");
    std::optional<GpuMath> parsedMath = parseGpuMath(math);
    if (!parsedMath)
      return fail("--gpu-math must be f32, tf32 or bf16, got '" + math + "'");
    std::string gpu;
    if (!openGpu(gpu, error))
      return fail(error);
    timing.math = *parsedMath;
    timing.chip = cl.last("--gpu-chip").value_or("");
    timing.warmup = options.warmup;
    timing.repeat = options.repeat;
    timing.maxOpSeconds = options.maxOpSeconds;
    gpuTimer.emplace(timing);
    options.gpu = &*gpuTimer;
    if (!options.quiet)
      llvm::outs() << "soap-profile: GPU " << gpu << "\n";
  }

  std::string machineName =
      cl.last("--machine").value_or(onGpu ? "h100-8" : "cpu-local");
  std::string machinePath = resolveMachinePath(machineName, error);
  if (machinePath.empty())
    return fail(error);
  std::optional<Machine> machine = Machine::load(machinePath, error);
  if (!machine)
    return fail(error);

  mlir::DialectRegistry registry;
  registerEverything(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  const std::string &modelPath = cl.positionals.front();
  std::string openError;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(modelPath, &openError);
  if (!file)
    return fail("cannot read model '" + modelPath + "': " + openError);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse model '" + modelPath + "'");
  mlir::FunctionOpInterface func =
      findTargetFunction(*module, cl.last("--func").value_or(""), error);
  if (!func) {
    // The shared message speaks of the passes' option.
    size_t option = error.find("func=NAME");
    if (option != std::string::npos)
      error.replace(option, 9, "--func NAME");
    return fail(modelPath + ": " + error);
  }
  std::optional<BuiltOpGraph> built = buildOpGraph(func, error);
  if (!built)
    return fail(modelPath + ": " + error);

  const std::string &deviceKind = machine->deviceType().name;
  std::string optimizer = cl.last("--optimizer").value_or("sgd");
  if (!parseOptimizer(optimizer))
    return fail("--optimizer must be sgd, momentum or adam, got '" + optimizer +
                "'");
  ProfileDatabase db;
  if (cl.merge && llvm::sys::fs::exists(*output)) {
    auto existing = ProfileDatabase::load(*output, error);
    if (!existing)
      return fail(error);
    db = std::move(*existing);
  }
  llvm::raw_ostream &os = llvm::outs();

  std::vector<std::pair<std::string, int>> skipped;
  std::optional<std::vector<ShardToMeasure>> shards;
  KernelProfileSummary summary;
  std::optional<ProgramProfileSummary> programs;
  if (cl.program) {
    if (!options.quiet)
      os << "soap-profile: the training steps of " << modelPath << " on "
         << deviceKind << " (" << machine->name() << ")\n";
    programs = profilePrograms(*module, *built, options, optimizer,
                               cl.last("--loss").value_or("none"), deviceKind,
                               db, os, error);
    if (!programs)
      return fail(modelPath + ": " + error);
  } else {
    if (cl.last("--loss"))
      return fail("--loss names the loss of the training steps --program "
                  "builds; it needs --program");
    shards = collectShards(*built, options, deviceKind, skipped, error);
    if (!shards)
      return fail(error);
    if (!options.quiet)
      os << "soap-profile: " << shards->size() << " kernel(s) of "
         << built->graph.nodes.size() << " op(s) of " << modelPath << " on "
         << deviceKind << " (" << machine->name() << ")\n";
    summary = profileKernels(*built, *shards, *machine, options, db, os);
  }
  // The optimizer update: a few sizes up to the largest parameter, which the
  // cost model interpolates (soap.update entries).
  int64_t largest = 0;
  for (const GraphTensor &t : built->graph.tensors)
    if (t.isParameter && t.producer < 0) {
      int64_t n = 1;
      for (int64_t d : t.shape)
        n *= d;
      largest = std::max(largest, n);
    }
  int updates = 0;
  for (int64_t n = 256; largest > 0; n *= 4) {
    std::optional<double> time =
        onGpu ? timeGpuUpdate(context, *gpuTimer, optimizer, n, error)
              : measureUpdate(context, optimizer, n, error);
    if (!time)
      return fail("measuring the " + optimizer + " update: " + error);
    db.record(ProfileDatabase::updateKey(optimizer, n, deviceKind),
              {*time, 0, false});
    ++updates;
    if (n >= largest)
      break;
  }
  if (!db.save(*output, error))
    return fail(error);

  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  int skippedOps = 0;
  for (const auto &[name, count] : skipped)
    skippedOps += count;
  if (programs) {
    os << "soap-profile: timed " << programs->kernels << " kernel(s) of "
       << programs->programs << " training step(s) ("
       << programs->forwardFusedAway
       << " op(s) whose forward work runs in another op's kernel; "
       << programs->mergedKernels << " kernel(s) merging several ops' work; "
       << programs->unattributed << " kernel(s) of no op of the model"
       << (cl.run ? "" : ", such as the optimizer update");
    for (const auto &[name, count] : programs->unattributedByOp)
      os << (name == programs->unattributedByOp.begin()->first ? ": " : ", ")
         << count << " " << name;
    os << ")";
    if (cl.run)
      os << llvm::formatv("; copies outside the traced kernels and copies, "
                          "which no op is charged for: {0:F3} ms per step "
                          "and rank; {1} optimizer update kernel(s) and the "
                          "blocking collectives timed in the steps: {2} "
                          "entries",
                          programs->copySecondsPerStep * 1e3,
                          programs->updateKernels, programs->inStepEntries);
    os << " in " << llvm::formatv("{0:F1}", seconds) << " s; "
       << programs->entries << " op shard(s) recorded";
    if (updates)
      os << "; the " << optimizer << " update at " << updates << " size(s)";
    os << "\n";
    for (const std::string &note : programs->notes)
      os << "soap-profile: note: " << note << "\n";
    os << "soap-profile: wrote " << *output << " (" << db.size()
       << " entries)\n";
    return 0;
  }
  os << "soap-profile: measured " << summary.measured << " kernel(s) (";
  if (onGpu)
    for (const char *library : {"cublas", "cudnn", "kernel"}) {
      auto it = summary.byGpuLibrary.find(library);
      os << (it == summary.byGpuLibrary.end() ? 0 : it->second) << " "
         << library << (std::string(library) == "kernel" ? "; " : ", ");
    }
  else
    os << summary.blas << " blas, " << summary.vectorized << " vectorized, "
       << summary.measured - summary.blas - summary.vectorized << " loops; ";
  os << summary.backwardMeasured
     << " with their backward ops timed) in "
     << llvm::formatv("{0:F1}", seconds) << " s; "
     << shards->size() - summary.measured << " kernel(s) not measured; "
     << skippedOps << " op(s) left to the roofline";
  if (updates)
    os << "; the " << optimizer << " update at " << updates << " size(s)";
  if (!skipped.empty()) {
    os << " (";
    bool first = true;
    for (const auto &[name, count] : skipped) {
      os << (first ? "" : ", ") << count << " " << name;
      first = false;
    }
    os << ")";
  }
  os << "\n";
  for (const std::string &note : summary.notes)
    os << "soap-profile: note: " << note << "\n";
  if (options.check)
    os << "soap-profile: check: " << summary.checked
       << " blas or vectorized kernel(s) match scalar loops, "
       << summary.mismatches.size() << " do not\n";
  for (const std::string &mismatch : summary.mismatches)
    llvm::errs() << "soap-profile: check failed: " << mismatch << "\n";
  os << "soap-profile: wrote " << *output << " (" << db.size() << " entries)\n";
  return summary.mismatches.empty() ? 0 : 1;
}

int main(int argc, char **argv) {
  std::string error;
  std::optional<CommandLine> cl = parseCommandLine(argc, argv, error);
  if (!cl)
    return fail(error);
  if (cl->help) {
    printHelp(llvm::outs());
    return 0;
  }
  std::string device = cl->last("--device").value_or("cpu");
  if (device != "cpu" && device != "gpu")
    return fail("--device must be cpu or gpu, got '" + device + "'");
  if (cl->calibrate) {
    if (device != "gpu")
      return fail("--calibrate calibrates a GPU (--device gpu); this CPU is "
                  "calibrated under mpirun with --mpi");
    return runGpuCalibrationMode(*cl);
  }
  if (cl->mpi)
    return runMpiMode(argc, argv, *cl);
  // As the executables' driver does: on a CPU OpenBLAS does not recognise
  // (virtual machines), name its core and start again, so that BLAS
  // kernels are timed with the kernels executables get.
  soaprt_select_blas_core(argv);
  return runKernelMode(*cl, device == "gpu");
}
