//===- ToExecutable.cpp - a lowered module as a native executable --------===//
//
// LLVM dialect -> LLVM IR (mlir::translateModuleToLLVMIR) -> one function
// per top-level loop nest -> the -O3 pipeline and code generation by LLVM's
// TargetMachine for the host triple (the host CPU's features unless
// --soap-target-cpu says otherwise; functions left with over
// --soap-large-function instructions by the fast code generator) -> object
// files, linked with `c++` (or $CXX) against libsoaprt_driver,
// libsoaprt, OpenBLAS, libm and the MPI libraries libsoaprt's backend was
// built with (none when SOAP was built without MPI). A module with
// soap.target = "gpu" (--soap-lower-gpu) also links libsoaprt_gpu (all of
// it: its static initializer connects the driver to the GPU) and the CUDA
// runtime, cuBLAS, cuBLASLt, cuDNN and NCCL found when SOAP was configured,
// with rpaths to their folders. libsoaprt is looked for in
// $SOAP_RUNTIME_DIR, then beside soap-translate (../lib), then in this
// build tree, then in the install prefix.
//
//===----------------------------------------------------------------------===//

#include "ToExecutable.h"

#include "soap/Dialect/SoapDialect.h"
#include "soap/codegen/LargeFunctions.h"
#include "soap/codegen/LoopOutlining.h"
#include "soap/codegen/TargetTuning.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <optional>

using namespace mlir;

namespace {

llvm::cl::opt<std::string> targetCpu(
    "soap-target-cpu",
    llvm::cl::desc("CPU that --soap-to-executable compiles for: native (this "
                   "machine's CPU and features, the default) or an LLVM CPU "
                   "name such as x86-64-v3"),
    llvm::cl::init("native"));

llvm::cl::opt<bool> allowGathers(
    "soap-gathers",
    llvm::cl::desc("Let LLVM vectorize strided loads and stores of generated "
                   "loops with gathers and scatters (off by default: slower "
                   "where measured, soap/codegen/TargetTuning.h)"),
    llvm::cl::init(false));

llvm::cl::opt<unsigned> largeFunction(
    "soap-large-function",
    llvm::cl::desc("Loop-free functions of at least this many LLVM "
                   "instructions once optimized (a partitioned step's driver "
                   "code between its kernels) are compiled by the fast code "
                   "generator, whose time is linear in their size (0: never)"),
    llvm::cl::init(20000));

/// Deletes a temporary file when it goes out of scope.
struct TemporaryFile {
  llvm::SmallString<128> path;
  TemporaryFile() = default;
  TemporaryFile(TemporaryFile &&other) : path(std::move(other.path)) {
    other.path.clear();
  }
  TemporaryFile(const TemporaryFile &) = delete;
  TemporaryFile &operator=(const TemporaryFile &) = delete;
  ~TemporaryFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

bool makeTemporary(llvm::StringRef suffix, TemporaryFile &file,
                   std::string &error) {
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "soap-exe", suffix, file.path)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  return true;
}

/// The folder holding libsoaprt.a and libsoaprt_driver.a.
std::optional<std::string> runtimeDir(std::string &error) {
  auto has = [](const std::string &dir) {
    return llvm::sys::fs::exists(dir + "/libsoaprt.a") &&
           llvm::sys::fs::exists(dir + "/libsoaprt_driver.a");
  };
  if (const char *env = std::getenv("SOAP_RUNTIME_DIR")) {
    if (has(env))
      return std::string(env);
    error = std::string("SOAP_RUNTIME_DIR=") + env +
            " holds no libsoaprt.a and libsoaprt_driver.a";
    return std::nullopt;
  }
  // Beside this soap-translate first (BINDIR/../LIBDIR, so that an install
  // moved to another prefix finds its own runtime), then the build tree,
  // then the configured install prefix.
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&runtimeDir));
  if (!self.empty()) {
    llvm::SmallString<256> beside(llvm::sys::path::parent_path(
        llvm::sys::path::parent_path(self)));
    llvm::sys::path::append(beside, SOAP_RUNTIME_LIBDIR);
    if (has(std::string(beside)))
      return std::string(beside);
  }
  for (const char *dir : {SOAP_BUILD_RUNTIME_DIR, SOAP_INSTALLED_RUNTIME_DIR})
    if (has(dir))
      return std::string(dir);
  error = std::string("cannot find libsoaprt.a and libsoaprt_driver.a in ") +
          SOAP_BUILD_RUNTIME_DIR + " or " + SOAP_INSTALLED_RUNTIME_DIR +
          " (build the soaprt and soaprt_driver targets, or set "
          "SOAP_RUNTIME_DIR)";
  return std::nullopt;
}

/// Whether the module runs on a GPU (soap.target = "gpu").
bool targetsGpu(ModuleOp module) {
  auto target = module->getAttrOfType<StringAttr>("soap.target");
  return target && target.getValue() == "gpu";
}

