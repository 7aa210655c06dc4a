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

def SoapApplyStrategy : Pass<"soap-apply-strategy", "mlir::ModuleOp"> {
  let summary = "Attach a named baseline strategy or a strategy file as #soap.config on every op";
  let description = [{
    Builds the model's op graph (the only function with a body, or `func=`)
    and attaches `#soap.config` to every op according to `strategy=`:

    - `data-parallel`: every op split along its batch over all devices;
    - `model-parallel`: each op whole on one device, consecutive ops grouped
      into stages of equal FLOPs;
    - `owt`: data-parallel convolutions, fully connected layers split along
      their output features;
    - `megatron`: column- then row-parallel matmul pairs in groups of up to
      8 devices, data parallel across groups;
    - a path to a strategy JSON file (as written by --soap-export-strategy).

    Ops left replicated get no attribute. The module's `soap.num_devices`
    is set to `devices=` (or read from it when `devices=0`).

    ```
    soap-opt model.mlir --soap-apply-strategy="strategy=owt devices=16"
    ```
  }];
  let options = [
    Option<"strategyName", "strategy", "std::string", /*default=*/"\"data-parallel\"",
           "data-parallel, model-parallel, owt, megatron, or a strategy .json file">,
    Option<"numDevices", "devices", "int", /*default=*/"0",
           "Number of devices (0: the module's soap.num_devices)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to partition (default: the only one with a body)">,
  ];
  let dependentDialects = ["::soap::SoapDialect"];
}

def SoapExportStrategy : Pass<"soap-export-strategy", "mlir::ModuleOp"> {
  let summary = "Write the #soap.config of every op to a strategy JSON file";
  let description = [{
    Writes `{"devices": N, "ops": [{"node": i, "op": ..., "location": ...,
    "degrees": [...], "devices": [...]}, ...]}` in op order; ops without a
    config are written as `"replicated": true`. The file can be given back to
    `--soap-apply-strategy="strategy=FILE.json"`. The IR is unchanged.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Output JSON file (required)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to export (default: the only one with a body)">,
  ];
}

def SoapSimulate : Pass<"soap-simulate", "mlir::ModuleOp"> {
  let summary = "Predict step time, memory and traffic of the annotated program on a machine";
  let description = [{
    Simulates one training step (or, with `training=false`, one forward
    pass) of the program with the `#soap.config` of its ops (ops without one
    run replicated) on `machine=` (a JSON file, or the name of one in SOAP's
    machines/ folder such as `p100-4x4`), using the first `devices=` devices.
    Prints a short summary on stderr and writes, when asked, a JSON report
    (`step_time_ms`, `total_comm_bytes`, `devices[i].peak_memory_bytes`,
    `devices[i].busy_ms`, bytes per link) and a Chrome trace of the
    predicted timeline. The IR is unchanged.

    ```
    soap-opt model.mlir --soap-apply-strategy="strategy=owt devices=16" \
      --soap-simulate="machine=p100-4x4 report=r.json trace=t.json" -o /dev/null
    ```
  }];
  let options = [
    Option<"machineFile", "machine", "std::string", /*default=*/"\"\"",
           "Machine description: a JSON file or a name from machines/ (required)">,
    Option<"numDevices", "devices", "int", /*default=*/"0",
           "Devices to use (0: the module's soap.num_devices, else all)">,
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the JSON report here">,
    Option<"traceFile", "trace", "std::string", /*default=*/"\"\"",
           "Write a Chrome trace of the predicted timeline here">,
    Option<"profileFile", "profile", "std::string", /*default=*/"\"\"",
           "Profile database from soap-profile (measured op times)">,
    Option<"training", "training", "bool", /*default=*/"true",
           "Simulate a training step (false: forward only)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "Optimizer whose state and update cost to model: sgd, momentum, adam">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to simulate (default: the only one with a body)">,
  ];
}

def SoapSearch : Pass<"soap-search", "mlir::ModuleOp"> {
  let summary = "Search for a fast strategy (MCMC over the SOAP space with the simulator) and attach it";
  let description = [{
    Metropolis-Hastings over strategies, after FlexFlow: each proposal gives
    one random op a random valid config (any mix of sample, attribute,
    parameter and reduction splits, on an aligned block of devices or on any
    devices, or replicated); its cost is the simulated step time (delta
    simulation) times a penalty when a device's memory exceeds the limit; a
    proposal worse by a fraction f of the current cost is accepted with
    probability exp(-f / temperature). Chains start from data parallelism,
    every expert strategy that fits the model (model-parallel, OWT,
    Megatron) and random strategies; they run in rounds, on several threads,
    and restart from the best strategy after each round. The search stops
    at the budget, at the time limit, or when half the budget brought no
    improvement. With a budget, the result depends only on the input and the
    seed (not on the threads).

    Attaches the best strategy as `#soap.config` and prints a summary on
    stderr: the best simulated step time and its speedup over data
    parallelism and over the best expert strategy, iterations per second,
    search time. A progress line is shown while it runs when stderr is a
    terminal. Fails with an error naming the sizes when no strategy found
    fits the memory limit.

    ```
    soap-opt model.mlir --soap-search="machine=p100-4x4 devices=16 budget=20000" \
      --soap-export-strategy="file=best.json" -o model.partitioned.mlir
    ```
  }];
  let options = [
    Option<"machineFile", "machine", "std::string", /*default=*/"\"\"",
           "Machine description: a JSON file or a name from machines/ (required)">,
    Option<"numDevices", "devices", "int", /*default=*/"0",
           "Devices to use (0: the module's soap.num_devices, else all of the machine)">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "Proposals in all (0: 20000, or unlimited with time=)">,
    Option<"timeLimit", "time", "double", /*default=*/"0",
           "Seconds of search (0: no limit)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"1", "Random seed">,
    Option<"chains", "chains", "int", /*default=*/"4", "Markov chains">,
    Option<"threads", "threads", "int", /*default=*/"1",
           "Threads running the chains (the result does not depend on it)">,
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "Bytes per device (0: the device's memory)">,
    Option<"temperature", "temperature", "double", /*default=*/"0.02",
           "Relative cost increase accepted with probability 1/e">,
    Option<"profileFile", "profile", "std::string", /*default=*/"\"\"",
           "Profile database from soap-profile (measured op times)">,
    Option<"training", "training", "bool", /*default=*/"true",
           "Optimize a training step (false: the forward pass)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "Optimizer to model: sgd, momentum, adam">,
    Option<"summaryFile", "summary", "std::string", /*default=*/"\"\"",
           "Write a JSON summary (times, speedups, convergence) here">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to partition (default: the only one with a body)">,
  ];
  let dependentDialects = ["::soap::SoapDialect"];
}

def SoapExportGraph : Pass<"soap-export-graph", "mlir::ModuleOp"> {
  let summary = "Write the model's op graph (what the simulator and the search see) as JSON";
  let description = [{
    Writes the OpGraph of the function (the only one with a body, or
    `func=`): every op with its loops (sizes, names, kinds), its tensor
    accesses as linear index expressions, FLOPs per iteration and whether it
    has backward work; every tensor with its shape, element type and whether
    it is a parameter. The simulator, the search and their benchmarks can
    run on such a file alone (`soap-sim-bench`). The IR is unchanged.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Output JSON file (required)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to export (default: the only one with a body)">,
  ];
}

#endif // SOAP_PASSES_TD
