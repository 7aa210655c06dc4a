//===- SoapInterfaces.td - the partitioning interface ------*- tablegen -*-===//

#ifndef SOAP_INTERFACES_TD
#define SOAP_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Soap_PartitionableOpInterface : OpInterface<"PartitionableOpInterface"> {
  let cppNamespace = "::soap";
  let description = [{
    An op that SOAP can partition. The op is seen as a loop nest (its
    iteration space): every loop has a size and is parallel or a reduction,
    and every tensor the op reads or writes is indexed by an affine map from
    the loops. Splitting a loop into equal parts yields tasks whose cost is
    given by `getShardCost`.

    The kinds of the loops (sample, attribute, parameter, reduction) depend
    on where the op's operands come from; `soap::DimensionKindAnalysis`
    computes them from this interface and the surrounding function.
  }];
  let methods = [
    InterfaceMethod<"Sizes of the loops (ShapedType::kDynamic when unknown).",
      "::llvm::SmallVector<int64_t>", "getLoopSizes">,
    InterfaceMethod<"Iterator type (parallel or reduction) of each loop.",
      "::llvm::SmallVector<::mlir::utils::IteratorType>", "getLoopIteratorTypes">,
    InterfaceMethod<"Short readable name of each loop (m, n, k, oh, ...).",
      "::llvm::SmallVector<std::string>", "getLoopNames">,
    InterfaceMethod<[{
        Every tensor the op reads or writes with the affine map from the loops
        to its indices; results come last with role `Write`.
      }],
      "::llvm::SmallVector<::soap::OperandAccess>", "getOperandAccesses">,
    InterfaceMethod<[{
        Per loop, whether it is a lookup loop: a loop over the rows of a
        table that the op reads at indices computed from data (a gather,
        soap/Dialect/Gather.h). A point of the other loops reads one row; a
        task that covers part of a lookup loop holds those rows and yields
        zero where its row is elsewhere, so tasks along it hold partial sums.
        Lookup loops add no work: a task's points are those of the other
        loops. Empty when the op has none.
      }],
      "::llvm::SmallVector<bool>", "getLookupLoops", (ins), [{}], [{
        return {};
      }]>,
    InterfaceMethod<[{
        Floating-point (or integer) operations per point of the iteration
        space.
      }],
      "double", "getFlopsPerIteration">,
    InterfaceMethod<[{
        FLOPs and bytes of one task that covers `shardSizes[l]` iterations of
        each loop `l`. The default counts the footprint of every access.
      }],
      "::soap::ShardCost", "getShardCost",
      (ins "::llvm::ArrayRef<int64_t>":$shardSizes), [{}], [{
        return ::soap::detail::defaultShardCost($_op.getOperation(),
                                                shardSizes);
      }]>,
    InterfaceMethod<[{
        Why this particular op cannot be partitioned (a dynamic reshape, a
        dynamic stride), or nothing when it can.
      }],
      "std::optional<std::string>", "getUnsupportedReason", (ins), [{}], [{
        return std::nullopt;
      }]>,
    InterfaceMethod<[{
        Rewrites the op into the partitioned program (soap-partition) with
        one of the rewrites `rewriter` offers (soap/Dialect/SpmdRewriter.h),
        as upstream's ShardingInterface::partition does for the shard
        dialect. Fails, changing nothing, when the op has no partitioned
        form here; the partitioner then runs it whole on every device, its
        operands gathered first. The default has none.
      }],
      "::mlir::LogicalResult", "partition",
      (ins "::soap::SpmdRewriter &":$rewriter), [{}], [{
        return ::mlir::failure();
      }]>,
  ];
}

#endif // SOAP_INTERFACES_TD
