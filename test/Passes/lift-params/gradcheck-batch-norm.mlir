// Batch norm exported in evaluation form, lifted in both modes, has the
// gradients finite differences give: through the batch's statistics
// (train) and through the constant statistics (frozen), for the lifted
// gamma and beta and for the parameters before it.
// RUN: soap-opt %s --soap-lift-params="batch-norm=train" -o %t.train.mlir
// RUN: soap-gradcheck %t.train.mlir --loss=mse | FileCheck %s
// RUN: soap-opt %s --soap-lift-params="batch-norm=frozen" -o %t.frozen.mlir
// RUN: soap-gradcheck %t.frozen.mlir --loss=mse | FileCheck %s
// The check can fail: a corrupted gradient is caught.
// RUN: not soap-gradcheck %t.train.mlir --loss=mse --corrupt=0.01 | FileCheck %s --check-prefix=CORRUPT

// CHECK-NOT: FAIL
// CHECK: all 4 parameters ok
// CORRUPT: FAIL

#act = affine_map<(n, c, h, w) -> (n, c, h, w)>
#chw = affine_map<(n, c, h, w) -> (c, h, w)>
#hw = affine_map<(n, c, h, w) -> (h, w)>
#chan = affine_map<(n, c, h, w) -> (c)>

func.func @forward(%w: tensor<3x2x2xf32> {soap.param, soap.name = "w"},
                   %u: tensor<2x2xf32> {soap.param, soap.name = "u"},
                   %x: tensor<4x3x2x2xf32>) -> tensor<4x3x2x2xf32> {
  %gamma = arith.constant dense<[0.5, 1.5, -1.0]> : tensor<3xf32>
  %beta = arith.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf32>
  %mean = arith.constant dense<[0.2, -0.1, 0.05]> : tensor<3xf32>
  %var = arith.constant dense<[0.5, 1.0, 2.0]> : tensor<3xf32>
  %eps = arith.constant 1.0e-05 : f32
  %e = tensor.empty() : tensor<4x3x2x2xf32>
  %h = linalg.generic {indexing_maps = [#act, #chw, #hw, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %w, %u : tensor<4x3x2x2xf32>, tensor<3x2x2xf32>, tensor<2x2xf32>)
      outs(%e : tensor<4x3x2x2xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x3x2x2xf32>
  %y = linalg.generic {indexing_maps = [#act, #chan, #chan, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%h, %gamma, %beta, %mean, %var : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%e : tensor<4x3x2x2xf32>) {
  ^bb0(%in: f32, %g: f32, %b: f32, %m: f32, %v: f32, %o: f32):
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    %s = arith.mulf %n, %g : f32
    %t = arith.addf %s, %b : f32
    linalg.yield %t : f32
  } -> tensor<4x3x2x2xf32>
  return %y : tensor<4x3x2x2xf32>
}
