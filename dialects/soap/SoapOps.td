//===- SoapOps.td - SOAP operations ------------------------*- tablegen -*-===//
//
// Operations of a partitioned (SPMD) program: collectives and point-to-point
// transfers over device groups, a rank query, and a device guard. Every rank
// runs the same program; an op over a group is executed by the ranks in the
// group and is a no-op (yielding an undefined value) on the others.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_OPS_TD
#define SOAP_OPS_TD

include "SoapDialect.td"
include "SoapAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class Soap_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Soap_Op<mnemonic, traits> {
  let hasVerifier = 1;
}

def Soap_AllReduceOp : Soap_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Combines a tensor across a device group";
  let description = [{
    Every device of `group` contributes its `input`; every one receives the
    element-wise combination (`sum`, `max`, `min` or `mean`).

    ```mlir
    %r = soap.all_reduce sum %x over [0, 1, 2, 3] : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins Soap_ReductionKind:$kind, AnyRankedTensor:$input,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$kind $input `over` $group attr-dict `:` type($input)";
}

def Soap_AllGatherOp : Soap_CollectiveOp<"all_gather"> {
  let summary = "Concatenates the shards of a device group along a dimension";
  let description = [{
    Each device of `group` holds a shard; every device receives the shards
    concatenated along `dim` in group order. The result's `dim` is the
    input's times the group size.

    ```mlir
    %r = soap.all_gather %x dim 0 over [0, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$dim,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$input `dim` $dim `over` $group attr-dict `:` type($input) `->` type($result)";
}

def Soap_ReduceScatterOp : Soap_CollectiveOp<"reduce_scatter"> {
  let summary = "Combines a tensor across a group and scatters the parts";
  let description = [{
    Combines the inputs of the devices in `group` element-wise and leaves the
    `i`-th of `n` equal parts along `dim` on the `i`-th device of the group.

    ```mlir
    %r = soap.reduce_scatter sum %x dim 0 over [0, 1] : tensor<8x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Soap_ReductionKind:$kind, AnyRankedTensor:$input,
                       I64Attr:$dim, DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$kind $input `dim` $dim `over` $group attr-dict `:` type($input) `->` type($result)";
}

def Soap_AllToAllOp : Soap_CollectiveOp<"all_to_all"> {
  let summary = "Re-splits a tensor from one dimension to another";
  let description = [{
    Each device of `group` splits its input into `n` equal parts along
    `split_dim`, sends part `j` to the `j`-th device of the group, and
    concatenates what it receives along `concat_dim` in group order.

    ```mlir
    %r = soap.all_to_all %x split 0 concat 1 over [0, 1]
           : tensor<8x4xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$split_dim,
                       I64Attr:$concat_dim, DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `split` $split_dim `concat` $concat_dim `over` $group attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Soap_BroadcastOp : Soap_CollectiveOp<"broadcast",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Copies a tensor from one device to the rest of a group";
  let description = [{
    The device `root` (which must belong to `group`) sends its input to every
    device of the group.

    ```mlir
    %r = soap.broadcast %x root 0 over [0, 1, 2] : tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$root,
                       DenseI64ArrayAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$input `root` $root `over` $group attr-dict `:` type($input)";
}

def Soap_SendOp : Soap_CollectiveOp<"send"> {
  let summary = "Sends a tensor from each source device to its paired target";
  let description = [{
    Device `from[i]` sends its `input` to device `to[i]`. Devices not in
    `from` do nothing. The matching `soap.recv` names the same pairs and the
    same `tag`.

    ```mlir
    soap.send %x from [0, 1] to [2, 3] tag 7 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$from,
                       DenseI64ArrayAttr:$to,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let assemblyFormat =
      "$input `from` $from `to` $to (`tag` $tag^)? attr-dict `:` type($input)";
}

def Soap_RecvOp : Soap_CollectiveOp<"recv"> {
  let summary = "Receives a tensor sent by the paired source device";
  let description = [{
    Device `to[i]` receives the tensor sent by device `from[i]`. On devices
    not in `to` the result is undefined.

    ```mlir
    %y = soap.recv from [0, 1] to [2, 3] tag 7 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$from, DenseI64ArrayAttr:$to,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "`from` $from `to` $to (`tag` $tag^)? attr-dict `:` type($result)";
}

def Soap_RankOp : Soap_Op<"rank", [Pure]> {
  let summary = "The device id of the running rank";
  let description = [{
    ```mlir
    %r = soap.rank : index
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Soap_OnDevicesOp : Soap_Op<"on_devices", [
    SingleBlockImplicitTerminator<"YieldOp">,
    RecursiveMemoryEffects]> {
  let summary = "Runs its body only on a set of devices";
  let description = [{
    The body runs on the devices listed in `devices`; on every other device
    it is skipped and the results are undefined. This is how an op placed on
    a subset of the devices (the operator dimension) appears in the SPMD
    program.

    ```mlir
    %r = soap.on_devices [0, 1] -> tensor<4xf32> {
      %e = tensor.empty() : tensor<4xf32>
      soap.yield %e : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$devices);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "$devices (`->` type($results)^)? $body attr-dict";
  let hasVerifier = 1;
}

def Soap_YieldOp : Soap_Op<"yield", [Pure, Terminator,
    HasParent<"OnDevicesOp">, ReturnLike]> {
  let summary = "Ends a soap.on_devices body and gives its results";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // SOAP_OPS_TD
