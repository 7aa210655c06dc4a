// init=seed: every lifted weight starts from the runtime's seed as its uses
// say (training from scratch, or an export whose weights were stripped to
// splats, where every position would otherwise compute the same value):
// - the weight operand of a contraction: uniform in +-1/sqrt(fan-in), the
//   fan-in the product of the dimensions it is contracted over (K of a
//   K x N matmul operand, C*KH*KW of a filter): "fan-in:N";
// - a table that a body reads with tensor.extract (an embedding): "fan-in:1";
// - an elementwise factor (a scale, a gamma; also a divisor): ones;
// - an elementwise addend (a bias, a beta): zeros;
// - through ops that only move elements (a transpose, a broadcast, a
//   reshape, a copying generic): the role of the moved copy;
// - a use that says nothing (a slice, a call): the runtime's fan-in over
//   all dimensions but the first ("fan-in").
// Elided constants start the same way without init=seed. The default
// (init=export) keeps every exported value.
// RUN: soap-opt %s --soap-lift-params="init=seed" | FileCheck %s --check-prefix=SEED
// RUN: soap-opt %s --soap-lift-params | FileCheck %s --check-prefix=EXPORT

// SEED-LABEL: func.func @forward(
// SEED-SAME: tensor<5x4xf32> {soap.init = "fan-in:1", soap.name = "param.0", soap.param}
// SEED-SAME: tensor<4x3xf32> {soap.init = "fan-in:4", soap.name = "param.1", soap.param}
// SEED-SAME: tensor<3xf32> {soap.init = "zeros", soap.name = "param.2", soap.param}
// SEED-SAME: tensor<1x3xf32> {soap.init = "ones", soap.name = "param.3", soap.param}
// SEED-SAME: tensor<3x3xf32> {soap.init = "fan-in:3", soap.name = "param.4", soap.param}
// SEED-SAME: tensor<4x3xf32> {soap.init = "fan-in", soap.name = "param.5", soap.param}
// EXPORT-LABEL: func.func @forward(
// EXPORT-SAME: tensor<5x4xf32> {soap.init = dense<1.250000e-01> : tensor<5x4xf32>, soap.name = "param.0", soap.param}
// EXPORT-SAME: tensor<4x3xf32> {soap.init = dense<2.500000e-01> : tensor<4x3xf32>, soap.name = "param.1", soap.param}
// EXPORT-SAME: tensor<3xf32> {soap.init = dense<5.000000e-01> : tensor<3xf32>, soap.name = "param.2", soap.param}
// EXPORT-SAME: tensor<1x3xf32> {soap.init = dense<7.500000e-01> : tensor<1x3xf32>, soap.name = "param.3", soap.param}
#rows = affine_map<(d0, d1) -> (d0, d1)>
#ids = affine_map<(d0, d1) -> (d0)>
#bias = affine_map<(d0, d1) -> (d1)>
#scale = affine_map<(d0, d1) -> (0, d1)>
func.func @forward(%ids: tensor<2xi32>) -> tensor<2x3xf32> {
  %table = arith.constant dense<0.125> : tensor<5x4xf32>
  %w = arith.constant dense<0.25> : tensor<4x3xf32>
  %b = arith.constant dense<0.5> : tensor<3xf32>
  %g = arith.constant dense<0.75> : tensor<1x3xf32>
  %t = arith.constant dense<0.375> : tensor<3x3xf32>
  %big = arith.constant dense<0.0625> : tensor<4x3xf32>
  %zero = arith.constant 0.0 : f32
  %rows_empty = tensor.empty() : tensor<2x4xf32>
  %x = linalg.generic {indexing_maps = [#ids, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<2xi32>) outs(%rows_empty : tensor<2x4xf32>) {
  ^bb0(%id: i32, %o: f32):
    %row = arith.index_cast %id : i32 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<5x4xf32>
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %empty = tensor.empty() : tensor<2x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%init : tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = linalg.generic {indexing_maps = [#rows, #bias, #scale, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b, %g : tensor<2x3xf32>, tensor<3xf32>, tensor<1x3xf32>) outs(%empty : tensor<2x3xf32>) {
  ^bb0(%a: f32, %c: f32, %s: f32, %o: f32):
    %sum = arith.addf %a, %c : f32
    %scaled = arith.mulf %sum, %s : f32
    linalg.yield %scaled : f32
  } -> tensor<2x3xf32>
  %tt_empty = tensor.empty() : tensor<3x3xf32>
  %tt = linalg.transpose ins(%t : tensor<3x3xf32>) outs(%tt_empty : tensor<3x3xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%z, %tt : tensor<2x3xf32>, tensor<3x3xf32>) outs(%init : tensor<2x3xf32>) -> tensor<2x3xf32>
  %slice = tensor.extract_slice %big[0, 0] [3, 3] [1, 1] : tensor<4x3xf32> to tensor<3x3xf32>
  %s = linalg.matmul ins(%r, %slice : tensor<2x3xf32>, tensor<3x3xf32>) outs(%init : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
