//===- PassSupport.cpp - what SOAP's passes share -------------------------===//

#include "PassSupport.h"

#include "soap/Dialect/SoapDialect.h"
#include "soap/support/AtomicFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace soap {

std::optional<BuiltOpGraph> buildModuleGraph(ModuleOp module,
                                             llvm::StringRef funcName) {
  std::string error;
  FunctionOpInterface func = findTargetFunction(module, funcName, error);
  if (!func) {
    module.emitError() << error;
    return std::nullopt;
  }
  auto built = buildOpGraph(func, error);
  if (!built)
    func.emitError() << error;
  return built;
}

std::optional<Machine> loadMachineByName(const std::string &name, int devices,
                                         std::string &error) {
  if (name.empty()) {
    error = "no machine given: use machine=FILE.json or a name from "
            "machines/ such as p100-4x4";
    return std::nullopt;
  }
  std::vector<std::string> candidates = {name};
  if (name.find('/') == std::string::npos) {
    for (const char *dir : {SOAP_MACHINES_DIR, SOAP_INSTALLED_MACHINES_DIR}) {
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, name);
      candidates.push_back(std::string(path));
      candidates.push_back(std::string(path) + ".json");
    }
  }
  std::string path;
  for (const std::string &candidate : candidates)
    if (llvm::sys::fs::is_regular_file(candidate)) {
      path = candidate;
      break;
    }
  if (path.empty()) {
    error = "machine '" + name + "' not found (not a file, nor a name in " +
            SOAP_MACHINES_DIR + ")";
    return std::nullopt;
  }
  std::optional<Machine> machine = Machine::load(path, error);
  if (!machine || devices <= 0 || devices == machine->numDevices())
    return machine;
  return machine->withDevices(devices, error);
}

bool carriesConfigs(Operation *root) {
  return root
      ->walk([](Operation *op) {
        return op->hasAttr(SoapDialect::getConfigAttrName()) ||
                       op->hasAttr(SoapDialect::getReplicatedAttrName())
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

FailureOr<int> resolveDeviceCount(ModuleOp module, int64_t devices,
                                  int fallback) {
  if (devices < 0 || devices > kMaxDevices)
    return module.emitError()
           << "devices=" << devices << " is not a device count: give 1 to "
           << kMaxDevices << " (or 0 for the module's soap.num_devices)";
  if (devices > 0)
    return static_cast<int>(devices);
  if (std::optional<int64_t> declared = getDeclaredNumDevices(module)) {
    if (*declared < 1 || *declared > kMaxDevices)
      return module.emitError()
             << "soap.num_devices = " << *declared
             << " is not a device count: give 1 to " << kMaxDevices;
    return static_cast<int>(*declared);
  }
  return fallback;
}

LogicalResult prepareSimulation(ModuleOp module, const std::string &machineName,
                                int devices, const std::string &profileFile,
                                const std::string &optimizerName,
                                SimulationSetup &setup) {
  if (std::optional<Optimizer> parsed = parseOptimizer(optimizerName))
    setup.optimizer = *parsed;
  else
    return module.emitError() << "unknown optimizer '" << optimizerName
                              << "'; expected sgd, momentum or adam";
  FailureOr<int> count = resolveDeviceCount(module, devices, 0);
  if (failed(count))
    return failure();
  std::string error;
  setup.machine = loadMachineByName(machineName, *count, error);
  if (!setup.machine)
    return module.emitError() << error;
  if (!profileFile.empty()) {
    setup.profile = ProfileDatabase::load(profileFile, error);
    if (!setup.profile)
      return module.emitError() << error;
  }
  return success();
}

std::optional<ProfileCoverage>
reportProfileCoverage(llvm::StringRef tool, const OpGraph &graph,
                      const std::vector<ParallelConfig> &configs,
                      const SimulationSetup &setup,
                      const std::vector<char> &madeCopies) {
  if (!setup.profile)
    return std::nullopt;
  ProfileCoverage coverage =
      profileCoverage(graph, configs, *setup.profile,
                      setup.machine->deviceType().name, madeCopies);
  llvm::errs() << tool << ": profile: " << coverage.measured
               << " op(s) measured, " << coverage.scaled
               << " scaled from another shard of the op, " << coverage.roofline
               << " priced by the roofline";
  const char *separator = ": ";
  for (const auto &[op, count] : coverage.rooflineByOp) {
    llvm::errs() << separator << op << " x" << count;
    separator = ", ";
  }
  llvm::errs() << "\n";
  return coverage;
}

Operation *findTosaOp(Operation *root) {
  Operation *found = nullptr;
  root->walk([&](Operation *op) {
    if (op->getName().getDialectNamespace() != "tosa")
      return WalkResult::advance();
    found = op;
    return WalkResult::interrupt();
  });
  return found;
}

LogicalResult rejectTosa(Operation *root, StringRef pass) {
  Operation *tosa = findTosaOp(root);
  if (!tosa)
    return success();
  return tosa->emitError()
         << pass << ": '" << tosa->getName()
         << "' is TOSA; lower the model to linalg first: soap-opt "
            "--pass-pipeline=\""
         << kTosaToLinalgPipeline << "\" (docs/real-models.md)";
}

LogicalResult refuseAfterTrainingStep(ModuleOp module, Operation *target,
                                      StringRef pass) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || step.isExternal() || step.getOperation() == target)
    return success();
  return module.emitError()
         << "--" << pass << " changes the model, but the module already has "
         << "the @train_step --soap-training-step made from it, which would "
            "stay as it was: run --"
         << pass << " before --soap-training-step";
}

func::FuncOp findTargetFuncOp(ModuleOp module, StringRef funcName,
                              StringRef pass) {
  std::string error;
  FunctionOpInterface target = findTargetFunction(module, funcName, error);
  if (!target) {
    module.emitError() << pass << ": " << error;
    return {};
  }
  auto function = dyn_cast<func::FuncOp>(target.getOperation());
  if (!function) {
    target.emitError() << pass << " works on func.func, not '"
                       << target->getName() << "'";
    return {};
  }
  if (failed(rejectTosa(function, pass)) || failed(inlineCalls(function, pass)))
    return {};
  return function;
}

bool writeTextFile(const std::string &path, const std::string &text,
                   std::string &error) {
  return writeFileAtomically(path, text + "\n", error);
}

} // namespace soap
