// Every op without a gradient is reported, in program order: the first
// one in the function first (the reverse sweep meets it last).
// RUN: not soap-opt %s --soap-training-step 2>&1 | FileCheck %s
// CHECK: errors-order.mlir:[[@LINE+10]]:{{.*}} 'math.atan' op cannot be differentiated
// CHECK: errors-order.mlir:[[@LINE+15]]:{{.*}} 'math.acos' op cannot be differentiated
func.func @loss(%w: tensor<4xf32> {soap.param}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.atan %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%a : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.acos %x : f32
    %s = arith.addf %o, %y : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