/// The linker arguments of a GPU executable: libsoaprt_gpu, then the CUDA
/// libraries found when SOAP was configured, with rpaths. Fails when SOAP
/// was built without GPU support or a library has gone missing.
std::optional<std::vector<std::string>> gpuLinkArguments(const std::string &rtDir,
                                                         std::string &error) {
  llvm::SmallVector<llvm::StringRef> libraries, folders;
  llvm::StringRef(SOAP_GPU_LINK_LIBRARIES)
      .split(libraries, '|', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  llvm::StringRef(SOAP_GPU_RPATH_DIRS)
      .split(folders, '|', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  if (libraries.empty()) {
    error = "the module targets a GPU (soap.target = \"gpu\") but SOAP was "
            "built without GPU support (it needs the CUDA toolkit >= 12, "
            "cuDNN and NCCL at configure time; see docs/runtime.md)";
    return std::nullopt;
  }
  if (!llvm::sys::fs::exists(rtDir + "/libsoaprt_gpu.a")) {
    error = "cannot find libsoaprt_gpu.a in " + rtDir +
            " (build the soaprt_gpu target)";
    return std::nullopt;
  }
  std::vector<std::string> args = {"-Wl,--whole-archive", "-lsoaprt_gpu",
                                   "-Wl,--no-whole-archive"};
  for (llvm::StringRef library : libraries) {
    if (!llvm::sys::fs::exists(library)) {
      error = "the GPU library " + library.str() +
              " that libsoaprt_gpu was built with is missing (reinstall it, "
              "or rebuild SOAP)";
      return std::nullopt;
    }
    args.push_back(library.str());
  }
  for (llvm::StringRef folder : folders)
    args.push_back("-Wl,-rpath," + folder.str());
  return args;
}

/// The MPI libraries recorded when libsoaprt was built (CMake's FindMPI);
/// empty without MPI. Fails when one of them has gone missing since.
std::optional<std::vector<std::string>> mpiLibraries(std::string &error) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(SOAP_MPI_LINK_LIBRARIES)
      .split(parts, '|', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::vector<std::string> libraries;
  for (llvm::StringRef library : parts) {
    if (llvm::sys::path::is_absolute(library) &&
        !llvm::sys::fs::exists(library)) {
      error = "the MPI library " + library.str() +
              " that libsoaprt was built with is missing (reinstall "
              "libopenmpi-dev, or rebuild SOAP)";
      return std::nullopt;
    }
    libraries.push_back(library.str());
  }
  return libraries;
}

std::unique_ptr<llvm::TargetMachine>
hostTargetMachine(llvm::CodeGenOptLevel level, std::string &error) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu = targetCpu;
  llvm::SubtargetFeatures list;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      list.AddFeature(feature.first(), feature.second);
  }
  if (!allowGathers)
    soap::codegen::addCodegenTuning(triple, list);
  std::string features = list.getString();
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      level));
  if (!machine)
    error = "cannot create a target machine for " + triple.str() + " (" +
            cpu + ")";
  return machine;
}

/// Code generation of `module` by `machine` into a new temporary object
/// file, appended to `objects`.
LogicalResult emitObjectFile(llvm::Module &module, llvm::TargetMachine &machine,
                             std::vector<TemporaryFile> &objects,
                             std::string &error) {
  objects.emplace_back();
  if (!makeTemporary("o", objects.back(), error))
    return failure();
  llvm::StringRef objectPath = objects.back().path;
  std::error_code ec;
  llvm::raw_fd_ostream object(objectPath, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + objectPath.str() + "': " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, object, nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    error = "this target cannot emit object files";
    return failure();
  }
  codegen.run(module);
  object.flush();
  if (object.has_error()) {
    error = "cannot write '" + objectPath.str() +
            "': " + object.error().message();
    object.clear_error();
    return failure();
  }
  return success();
}

/// The module as optimized object code: one object file, or two when some
/// functions are large enough for the fast code generator (LargeFunctions.h).
LogicalResult emitObjects(ModuleOp module, std::vector<TemporaryFile> &objects,
                          std::string &error) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "soap-model");
  if (!llvmModule) {
    error = "translating the module to LLVM IR failed";
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine =
      hostTargetMachine(llvm::CodeGenOptLevel::Aggressive, error);
  if (!machine)
    return failure();
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  soap::codegen::outlineLoopNests(*llvmModule, machine.get());
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error e = optimize(llvmModule.get())) {
    error = "optimizing the LLVM IR failed: " + llvm::toString(std::move(e));
    return failure();
  }
  std::unique_ptr<llvm::Module> large =
      largeFunction ? soap::codegen::splitOffLargeFunctions(*llvmModule,
                                                            largeFunction)
                    : nullptr;
  if (failed(emitObjectFile(*llvmModule, *machine, objects, error)))
    return failure();
  if (!large)
    return success();
  for (llvm::Function &function : *large)
    if (!function.isDeclaration())
      llvm::errs() << "soap-translate: remark: @" << function.getName()
                   << " (" << function.getInstructionCount()
                   << " LLVM instructions) goes to the fast code generator "
                      "(--soap-large-function="
                   << largeFunction.getValue() << ")\n";
  std::unique_ptr<llvm::TargetMachine> fast =
      hostTargetMachine(llvm::CodeGenOptLevel::None, error);
  if (!fast)
    return failure();
  return emitObjectFile(*large, *fast, objects, error);
}

