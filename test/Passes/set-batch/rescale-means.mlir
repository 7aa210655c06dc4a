// RUN: soap-opt %s -verify-diagnostics --soap-set-batch="batch=4 rescale-means=1" | FileCheck %s

// rescale-means=1: the constants that count the elements of a mean over
// the batch count them at the new batch. The loss (1/12 of a sum over
// 2 x 6) and the division by 12 become 1/24 and 24; the division by 6 (a
// mean over the features, not the batch) stays.
#all = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#none = affine_map<(d0, d1) -> ()>
#scalar = affine_map<() -> ()>
// CHECK-LABEL: func.func @means(
// CHECK-SAME: tensor<4x6xf32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>)
// CHECK: arith.constant 0.0416666{{.*}} : f32
// CHECK: arith.constant 2.400000e+01 : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.constant 6.000000e+00 : f32
func.func @means(%x: tensor<2x6xf32>) -> (tensor<f32>, tensor<f32>, tensor<2xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-note @+2 {{the reduction over the batch}}
  // expected-remark @+1 {{soap-set-batch: multiplies by 0.0833333, which counts the 12 elements that 'linalg.generic' sums over the batch at batch 2; rescaled to 0.0416667 for the 24 elements at batch 4}}
  %mean = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<2x6xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %scale = arith.constant 0.0833333358 : f32
    %v = arith.mulf %in, %scale : f32
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %count = arith.constant dense<12.0> : tensor<f32>
  %e2 = tensor.empty() : tensor<f32>
  // expected-remark @+1 {{soap-set-batch: divides by 12, which counts the 12 elements that 'linalg.generic' sums over the batch at batch 2; rescaled to 24 for the 24 elements at batch 4}}
  %again = linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []} ins(%mean, %count : tensor<f32>, tensor<f32>) outs(%e2 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<f32>
  %er = tensor.empty() : tensor<2xf32>
  %ir = linalg.fill ins(%zero : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %rows = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x6xf32>) outs(%ir : tensor<2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %six = arith.constant 6.0 : f32
    %v = arith.divf %in, %six : f32
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %mean, %again, %rows : tensor<f32>, tensor<f32>, tensor<2xf32>
}
