//===- SoapDialect.td - the SOAP dialect -------------------*- tablegen -*-===//
//
// The SOAP dialect describes how a tensor program is partitioned over a set of
// devices: partition configurations on compute ops (#soap.config), layouts of
// distributed tensors (#soap.layout), and the explicit communication and
// device-guard ops of a partitioned (SPMD) program.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_TD
#define SOAP_DIALECT_TD

include "mlir/IR/OpBase.td"

def Soap_Dialect : Dialect {
  let name = "soap";
  let cppNamespace = "::soap";
  let summary = "Partitioning of tensor programs over the SOAP dimensions";
  let description = [{
    SOAP partitions a tensor program over the Sample, Operator, Attribute and
    Parameter dimensions of its ops, plus Reduction. Every compute op has an
    iteration space (the loops of a linalg structured op); `#soap.config`
    attached to an op under the `soap.config` attribute name splits each loop
    into equal parts and places the resulting tasks on devices.

    A module declares how many devices it targets with the
    `soap.num_devices` integer attribute; device ids in configs, layouts and
    communication groups are checked against it.

    Function arguments marked `{soap.param}` are trainable parameters;
    `{soap.batch_dim = k}` on an input names its batch dimension (dimension 0
    when absent).

    After `--soap-partition`, a program is one SPMD program over local shards
    in which tensors carry `#soap.layout` and data moves through the
    collective and point-to-point ops of this dialect.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
  let extraClassDeclaration = [{
    /// Name of the discardable attribute holding an op's #soap.config.
    static constexpr ::llvm::StringLiteral getConfigAttrName() {
      return ::llvm::StringLiteral("soap.config");
    }
    /// Name of the attribute on the outermost loop of a gather's gradient
    /// (a scatter-add loop nest over the gather's iteration space, built by
    /// --soap-training-step) holding the gather's #soap.config: the
    /// partitioner splits the nest's loops as the gather's tasks, as the
    /// simulator prices the gather's backward task.
    static constexpr ::llvm::StringLiteral getScatterConfigAttrName() {
      return ::llvm::StringLiteral("soap.scatter_config");
    }
    /// Name of the attribute on the input gradient of a convolution whose
    /// #soap.config splits its output rows or columns (a unit-stride
    /// convolution of the adjoint spread into zeros, built by
    /// --soap-training-step) holding the forward convolution's
    /// #soap.config: the partitioner runs each forward task's part of the
    /// gradient (its adjoint block through its filter block into the input
    /// box it read; partial sums where boxes overlap), as the simulator
    /// prices the convolution's backward task.
    static constexpr ::llvm::StringLiteral getTransposedConfigAttrName() {
      return ::llvm::StringLiteral("soap.transposed_config");
    }
    /// Name of the unit attribute on an op that a strategy runs whole on
    /// every device (a replicated config: no #soap.config can say so): the
    /// partitioner brings its operands whole everywhere and runs it there,
    /// as the simulator prices it. --soap-training-step puts it on the ops
    /// of the op's gradient too.
    static constexpr ::llvm::StringLiteral getReplicatedAttrName() {
      return ::llvm::StringLiteral("soap.replicated");
    }
    /// Name of the module attribute declaring the number of devices.
    static constexpr ::llvm::StringLiteral getNumDevicesAttrName() {
      return ::llvm::StringLiteral("soap.num_devices");
    }
    /// Name of the module attribute saying which processors a lowered
    /// module was compiled for: "cpu" (--soap-lower-cpu, the default when
    /// absent) or "gpu" (--soap-lower-gpu).
    static constexpr ::llvm::StringLiteral getTargetAttrName() {
      return ::llvm::StringLiteral("soap.target");
    }
    /// Name of the argument attribute marking a trainable parameter.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("soap.param");
    }
    /// Name of the argument attribute naming an input's batch dimension.
    static constexpr ::llvm::StringLiteral getBatchDimAttrName() {
      return ::llvm::StringLiteral("soap.batch_dim");
    }
    /// Name of the attribute holding a value's #soap.layout.
    static constexpr ::llvm::StringLiteral getLayoutAttrName() {
      return ::llvm::StringLiteral("soap.layout");
    }
    /// Argument/result attributes of a training step (docs/train-step.md):
    /// a stable name, what the value is, how a parameter is initialised,
    /// and the value range of an integer input.
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("soap.name");
    }
    static constexpr ::llvm::StringLiteral getRoleAttrName() {
      return ::llvm::StringLiteral("soap.role");
    }
    static constexpr ::llvm::StringLiteral getInitAttrName() {
      return ::llvm::StringLiteral("soap.init");
    }
    static constexpr ::llvm::StringLiteral getRangeAttrName() {
      return ::llvm::StringLiteral("soap.range");
    }
    /// On an argument or result of a partitioned training step that holds
    /// this device's shard of training state: {global_shape = array<i64:
    /// ...>, offsets = array<i64: ...>}, the whole tensor's shape and each
    /// device's offsets into it (device-major), and optionally `holders =
    /// array<i64: ...>`, the devices that hold a part when not all do (the
    /// others carry a value nothing reads). The driver initializes, saves
    /// and loads the whole tensor.
    static constexpr ::llvm::StringLiteral getShardAttrName() {
      return ::llvm::StringLiteral("soap.shard");
    }
  }];
}

class Soap_Op<string mnemonic, list<Trait> traits = []>
    : Op<Soap_Dialect, mnemonic, traits>;

#endif // SOAP_DIALECT_TD
