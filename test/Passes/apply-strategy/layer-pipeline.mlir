// RUN: soap-opt %s --soap-apply-strategy="strategy=layer-pipeline devices=4" | FileCheck %s

// Three layers (matmul, then a bias add and relu reading their own
// parameter) of 64K, 16K and 4K FLOPs on 4 devices: two stages of two
// devices, the first layer on devices 0-1, the two others on 2-3, each op
// split along its batch over its stage. The bias adds go with their
// matmuls: without that there would be six layers and four stages.

#map = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @mlp
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
// CHECK: linalg.generic {{.*}}soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [2, 3]>}
// CHECK: linalg.generic {{.*}}soap.config = #soap.config<degrees = [2, 1], devices = [2, 3]>
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [2, 3]>}
// CHECK: linalg.generic {{.*}}soap.config = #soap.config<degrees = [2, 1], devices = [2, 3]>
func.func @mlp(%x: tensor<8x64xf32>,
               %w1: tensor<64x64xf32> {soap.param}, %b1: tensor<64xf32> {soap.param},
               %w2: tensor<64x16xf32> {soap.param}, %b2: tensor<16xf32> {soap.param},
               %w3: tensor<16x16xf32> {soap.param}, %b3: tensor<16xf32> {soap.param}) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<8x64xf32>, tensor<64x64xf32>) outs(%z1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h1 = linalg.generic {indexing_maps = [#map, #bias, #map], iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1 : tensor<8x64xf32>, tensor<64xf32>) outs(%e1 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m2 = linalg.matmul ins(%h1, %w2 : tensor<8x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h2 = linalg.generic {indexing_maps = [#map, #bias, #map], iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2 : tensor<8x16xf32>, tensor<16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %m3 = linalg.matmul ins(%h2, %w3 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h3 = linalg.generic {indexing_maps = [#map, #bias, #map], iterator_types = ["parallel", "parallel"]}
      ins(%m3, %b3 : tensor<8x16xf32>, tensor<16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %h3 : tensor<8x16xf32>
}