LogicalResult link(const std::vector<TemporaryFile> &objects,
                   llvm::StringRef exePath,
                   const std::string &rtDir,
                   const std::vector<std::string> &mpi,
                   const std::vector<std::string> &gpu, std::string &error) {
  const char *cxx = std::getenv("CXX");
  auto program = llvm::sys::findProgramByName(cxx && *cxx ? cxx : "c++");
  if (!program) {
    error = "cannot find the system compiler driver 'c++' (or $CXX) to link "
            "with";
    return failure();
  }
  TemporaryFile log;
  if (!makeTemporary("log", log, error))
    return failure();
  std::vector<std::string> args = {*program};
  for (const TemporaryFile &object : objects)
    args.push_back(object.path.str().str());
  args.insert(args.end(),
              {"-o", exePath.str(), "-L" + rtDir, "-lsoaprt_driver"});
  // libsoaprt_gpu needs libsoaprt: before it.
  args.insert(args.end(), gpu.begin(), gpu.end());
  args.insert(args.end(), {"-lsoaprt", "-lopenblas", "-ldnnl", "-lgomp",
                           "-lm"});
  args.insert(args.end(), mpi.begin(), mpi.end());
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.path.str(),
                                                log.path.str()};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt,
                                     redirects, 0, 0, &execError);
  if (rc == 0)
    return success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log.path))
    output = (*buffer)->getBuffer().str();
  std::string command;
  for (const std::string &arg : args)
    command += (command.empty() ? "" : " ") + arg;
  error = "linking failed (" + command + ")" +
          (execError.empty() ? "" : ": " + execError) +
          (output.empty() ? "" : ":\n" + output);
  return failure();
}

LogicalResult toExecutable(Operation *op, llvm::raw_ostream &output) {
  // Errors name the module's location, without the module printed after
  // them (as an op's own emitError would, all of it).
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return emitError(op->getLoc(), "expected a module");
  auto fail = [&] { return emitError(module.getLoc()); };
  for (const char *symbol :
       {"soap_train_step_packed", "soap_model_info", "soap_init_data"})
    if (!module.lookupSymbol(symbol))
      return fail() << "the module has no @" << symbol
                    << "; lower it with soap-opt --soap-lower-cpu first";
  std::string error;
  std::optional<std::string> rtDir = runtimeDir(error);
  if (!rtDir)
    return fail() << error;
  std::optional<std::vector<std::string>> mpi = mpiLibraries(error);
  if (!mpi)
    return fail() << error;
  std::vector<std::string> gpu;
  if (targetsGpu(module)) {
    std::optional<std::vector<std::string>> args = gpuLinkArguments(*rtDir, error);
    if (!args)
      return fail() << error;
    gpu = std::move(*args);
  }
  std::optional<int64_t> devices = soap::getDeclaredNumDevices(module);
  if (mpi->empty() && devices && *devices > 1)
    return fail()
           << "the module runs on " << *devices
           << " devices (soap.num_devices) but SOAP was built without MPI; "
              "install libopenmpi-dev (scripts/setup.sh) and rebuild SOAP";
  std::vector<TemporaryFile> objects;
  TemporaryFile exe;
  if (!makeTemporary("exe", exe, error))
    return fail() << error;
  if (failed(emitObjects(module, objects, error)) ||
      failed(link(objects, exe.path, *rtDir, *mpi, gpu, error)))
    return fail() << error;
  auto bytes = llvm::MemoryBuffer::getFile(exe.path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bytes)
    return fail() << "cannot read the linked executable";
  output << (*bytes)->getBuffer();
  return success();
}

} // namespace

namespace soap {

void registerToExecutableTranslation() {
  TranslateFromMLIRRegistration registration(
      "soap-to-executable",
      "Compile a module lowered by --soap-lower-cpu (or --soap-lower-gpu) "
      "into a native executable (object code for this CPU linked with "
      "libsoaprt and OpenBLAS; for soap.target = \"gpu\" also "
      "libsoaprt_gpu, CUDA, cuBLAS, cuDNN and NCCL)",
      toExecutable, [](DialectRegistry &registry) {
        registerAllDialects(registry);
        // gpu.binary and NVVM ops of --soap-lower-gpu modules too.
        registerAllToLLVMIRTranslations(registry);
      });
}

} // namespace soap
