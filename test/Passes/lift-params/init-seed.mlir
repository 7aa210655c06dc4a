// init=seed: lifted matrices and filters start from the runtime's seeded
// fan-in (training from scratch, or an export whose weights were stripped to
// splats, where every position would otherwise compute the same value);
// vectors (biases, gammas, betas) keep their exported values. The default
// (init=export) keeps every exported value.
// RUN: soap-opt %s --soap-lift-params="init=seed" | FileCheck %s --check-prefix=SEED
// RUN: soap-opt %s --soap-lift-params | FileCheck %s --check-prefix=EXPORT

// SEED-LABEL: func.func @forward(
// SEED-SAME: tensor<4x3xf32> {soap.init = "fan-in", soap.name = "param.0", soap.param}
// SEED-SAME: tensor<3xf32> {soap.init = dense<5.000000e-01> : tensor<3xf32>, soap.name = "param.1", soap.param}
// EXPORT-LABEL: func.func @forward(
// EXPORT-SAME: tensor<4x3xf32> {soap.init = dense<2.500000e-01> : tensor<4x3xf32>, soap.name = "param.0", soap.param}
// EXPORT-SAME: tensor<3xf32> {soap.init = dense<5.000000e-01> : tensor<3xf32>, soap.name = "param.1", soap.param}
#rows = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<0.25> : tensor<4x3xf32>
  %b = arith.constant dense<0.5> : tensor<3xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%init : tensor<2x3xf32>) -> tensor<2x3xf32>
  %out = tensor.empty() : tensor<2x3xf32>
  %z = linalg.generic {indexing_maps = [#rows, #bias, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%out : tensor<2x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %z : tensor<2x3xf32>
}
