//===- SoapAttrs.td - SOAP attributes ----------------------*- tablegen -*-===//

#ifndef SOAP_ATTRS_TD
#define SOAP_ATTRS_TD

include "SoapDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Soap_ReductionKind : I32EnumAttr<"ReductionKind",
    "how values from several devices are combined", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>,
      I32EnumAttrCase<"mean", 3>
    ]> {
  let cppNamespace = "::soap";
}

class Soap_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Soap_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Soap_ConfigAttr : Soap_Attr<"Config", "config"> {
  let summary = "Parallelization configuration of one op";
  let description = [{
    Gives a degree for each iteration dimension (loop) of the op it is attached
    to, and the device of each of the resulting tasks. Tasks are numbered
    row-major over the grid of degrees: with `degrees = [2, 3]` task
    `(i, j)` is number `3 * i + j` and runs on `devices[3 * i + j]`.

    ```mlir
    %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 2, 1],
                                                   devices = [0, 1, 2, 3]>}
           ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>)
           outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
    ```

    Checked: every degree is at least 1, the number of devices equals the
    product of the degrees, every device id is in the range the module
    declares with `soap.num_devices`, the op has one degree per loop, and
    every degree divides its loop's size. Several tasks may share a device.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t", "degree per loop">:$degrees,
                        ArrayRefParameter<"int64_t", "device per task">:$devices);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of tasks: the product of the degrees.
    int64_t getNumTasks() const;
  }];
}

def Soap_LayoutAttr : Soap_Attr<"Layout", "layout"> {
  let summary = "Layout of a distributed tensor";
  let description = [{
    How a tensor is held by a list of devices: `split` gives the number of
    equal parts of each dimension, `replicas` how many copies of each part
    exist, and `partial` (when present) says that the copies hold partial
    values that still need a reduction of that kind (`sum`, `max`, `min`).
    The devices are listed row-major over the split grid with the replica
    index innermost, so there are `product(split) * replicas` of them.

    ```mlir
    #soap.layout<split = [2, 1], replicas = 2, partial = sum, devices = [0, 1, 2, 3]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t", "parts per dimension">:$split,
                        "int64_t":$replicas,
                        "std::optional<::soap::ReductionKind>":$partial,
                        ArrayRefParameter<"int64_t", "devices">:$devices);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of distinct shards: the product of the splits.
    int64_t getNumShards() const;
  }];
}

#endif // SOAP_ATTRS_TD
