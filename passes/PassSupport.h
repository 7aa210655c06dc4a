//===- PassSupport.h - what SOAP's passes share -----------------*- C++ -*-===//

#ifndef SOAP_PASSES_PASSSUPPORT_H
#define SOAP_PASSES_PASSSUPPORT_H

#include "soap/cost/CostModel.h"
#include "soap/graph/OpGraphBuilder.h"
#include "soap/machine/Machine.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace soap {

/// The op graph of the module's target function, or an error emitted on
/// the module.
std::optional<BuiltOpGraph> buildModuleGraph(mlir::ModuleOp module,
                                             llvm::StringRef funcName);

/// A pass that rewrites the model (its parameters or its shapes) must run
/// before --soap-training-step, which copies the model into @train_step as
/// it is then: after it, the pass would change the model function and leave
/// @train_step as it was. (--soap-search and --soap-apply-strategy may run
/// after it: they annotate the model to simulate its training step.)
/// Fails, with an error that names `pass` and where it belongs, when the
/// module already has a @train_step beside `target`, the function the pass
/// works on.
mlir::LogicalResult refuseAfterTrainingStep(mlir::ModuleOp module,
                                            mlir::Operation *target,
                                            llvm::StringRef pass);

/// The func.func a rewriting pass works on (findTargetFunction's choice),
/// with the calls it makes to functions of the module inlined into it
/// (inlineCalls), or null after an error prefixed with `pass` was emitted.
mlir::func::FuncOp findTargetFuncOp(mlir::ModuleOp module,
                                    llvm::StringRef funcName,
                                    llvm::StringRef pass);

/// The upstream pipeline that lowers TOSA to the linalg, tensor and arith
/// ops SOAP works on, as a --pass-pipeline argument.
inline constexpr llvm::StringLiteral kTosaToLinalgPipeline =
    "builtin.module(tosa-to-linalg-pipeline,func.func(tosa-to-tensor,"
    "tosa-to-arith,convert-elementwise-to-linalg),canonicalize)";

/// The first TOSA op in `root`, if any.
mlir::Operation *findTosaOp(mlir::Operation *root);

/// Fails, after an error on the first TOSA op in `root` that says how to
/// lower TOSA first, when `root` holds TOSA ops.
mlir::LogicalResult rejectTosa(mlir::Operation *root, llvm::StringRef pass);

/// `name` as a file, else as a machine in SOAP's machines/ folder (with or
/// without ".json"), restricted to `devices` devices when positive.
std::optional<Machine> loadMachineByName(const std::string &name, int devices,
                                         std::string &error);

/// True when an op nested in `root` carries #soap.config.
bool carriesConfigs(mlir::Operation *root);

/// `devices` when positive, else the module's soap.num_devices, else
/// `fallback`. A negative count, or one above kMaxDevices, is an error on
/// the module that names it.
mlir::FailureOr<int> resolveDeviceCount(mlir::ModuleOp module, int64_t devices,
                                        int fallback);

/// What simulating passes read from their options: the machine (restricted
/// to the device count), the optional profile database and the optimizer.
struct SimulationSetup {
  std::optional<Machine> machine;
  std::optional<ProfileDatabase> profile;
  Optimizer optimizer = Optimizer::SGD;

  /// The cost model over this machine, profile and optimizer (it refers to
  /// them: keep the setup alive while it is used).
  CostModel costModel() const {
    return CostModel(*machine, profile ? &*profile : nullptr, optimizer);
  }
};

/// Fills `setup` from pass options; emits an error on the module and fails
/// when one of them is wrong.
mlir::LogicalResult
prepareSimulation(mlir::ModuleOp module, const std::string &machineName,
                  int devices, const std::string &profileFile,
                  const std::string &optimizerName, SimulationSetup &setup);

/// With a profile database in `setup`: how the ops of `configs` are priced
/// (profileCoverage, with `madeCopies` of the simulated strategy),
/// printed on stderr after `tool` ("soap-simulate: profile: N op(s)
/// measured, K priced by the roofline: linalg.matmul x2"); nothing without
/// one.
std::optional<ProfileCoverage>
reportProfileCoverage(llvm::StringRef tool, const OpGraph &graph,
                      const std::vector<ParallelConfig> &configs,
                      const SimulationSetup &setup,
                      const std::vector<char> &madeCopies);

/// Writes `text` and a newline to `path` (soap::writeFileAtomically);
/// false with `error` on failure.
bool writeTextFile(const std::string &path, const std::string &text,
                   std::string &error);

} // namespace soap

#endif // SOAP_PASSES_PASSSUPPORT_H
