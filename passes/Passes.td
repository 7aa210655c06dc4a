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
    - `layer-pipeline`: the model's layers (the ops around each weight; an
      unrolled RNN's steps are one layer) cut into stages of about equal
      FLOPs, each stage data parallel on its own aligned block of devices
      (GNMT's layer placement with data parallelism inside the stages);
    - `owt`: data-parallel convolutions, fully connected layers split along
      their output features;
    - `megatron`: column- then row-parallel matmul pairs in groups of up to
      8 devices, data parallel across groups;
    - `random:SEED`: a random valid config per op, drawn as the search draws
      its proposals (any mix of splits, device blocks, devices shared by
      several tasks, replicated ops); for testing the partitioner;
    - a path to a strategy JSON file (as written by --soap-export-strategy).

    Ops left replicated get no attribute. The module's `soap.num_devices`
    is set to `devices=` (or read from it when `devices=0`).

    ```
    soap-opt model.mlir --soap-apply-strategy="strategy=owt devices=16"
    ```
  }];
  let options = [
    Option<"strategyName", "strategy", "std::string", /*default=*/"\"data-parallel\"",
           "data-parallel, model-parallel, layer-pipeline, owt, megatron, random:SEED, or a strategy .json file">,
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
    `devices[i].busy_ms`, bytes per link), a Chrome trace of the predicted
    timeline, and the step's communication (`communication=`: every
    collective and transfer with its devices and bytes, the steps
    lib/layout plans for each reshard, as `--soap-partition` emits them).
    The IR is unchanged.

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
    Option<"communicationFile", "communication", "std::string",
           /*default=*/"\"\"",
           "Write the step's communication here (JSON: kind, devices and "
           "bytes of every collective and transfer), to compare with what "
           "--soap-partition emits">,
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
    devices, or replicated). A share of the proposals (`layer-moves`) moves
    a whole layer instead: the ops that read one parameter (all steps of an
    unrolled RNN layer, both uses of a tied embedding) and the ops nearest
    to them get one config, carried over to each op's loops (same devices,
    sample loops split first), so that a layer can move onto a device
    subset with its elementwise ops in one step. Its cost is the simulated step time (delta
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
           "Seconds of search from the pass's start, op graph included (0: no limit)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"1", "Random seed">,
    Option<"chains", "chains", "int", /*default=*/"4", "Markov chains">,
    Option<"threads", "threads", "int", /*default=*/"1",
           "Threads running the chains (the result does not depend on it)">,
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "Bytes per device (0: the device's memory)">,
    Option<"temperature", "temperature", "double", /*default=*/"0.01",
           "Relative cost increase accepted with probability 1/e">,
    Option<"layerMoves", "layer-moves", "double", /*default=*/"0.7",
           "Share of the proposals that move a whole layer (0 to 1)">,
    Option<"localMoves", "local-moves", "double", /*default=*/"0.5",
           "Share of the proposals that step from the op's current config "
           "(another device block, a degree doubled or halved) instead of "
           "drawing a random one (0 to 1)">,
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

def SoapTrainingStep : Pass<"soap-training-step", "mlir::ModuleOp"> {
  let summary = "Add @train_step: the forward pass, reverse-mode gradients and an optimizer update";
  let description = [{
    Differentiates the loss function (the only function with arguments
    marked `{soap.param}`, or `func=`) and adds `@train_step` as
    docs/train-step.md specifies: arguments parameters, optimizer state,
    inputs, labels (each with `soap.role` and `soap.name`); results the
    loss, the updated parameters and the updated optimizer state. The loss
    function stays in the module.

    With `loss=none` the function must return a scalar loss;
    `loss=softmax-xent` appends the mean softmax cross-entropy of the
    logits it returns ([batch, classes]) against an i64 labels argument
    ([batch], `soap.range` = classes), `loss=mse` the mean squared error
    against a float labels argument shaped like the output. Both sum in
    two levels (partial sums over the trailing dimensions, then their sum),
    so the f32 loss of a large output stays close to its f64 value.

    A function that returns several values (MobileBERT's start and end
    logits) needs `result=K`: the loss applies to result K and the others
    are dropped. `result=all` applies the loss to every result and sums the
    losses; each result then gets its own labels argument, named
    `labels.K`. With `loss=none`, `result=` picks the scalar loss (or sums
    the scalars).

    Calls to functions of the module (helpers an exporter emits, as JAX
    does) are inlined into the loss function first.

    Gradients are computed by reverse-mode automatic differentiation over
    the ops (docs/training-step.md): linalg.generic through its body's
    derivative (sums, maximum and minimum reductions included), matmuls and
    convolutions as matmuls and convolutions, pooling, padding, slices,
    reshapes and concatenation. An op without a gradient rule on the path
    from a parameter to the loss is an error at that op.

    Optimizers: `sgd` (p -= lr (g + wd p)), `momentum` (v = m v + g + wd p;
    p -= lr v), `adam` (bias-corrected moments, L2 weight decay added to the
    gradient).

    ```
    soap-zoo mlp | soap-opt --soap-training-step="optimizer=adam lr=0.001"
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "Update rule: sgd, momentum, adam">,
    Option<"learningRate", "lr", "double", /*default=*/"0.01",
           "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Momentum coefficient (optimizer=momentum)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "Decay of Adam's first moment">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "Decay of Adam's second moment">,
    Option<"epsilon", "eps", "double", /*default=*/"1e-8",
           "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0",
           "L2 weight decay added to every gradient">,
    Option<"loss", "loss", "std::string", /*default=*/"\"none\"",
           "Loss appended to the function's output: none, softmax-xent, mse">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Loss function (default: the one with {soap.param} arguments)">,
    Option<"result", "result", "std::string", /*default=*/"\"\"",
           "The result the loss applies to when the function returns several: a number, or all (the losses of all results summed)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SoapAppendLoss : Pass<"soap-append-loss", "mlir::ModuleOp"> {
  let summary = "Make a model that returns logits or predictions return its loss";
  let description = [{
    Rewrites the loss function (the only function with arguments marked
    `{soap.param}`, or `func=`) to return the scalar loss that
    `--soap-training-step="loss=..."` would append: `loss=softmax-xent`
    (the mean softmax cross-entropy of the logits [batch, classes] against
    an i64 labels argument [batch] with `soap.range` = classes) or
    `loss=mse` (the mean squared error against float labels shaped like the
    output). The labels arguments are appended (`soap.role = "label"`,
    named `labels`, or `labels.K` with `result=all`); the function keeps
    its name and attributes. Its callers (an exporter's driver that runs
    the model and prints its output) call a private copy that still returns
    the output, `@<name>.output`, without the `soap.*` marks.

    Run it before `--soap-search` or `--soap-apply-strategy` on a real
    export: the search then prices the loss's ops and the communication
    they need (the partial loss summed over the devices that split the
    batch), and the strategy gives them configs; `--soap-training-step`
    then runs with its default `loss=none`.

    ```
    soap-opt resnet18.mlir --soap-lift-params --soap-set-batch=4 \
      --soap-append-loss=loss=softmax-xent --soap-search="machine=p100-4x4" \
      --soap-training-step --soap-partition
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "Loss to append: softmax-xent or mse">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to rewrite (default: the one with {soap.param} arguments)">,
    Option<"result", "result", "std::string", /*default=*/"\"\"",
           "The result the loss applies to when the function returns several: a number, or all (the losses of all results summed)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SoapLowerCpu : Pass<"soap-lower-cpu", "mlir::ModuleOp"> {
  let summary = "Lower a training step to the LLVM dialect for x86-64 CPUs, with the runtime's C ABI";
  let description = [{
    Compiles `@train_step` (docs/train-step.md; `entry=` names another
    function) to the LLVM dialect: one-shot bufferization across function
    boundaries with identity layouts, results turned into out-params,
    ownership-based deallocation, and the ops lowered to loops, except:

    - `kernels=blas` (the default): contractions (`linalg.matmul` in any
      operand layout, `batch_matmul`, `matvec`, `vecmat`, contraction
      `linalg.generic`s) and `linalg.conv_2d_nchw_fchw` on f32/f64 become
      calls of libsoaprt's OpenBLAS kernels (convolutions by im2col + GEMM,
      any stride and dilation); other convolutions are tiled and
      vectorized;
    - `kernels=vector`: contractions and convolutions are tiled for
      registers and vectorized (as soap-profile compiles them);
    - `kernels=loops`: everything as scalar loops.

    The entry becomes `soap_train_step` (bare pointers: one per argument,
    then one per result) and the module gains the symbols the runtime
    driver reads: `soap_train_step_packed(void **buffers)`,
    `soap_model_info` (a JSON description of every argument and result:
    role, name, shape, dtype, init) and `soap_init_data` (the values of
    parameters whose `soap.init` is an elements attribute). With
    `trace-ops` (the default) every op is bracketed by
    `soaprt_op_begin/end(id)`, which cost a branch unless the executable
    runs with `--trace`. With `fuse-elementwise` (the default) a chain of
    elementwise ops (bias, batch-norm apply, activations, residual adds,
    the optimizer update) runs as one loop nest: an elementwise producer
    with one use fuses into the linalg op that uses it, unless that op is
    a contraction or a convolution. With `collapse-loops` (the default)
    the loop nests left (elementwise work, reductions) merge the adjacent
    loops every operand reads contiguously, so that LLVM vectorizes one
    long loop instead of many short ones. With `tile-transposes` (the
    default) a loop nest that walks an operand across its rows in its
    innermost loop (a sum over the batch shards that writes a weight
    gradient transposed, where owt's all_to_all kept the transpose from
    folding into the product; a transposed gradient that the optimizer
    update reads) runs in 16x16 tiles, so that the cache
    lines of that operand a tile touches stay in L1 while its rows reuse
    them. With `register-reductions` (the
    default) a loop nest whose innermost loops are reductions (batch-norm
    statistics, softmax and layer-norm sums, bias gradients) carries its
    outputs' values through those loops in registers instead of loading
    and storing them every iteration, and with `reassociate-reductions`
    (the default) sums them in any order, so that LLVM vectorizes them.
    With `sparse-updates` (the default) an SGD update of a table read by
    gathers (an embedding) applies each looked-up row's contribution to
    the parameter directly instead of building the table's dense gradient.
    With `merge-accumulations` (the default) a chain of products each
    accumulating into the previous one's result, as the autodiff writes a
    weight's gradient summed over its uses (an LSTM's over its time
    steps), runs as one product over the concatenated reduction
    dimension: the accumulator is read and written once, not once per use.
    A chain through guards on the same devices (a layer pipeline's LSTM, a
    guard per time step) first moves into one guard before the op that
    reads its sum.
    With `fold-broadcasts` (the default, kernels=blas) a product that reads
    a copy of a tensor broadcast along some of its dimensions reads the
    tensor itself, and a product whose result only a sum over some of its
    dimensions reads adds into that sum: torch-mlir's linear layer on a 3-D
    input (its weight transposed, broadcast along the batch, into a
    batch_matmul) and that broadcast's gradient (the per-batch weight
    gradients summed) each run as one GEMM, and the copy is never made.
    With `plane-updates` (the default) a chain of elementwise updates of
    slices of one tensor of at least 1 MiB, as the autodiff writes a max
    pooling's gradient (one update of a strided slice per window offset),
    runs as one loop nest over the leading dimensions every update spans
    whole (batch and channels), each iteration applying all the updates to
    one plane, which stays in cache between them.
    With `blocked-weights` (the default) convolution weights that only
    convolutions and elementwise work (the optimizer's update) touch stay
    in oneDNN's blocked layout (OIhw16i16o with AVX-512, OIhw8i8o with
    AVX2) across steps, with their gradients and optimizer state: the
    convolutions read and write them in place instead of reordering them
    every step, and the driver converts at its boundaries (initial values,
    checkpoints). See docs/lowering.md.

    ```
    soap-opt model.mlir --soap-lower-cpu | soap-translate --soap-to-executable -o model.exe
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The function to compile">,
    Option<"kernels", "kernels", "std::string", /*default=*/"\"blas\"",
           "Matmuls and convolutions: blas, vector or loops">,
    Option<"traceOps", "trace-ops", "bool", /*default=*/"true",
           "Call soaprt_op_begin/end around every op (for --trace)">,
    Option<"overlapComm", "overlap-comm", "bool", /*default=*/"false",
           "Start each all-reduce as soon as its operand exists (MPI_Iallreduce) and wait right before the first use of its result, so that gradient all-reduces overlap the backward pass">,
    Option<"fuseElementwise", "fuse-elementwise", "bool", /*default=*/"true",
           "Fuse chains of elementwise ops into one loop nest (an elementwise producer with one use into its linalg consumer, contractions and convolutions excepted)">,
    Option<"collapseLoops", "collapse-loops", "bool", /*default=*/"true",
           "Merge the adjacent loops of loop-nest kernels that every operand reads contiguously in memory (after bufferization)">,
    Option<"tileTransposes", "tile-transposes", "bool", /*default=*/"true",
           "Run loop nests that walk an operand of at least 32 KiB across its rows in their innermost loop (an optimizer update reading a transposed gradient, a sum writing one) in 16x16 tiles over that loop and the one the operand reads contiguously (after bufferization; results bitwise equal)">,
    Option<"registerReductions", "register-reductions", "bool", /*default=*/"true",
           "Carry the outputs of loop nests whose innermost loops are reductions through those loops as values (registers) instead of loading and storing them every iteration (after bufferization)">,
    Option<"reassociateReductions", "reassociate-reductions", "bool", /*default=*/"true",
           "With register-reductions: let the sums into the carried values be reassociated, so that LLVM vectorizes them (results then differ from in-order sums by rounding)">,
    Option<"sparseUpdates", "sparse-updates", "bool", /*default=*/"true",
           "Apply an SGD update of a table read by gathers as a scatter into the parameter, without the dense zero-filled gradient (results differ by rounding where several points reach one element)">,
    Option<"mergeAccumulations", "merge-accumulations", "bool", /*default=*/"true",
           "Run a chain of products that accumulate into one another (a weight's gradient summed over its uses, as an LSTM's over its time steps) as one product over the concatenated reduction dimension (results differ by rounding)">,
    Option<"foldBroadcasts", "fold-broadcasts", "bool", /*default=*/"true",
           "With kernels=blas: a product that reads a copy of a tensor broadcast along some of its dimensions (torch-mlir's linear layer on a 3-D input: the weight broadcast along the batch into a batch_matmul) reads that tensor itself, and a product whose result only a sum over some of its dimensions reads (that broadcast's gradient) adds into the sum; the runtime runs each as one GEMM (results differ by rounding)">,
    Option<"mergeReductions", "merge-reductions", "bool", /*default=*/"true",
           "Run independent reductions over the same loops that read one tensor through the same map (a batch norm's backward sums) as one loop nest, so that they read their inputs once (results bitwise equal)">,
    Option<"planeUpdates", "plane-updates", "bool", /*default=*/"true",
           "Run a chain of elementwise updates of slices of one tensor of at least 1 MiB (a max pooling's gradient: one update per window offset) one plane of its leading dimensions (batch, channels) at a time, so that the plane stays in cache between updates">,
    Option<"blockedWeights", "blocked-weights", "bool", /*default=*/"true",
           "Keep convolution weights (with their gradients and optimizer state) in oneDNN's blocked layout across steps where only convolutions and elementwise work touch them">,
  ];
}

def SoapLowerGpu : Pass<"soap-lower-gpu", "mlir::ModuleOp"> {
  let summary = "Lower a training step to the LLVM dialect for NVIDIA GPUs (cuBLAS, cuDNN and generated CUDA kernels), with the runtime's C ABI";
  let description = [{
    Compiles `@train_step` (docs/train-step.md; `entry=` names another
    function) for a host that drives one NVIDIA GPU per rank. Bufferization,
    deallocation and communication are those of `--soap-lower-cpu`; then:

    - f32 contractions whose matrices cuBLAS can read (a unit stride in one
      of their two dimensions), `linalg.conv_2d_nchw_fchw` and undilated
      `linalg.pooling_nchw_max/sum` become calls of libsoaprt's cuBLAS and
      cuDNN kernels; `math=` picks their arithmetic: `f32` (exact),
      `tf32` (tensor cores, 10-bit mantissa inputs) or `bf16`;
    - every other op (elementwise chains, reductions, softmax, layer norm,
      embeddings, copies) becomes a CUDA kernel generated through MLIR's
      gpu and NVVM dialects: one thread per point of the op's parallel
      loops, its reduction loops inside the thread; kernels are compiled
      for `chip=` and embedded as PTX (`format=isa`, compiled by the driver
      when the executable starts) or machine code (`format=fatbin`, which
      needs `ptxas` from the CUDA toolkit at compile time);
    - every buffer lives in device memory (libsoaprt allocates it on the
      GPU's stream); constants that kernels read are copied there at the
      start of each step;
    - with `overlap-comm` (the default), each all-reduce starts as soon as
      its operand is computed and runs on the runtime's communication
      stream; the compute stream waits for it right before the first op
      that touches its buffers, so gradient all-reduces overlap the rest of
      the backward pass.

    The module gets `soap.target = "gpu"` and `soap_model_info` gets
    `"target": "gpu"`: `soap-translate --soap-to-executable` then links the
    GPU runtime, CUDA, cuBLAS, cuDNN and NCCL. See docs/lowering.md.

    ```
    soap-opt model.mlir --soap-training-step --soap-lower-gpu="math=tf32" |
      soap-translate --soap-to-executable -o model.exe
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The function to compile">,
    Option<"math", "math", "std::string", /*default=*/"\"f32\"",
           "Arithmetic of cuBLAS/cuDNN calls: f32, tf32 or bf16">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "GPU architecture the kernels are compiled for">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"",
           "PTX features of the kernels">,
    Option<"format", "format", "std::string", /*default=*/"\"isa\"",
           "Embedded kernels: isa (PTX) or fatbin (needs ptxas)">,
    Option<"traceOps", "trace-ops", "bool", /*default=*/"true",
           "Call soaprt_op_begin/end around every op (for --trace)">,
    Option<"overlapComm", "overlap-comm", "bool", /*default=*/"true",
           "Start each all-reduce as soon as its operand exists, on the communication stream, and make the compute stream wait right before the first use of its result">,
  ];
}

def SoapMarkTrainStep : Pass<"soap-mark-train-step", "mlir::ModuleOp"> {
  let summary = "Mark a plain function that is already a training step as @train_step";
  let description = [{
    For exports that compute a training step without SOAP's attributes
    (parameters and data in; updated parameters and the loss out), adds
    `soap.role`, `soap.name` and `soap.init` (docs/train-step.md) and
    renames the function `@train_step`. `params=` lists the parameters'
    argument numbers; the results other than `loss=` are their updated
    values in that order. `labels=` lists label arguments; the other
    arguments are inputs. Names are the arguments' `soap.name` or `argN`.

    ```
    soap-opt linreg_train_step.mlir \
      --soap-mark-train-step="func=forward params=0,1 loss=2" --soap-lower-cpu
    ```
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "The function to mark">,
    ListOption<"params", "params", "unsigned",
               "Argument numbers of the parameters">,
    ListOption<"labels", "labels", "unsigned",
               "Argument numbers of the labels">,
    Option<"loss", "loss", "unsigned", /*default=*/"0",
           "Result number of the loss">,
    Option<"init", "init", "std::string", /*default=*/"\"fan-in\"",
           "soap.init of the parameters: fan-in, zeros, ones">,
  ];
}

def SoapLiftParams : Pass<"soap-lift-params", "mlir::ModuleOp"> {
  let summary = "Turn weight constants into {soap.param} function arguments";
  let description = [{
    Real exporters (torch-mlir, IREE) put the weights in `arith.constant`
    tensors, often `dense_resource<__elided__>` without data; JAX passes them
    as arguments. This pass makes the target function's weights arguments
    marked `{soap.param}`, so that `--soap-training-step` can train them:

    - Every float constant tensor of at least `min-elements` elements becomes
      a new leading argument, `soap.name = "param.<i>"` in order of
      appearance, `soap.init` its value. An elided weight (and every weight
      under `init=seed`, and every argument named by `params=`) starts from
      the runtime's seed as its uses say: the weight of a contraction
      (matmul, convolution, a generic that reduces over it) uniform in
      +-1/sqrt(fan-in) with the fan-in the product of its contracted
      dimensions (`"fan-in:N"`), a table a body gathers from uniform in
      [-1, 1) (`"fan-in:1"`), an elementwise factor (a scale, a gamma)
      `"ones"`, an elementwise addend (a bias, a beta) `"zeros"`, looking
      through transposes, broadcasts, reshapes and copying generics;
      where no use says, `"fan-in"` (all dimensions but the first).
    - A splat constant gets one parameter per op that uses it: CSE merges the
      equal `dense<1.0>` gammas of unrelated layers into one constant. Any
      other constant (real or elided data) used twice is one tied parameter.
    - Structural splats stay constants: one used as a destination (`outs`),
      or read through the identity map of an elementwise `linalg.generic`
      beside a computed input of the same shape (JAX's broadcast zero of
      `max(x, 0)`, SELU's scale).
    - Batch norm exported in evaluation form, `(x - mean) * rsqrt(var + eps)
      * gamma + beta` in a generic's body (recognized by dataflow), trains
      with the batch's statistics (`batch-norm=train`: mean and biased
      variance computed by reductions before it, differentiated and
      partitioned like any op) or keeps its statistics as constants
      (`batch-norm=frozen`: mean 0 and variance 1 when elided). Statistics
      are never parameters; gamma and beta are.
    - `params=0,1,4-7` marks existing arguments as parameters (seeded as
      their uses say, `soap.name = "arg<i>"` unless they have one).
    - An integer constant whose values were elided is an error naming it,
      unless `elided-integers=iota` (0, 1, 2, ... along the last dimension:
      position ids) or `elided-integers=zeros` fills it.

    Calls to the function pass the constants instead, so the module still
    computes what it computed. Smaller constants (scalars, epsilons) stay.

    ```
    $ soap-opt lenet.mlir --soap-lift-params
    func.func @forward(%arg0: tensor<6x3x5x5xf32> {soap.init = dense_resource<...>,
                       soap.name = "param.0", soap.param}, ...
    ```
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to rewrite (default: the only function with a body)">,
    Option<"minElements", "min-elements", "int64_t", /*default=*/"2",
           "Lift float constant tensors with at least this many elements">,
    Option<"batchNorm", "batch-norm", "std::string", /*default=*/"\"train\"",
           "Batch norm in evaluation form: train (batch statistics) or "
           "frozen (the exported statistics, mean 0 and variance 1 when "
           "elided)">,
    Option<"params", "params", "std::string", /*default=*/"\"\"",
           "Arguments that are parameters, by index: 0,1,4-7">,
    Option<"elidedIntegers", "elided-integers", "std::string",
           /*default=*/"\"error\"",
           "Elided integer constants: error, iota (0, 1, 2, ... along the "
           "last dimension) or zeros">,
    Option<"init", "init", "std::string", /*default=*/"\"export\"",
           "Initial values of lifted weights: export (the exported values; "
           "seeded as their uses say where elided) or seed (every weight "
           "seeded as its uses say)">,
  ];
  let dependentDialects = ["::soap::SoapDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SoapSetBatch : Pass<"soap-set-batch", "mlir::ModuleOp"> {
  let summary = "Change the batch size of a model's inputs and of every shape derived from them";
  let description = [{
    Exports are usually made at batch 1. `--soap-set-batch=N` (or
    `--soap-set-batch="batch=N func=NAME"`) rewrites the batch dimension of
    every input argument (arguments not marked `{soap.param}`; dimension 0
    unless `{soap.batch_dim = k}` says otherwise) to N, and every dimension
    derived from it: through linalg ops (operand dimensions indexed by the
    same loop, results tied to their inits), `tensor.empty`, reshapes (the
    batch goes to the first dimension of its group; a collapsed batch of size
    B*k becomes N*k), and slices, pads and concatenations that keep the
    dimension whole. The function's result types follow.

    What no input reaches (constants, parameters and what is computed
    from them alone, such as position ids sliced from a `tensor<1x512xi64>`)
    and has size 1 where a batch loop reads it stays size 1 and is read at
    index 0 by every sample. Splat constants shaped by the batch are
    rebuilt at the new shape. A `{soap.param}` argument never changes its
    shape: a model that ties one to the batch gets an error naming it.
    Float constants that count the elements a reduction over the batch
    sums (a mean written as `sum / 120.0`, or `sum * (1/64)`) are reported
    with a warning: they keep their value, unless `rescale-means=1`, which
    rewrites them to the count at the new batch (found by value, so a
    coincidence is possible: each rewrite is reported with a remark).

    Calls to the function are inlined into it first, and callers (a
    printing `@main`) repeat their one sample over the new batch and read
    the first sample of each result; callers at a larger batch call a copy
    of the function at its old batch (`@NAME_batchB`). TOSA input is refused with the
    pipeline that lowers it.

    An op that uses a batch dimension in a way that cannot be resized (a
    partial slice of it, a constant shaped by it that is not a splat, an op
    the pass does not know) gets an error naming it.
  }];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "The new batch size">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to rewrite (default: the only function with a body, else the one no other function calls)">,
    Option<"rescaleMeans", "rescale-means", "bool", /*default=*/"false",
           "Rewrite the constants that count the elements of a mean over the batch to the new count">,
  ];
  let dependentDialects = ["::soap::SoapDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SoapPartition : Pass<"soap-partition", "mlir::ModuleOp"> {
  let summary = "Turn a training step into one SPMD program on local shards, as its #soap.config say";
  let description = [{
    Rewrites `@train_step` (docs/train-step.md) into the program every rank
    runs under `mpirun -np N` (docs/partition.md).

    When ops carry `#soap.config` (from `--soap-apply-strategy` or
    `--soap-search`, before `--soap-training-step`, which copies them onto
    the forward ops of the step and onto the gradient ops built over their
    loops), they are followed:

    - each op runs as the local ops of the tasks its config puts on each
      device: any mix of sample, attribute, parameter and reduction splits,
      on any devices, several tasks on one device run one after the other,
      and devices without a task skip the op (`soap.on_devices`);
    - a linalg op without a config (backward, loss and optimizer ops)
      follows the layout of its most split operand, so the backward pass
      runs where the forward pass ran; reshapes, pads, slices and
      concatenations pass split dimensions through; a transpose is done by
      each consumer on the part it reads; anything else runs whole on
      every device;
    - communication is what lib/layout's reshard planner chooses between
      the boxes a producer left on each device and those a consumer reads
      (halos included), the same steps `--soap-simulate` prices: nothing, a
      local slice, `soap.all_reduce` or `soap.reduce_scatter` of partial
      sums, `soap.all_gather` (over each group of devices that hold the
      parts of one range), `soap.all_to_all`, `soap.broadcast`,
      `soap.send`/`soap.recv` of only the missing parts (halos, other
      device sets), and for irregular partial sums an all_reduce of
      identity-padded parts;
    - arguments and results keep their global shapes and are whole on
      every rank.

    A config that cannot be followed (a split reduction without a sum, max
    or min, a split loop read backwards) runs whole with a warning naming
    the op and the reason; ops that gather split operands to run whole are
    counted in a warning.

    Without configs, `devices=N` partitions the batch over all N devices:
    inputs and labels are sliced at `soap.rank * batch/N`, every value
    derived from the batch shrinks to the local batch (found as
    `--soap-set-batch` finds it), and every op that reduces over the batch
    is followed by a `soap.all_reduce` of its combination (an init that
    holds values is added on rank 0 only). A reduction over the batch that
    cannot be combined, or a result split along the batch, is an error
    naming the op.

    Either way the module gets `soap.num_devices = N`, and the step computes
    what the single-device step computes, up to the order of float
    additions.

    ```
    soap-opt model.mlir --soap-apply-strategy="strategy=megatron devices=4" \
      --soap-training-step --soap-partition --soap-lower-cpu \
      | soap-translate --soap-to-executable -o step.exe
    mpirun -np 4 ./step.exe --steps 10
    ```
  }];
  let options = [
    Option<"devices", "devices", "int64_t", /*default=*/"0",
           "Number of devices (MPI ranks; 0: the module's soap.num_devices)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step to partition">,
  ];
  let dependentDialects = ["::soap::SoapDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SoapExportShard : Pass<"soap-export-shard", "mlir::ModuleOp"> {
  let summary = "Replace #soap.config by upstream shard annotations on a 1-D grid";
  let description = [{
    For other MLIR compilers and upstream's `sharding-propagation` and
    `shard-partition` passes (docs/shard.md): adds `shard.grid @soap_grid`
    of N devices, annotates every tensor argument and result as replicated
    (`shard.shard`), and annotates the operands of each op whose config
    splits one loop over devices 0..N-1 in order (`annotate_for_users`)
    with the split that loop gives them. Configs that do not fit one 1-D
    grid (several split loops, device subsets or another device order,
    windows of a split loop) are dropped with a warning that names them.
    All configs are removed.

    ```
    soap-opt step.mlir --soap-export-shard \
      --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))"
    ```
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to export (default: the only one with #soap.config)">,
    Option<"devices", "devices", "int64_t", /*default=*/"0",
           "Devices of the grid (0: the module's soap.num_devices)">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def SoapImportShard : Pass<"soap-import-shard", "mlir::ModuleOp"> {
  let summary = "Turn upstream shard annotations into #soap.config";
  let description = [{
    For each function with `shard.shard` annotations on one static grid
    (docs/shard.md): a linalg op whose operands are annotated for their
    users gets a `#soap.config` whose degree for each loop is the product
    of the grid axes that split the dimensions it indexes, with its tasks
    on the grid's devices in row-major order (axes no split uses stay at
    coordinate 0). Every annotation is then removed, and the module gets
    `soap.num_devices`. Ops whose annotations contradict each other or use
    halos or explicit offsets run replicated, with a warning.
  }];
  let dependentDialects = ["::soap::SoapDialect"];
}

def SoapLowerShard : Pass<"soap-lower-shard", "mlir::ModuleOp"> {
  let summary = "Run shard-partitioned programs on SOAP's runtime: shard collectives to SOAP's";
  let description = [{
    After upstream `shard-partition` (docs/shard.md): the process indices
    and grid shape of the module's one static grid become rank tables and
    constants, `shard.all_reduce` (sum, max, min), `shard.all_gather`,
    `shard.all_to_all` and `shard.all_slice` become `soap.all_reduce`,
    `soap.all_gather`, `soap.all_to_all` and local slices over the devices
    of each group (row-major device numbers), and
    the module gets `soap.num_devices`. `--soap-lower-cpu` then builds it
    like any SOAP program. Other shard ops get an error naming them.
  }];
  let dependentDialects = ["::soap::SoapDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // SOAP_PASSES_TD
