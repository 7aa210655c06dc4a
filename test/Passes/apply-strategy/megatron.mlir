// RUN: soap-opt %s --soap-apply-strategy="strategy=megatron devices=4" | FileCheck %s

// A feed-forward block: the first matmul is column parallel (its output
// features n split 4 ways), the activation between follows that split, the
// second matmul is row parallel (its reduction k split: partial sums).

// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 4, 1], devices = [0, 1, 2, 3]>}
// CHECK: linalg.generic {{.*}}soap.config = #soap.config<degrees = [1, 4], devices = [0, 1, 2, 3]>
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 4], devices = [0, 1, 2, 3]>}
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @ffn(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32> {soap.param},
               %w2: tensor<64x16xf32> {soap.param}, %o1: tensor<8x64xf32>,
               %o2: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%o1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x64xf32>) outs(%o1 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x64xf32>, tensor<64x16xf32>) outs(%o2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
