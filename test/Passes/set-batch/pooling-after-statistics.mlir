// RUN: soap-opt %s -verify-diagnostics --soap-set-batch="batch=4 rescale-means=1" | FileCheck %s

// A global average pooling of activations normalized with batch statistics
// (MobileNetV3's squeeze-excitation, ResNet-18's head, at batch 1): the
// pooling divides by the 9 points of a 3 x 3 image, which is also the
// extent of the statistics' sum over (batch, rows, columns) at batch 1. The
// divisor counts the pooling's own elements, not the batch: no remark, and
// rescale-means=1 leaves it 9 (rescaled it would be 36, a wrong model).
// The statistics' own division (by the count of the batch) is still found.
#x = affine_map<(n, c, h, w) -> (n, c, h, w)>
#ch = affine_map<(n, c, h, w) -> (c)>
#nc = affine_map<(n, c, h, w) -> (n, c)>
#c1 = affine_map<(c) -> (c)>
#nc2 = affine_map<(n, c) -> (n, c)>
// CHECK-LABEL: func.func @pooled(
// CHECK-SAME: tensor<4x2x3x3xf32>
// CHECK: arith.constant 3.600000e+01 : f32
// CHECK: arith.constant 9.000000e+00 : f32
// CHECK-NOT: arith.constant 3.600000e+01
func.func @pooled(%x: tensor<1x2x3x3xf32>) -> tensor<1x2xf32> {
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<2xf32>
  %zc = linalg.fill ins(%zero : f32) outs(%ec : tensor<2xf32>) -> tensor<2xf32>
  // expected-note @+1 {{the reduction over the batch}}
  %sum = linalg.generic {indexing_maps = [#x, #ch], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<1x2x3x3xf32>) outs(%zc : tensor<2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  // expected-remark @+1 {{soap-set-batch: divides by 9, which counts the 9 elements that 'linalg.generic' sums over the batch at batch 1; rescaled to 36 for the 36 elements at batch 4}}
  %mean = linalg.generic {indexing_maps = [#c1, #c1], iterator_types = ["parallel"]} ins(%sum : tensor<2xf32>) outs(%ec : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %count = arith.constant 9.0 : f32
    %m = arith.divf %in, %count : f32
    linalg.yield %m : f32
  } -> tensor<2xf32>
  %e = tensor.empty() : tensor<1x2x3x3xf32>
  %centered = linalg.generic {indexing_maps = [#x, #ch, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mean : tensor<1x2x3x3xf32>, tensor<2xf32>) outs(%e : tensor<1x2x3x3xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<1x2x3x3xf32>
  %ep = tensor.empty() : tensor<1x2xf32>
  %zp = linalg.fill ins(%zero : f32) outs(%ep : tensor<1x2xf32>) -> tensor<1x2xf32>
  %pooled = linalg.generic {indexing_maps = [#x, #nc], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%centered : tensor<1x2x3x3xf32>) outs(%zp : tensor<1x2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x2xf32>
  %avg = linalg.generic {indexing_maps = [#nc2, #nc2], iterator_types = ["parallel", "parallel"]} ins(%pooled : tensor<1x2xf32>) outs(%ep : tensor<1x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %points = arith.constant 9.0 : f32
    %a = arith.divf %in, %points : f32
    linalg.yield %a : f32
  } -> tensor<1x2xf32>
  return %avg : tensor<1x2xf32>
}
