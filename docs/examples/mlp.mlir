// A two-layer perceptron classifier on 28x28 images (MNIST-sized), batch 64:
// logits = relu(x W1 + b1) W2 + b2, loss = mean softmax cross-entropy against
// class labels in [0, 10). Parameters are the arguments marked {soap.param};
// soap.name, soap.init and soap.range tell the runtime how to initialise
// them and draw synthetic data (docs/train-step.md).
//
//   soap-opt docs/examples/mlp.mlir --soap-print-dims -o /dev/null

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

func.func @loss(%x: tensor<64x784xf32> {soap.name = "images"},
                %labels: tensor<64xi64> {soap.name = "labels", soap.range = 10},
                %w1: tensor<784x256xf32> {soap.param, soap.name = "fc1.weight", soap.init = "fan-in:784"},
                %b1: tensor<256xf32> {soap.param, soap.name = "fc1.bias", soap.init = "zeros"},
                %w2: tensor<256x10xf32> {soap.param, soap.name = "fc2.weight", soap.init = "fan-in:256"},
                %b2: tensor<10xf32> {soap.param, soap.name = "fc2.bias", soap.init = "zeros"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.015625 : f32

  // Hidden layer: matmul into a zero-filled output, then bias and ReLU.
  %h0 = tensor.empty() : tensor<64x256xf32>
  %h1 = linalg.fill ins(%zero : f32) outs(%h0 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %h2 = linalg.matmul ins(%x, %w1 : tensor<64x784xf32>, tensor<784x256xf32>)
                      outs(%h1 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h2, %b1 : tensor<64x256xf32>, tensor<256xf32>) outs(%h0 : tensor<64x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x256xf32>

  // Output layer: the bias is broadcast into the matmul's output.
  %y0 = tensor.empty() : tensor<64x10xf32>
  %y1 = linalg.broadcast ins(%b2 : tensor<10xf32>) outs(%y0 : tensor<64x10xf32>) dimensions = [0]
  %logits = linalg.matmul ins(%h, %w2 : tensor<64x256xf32>, tensor<256x10xf32>)
                          outs(%y1 : tensor<64x10xf32>) -> tensor<64x10xf32>

  // Softmax cross-entropy: max, sum of exponentials, log-sum-exp.
  %m0 = tensor.empty() : tensor<64xf32>
  %m1 = linalg.fill ins(%ninf : f32) outs(%m0 : tensor<64xf32>) -> tensor<64xf32>
  %max = linalg.reduce ins(%logits : tensor<64x10xf32>) outs(%m1 : tensor<64xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    }
  %s1 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<64xf32>) -> tensor<64xf32>
  %sumexp = linalg.generic {indexing_maps = [#id, #row, #row],
                            iterator_types = ["parallel", "reduction"]}
      ins(%logits, %max : tensor<64x10xf32>, tensor<64xf32>) outs(%s1 : tensor<64xf32>) {
  ^bb0(%l: f32, %mx: f32, %acc: f32):
    %d = arith.subf %l, %mx : f32
    %e = math.exp %d : f32
    %a = arith.addf %acc, %e : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  // Loss of each sample: log(sum exp) + max - the logit of its label.
  %p1 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<64xf32>) -> tensor<64xf32>
  %picked = linalg.generic {indexing_maps = [#id, #row, #row],
                            iterator_types = ["parallel", "reduction"]}
      ins(%logits, %labels : tensor<64x10xf32>, tensor<64xi64>) outs(%p1 : tensor<64xf32>) {
  ^bb0(%l: f32, %t: i64, %acc: f32):
    %class = linalg.index 1 : index
    %label = arith.index_cast %t : i64 to index
    %hit = arith.cmpi eq, %class, %label : index
    %p = arith.select %hit, %l, %zero : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  %per_sample = linalg.generic {indexing_maps = [#all, #all, #all, #all],
                                iterator_types = ["parallel"]}
      ins(%sumexp, %max, %picked : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      outs(%m0 : tensor<64xf32>) {
  ^bb0(%se: f32, %mx: f32, %pk: f32, %o: f32):
    %lg = math.log %se : f32
    %a = arith.addf %lg, %mx : f32
    %r = arith.subf %a, %pk : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>

  // Mean over the batch.
  %l0 = tensor.empty() : tensor<f32>
  %l1 = linalg.fill ins(%zero : f32) outs(%l0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#all, #scalar],
                          iterator_types = ["reduction"]}
      ins(%per_sample : tensor<64xf32>) outs(%l1 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %w = arith.mulf %v, %inv_batch : f32
    %a = arith.addf %acc, %w : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}
