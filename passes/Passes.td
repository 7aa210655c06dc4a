//===- Passes.td - SOAP passes -----------------------------*- tablegen -*-===//

#ifndef SOAP_PASSES_TD
#define SOAP_PASSES_TD

include "mlir/Pass/PassBase.td"

def SoapPrintDims : Pass<"soap-print-dims", "mlir::ModuleOp"> {
  let summary = "Report how each op can be partitioned (its dimensions and their kinds)";
  let description = [{
    Emits a remark on every op of the module:

    - a partitionable op gets `dims` followed by one `name:size:kind` entry
      per iteration dimension, where kind is `sample` (the batch),
      `attribute` (another output dimension: height, width, sequence),
      `parameter` (a dimension that indexes a parameter: output channels,
      hidden units) or `reduction` (a contracted dimension); `?` stands for
      a dynamic size;
    - any other op that computes a tensor is reported by name as not
      partitionable: it will run replicated.

    ```
    $ soap-opt model.mlir --soap-print-dims -o /dev/null
    model.mlir:7:8: remark: dims m:64:sample n:256:parameter k:784:reduction
    ```

    Parameters are function arguments marked `{soap.param}`, weight
    constants, and values computed only from those. The batch is dimension 0
    of every other tensor argument unless `{soap.batch_dim = k}` says
    otherwise.
  }];
  let options = [
    Option<"showCost", "show-cost", "bool", /*default=*/"false",
           "Also print the FLOPs and bytes (read+written) of the whole op">,
  ];
  let dependentDialects = ["::soap::SoapDialect"];
}

#endif // SOAP_PASSES_TD
