// Batch norm in evaluation form is recognized by the dataflow of the
// generic's body, whatever the operand order, the layout, and how the
// exporter wrote the inverse standard deviation.
// RUN: soap-opt %s --split-input-file --soap-lift-params | FileCheck %s

// Statistics first, epsilon on the left, the inverse folded into gamma
// before it scales x - mean; channels last (NHWC).
#act = affine_map<(n, h, w, c) -> (n, h, w, c)>
#chan = affine_map<(n, h, w, c) -> (c)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @reordered(
// CHECK-SAME: %[[G:arg0]]: tensor<3xf32> {soap.init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[B:arg1]]: tensor<3xf32> {soap.init = dense<[4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<3xf32>, soap.name = "param.1", soap.param}
// CHECK-SAME: %[[X:arg2]]: tensor<2x4x4x3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[LAST]]], iterator_types = ["reduction", "reduction", "reduction", "parallel"]} ins(%[[X]] :
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]],
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[MEAN]], %[[X]], %[[VAR]], %[[G]], %[[B]] :
func.func @reordered(%x: tensor<2x4x4x3xf32>) -> tensor<2x4x4x3xf32> {
  %mean = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %var = arith.constant dense<[-1.0, 2.0, 3.0]> : tensor<3xf32>
  %gamma = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %beta = arith.constant dense<[4.0, 5.0, 6.0]> : tensor<3xf32>
  %eps = arith.constant 1.0e-03 : f32
  %e = tensor.empty() : tensor<2x4x4x3xf32>
  %0 = linalg.generic {indexing_maps = [#chan, #act, #chan, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%mean, %x, %var, %gamma, %beta : tensor<3xf32>, tensor<2x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%e : tensor<2x4x4x3xf32>) {
  ^bb0(%m: f32, %in: f32, %v: f32, %g: f32, %b: f32, %out: f32):
    %ve = arith.addf %eps, %v : f32
    %r = math.rsqrt %ve : f32
    %k = arith.mulf %r, %g : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %k, %d : f32
    %t = arith.addf %b, %n : f32
    linalg.yield %t : f32
  } -> tensor<2x4x4x3xf32>
  return %0 : tensor<2x4x4x3xf32>
}

// -----

// 1 / sqrt(var + eps), and a division by sqrt(var + eps).
#act = affine_map<(n, c) -> (n, c)>
#chan = affine_map<(n, c) -> (c)>
// CHECK-LABEL: func.func @inverse_sqrt(
// CHECK-SAME: %[[X:arg0]]: tensor<8x3xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MEAN]], %[[VAR]] :
// CHECK: math.sqrt
// CHECK: %[[MEAN2:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: %[[VAR2:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Y]], %[[MEAN2]], %[[VAR2]] :
// CHECK-NOT: arith.constant dense
func.func @inverse_sqrt(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %mean = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %var = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %eps = arith.constant 1.0e-03 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8x3xf32>
  %0 = linalg.generic {indexing_maps = [#act, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %var : tensor<8x3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%e : tensor<8x3xf32>) {
  ^bb0(%in: f32, %m: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %s = math.sqrt %ve : f32
    %r = arith.divf %one, %s : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    linalg.yield %n : f32
  } -> tensor<8x3xf32>
  %1 = linalg.generic {indexing_maps = [#act, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel"]}
      ins(%0, %mean, %var : tensor<8x3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%e : tensor<8x3xf32>) {
  ^bb0(%in: f32, %m: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %s = math.sqrt %ve : f32
    %d = arith.subf %in, %m : f32
    %n = arith.divf %d, %s : f32
    linalg.yield %n : f32
  } -> tensor<8x3xf32>
  return %1 : tensor<8x3xf32>
}

// -----

// One input serves as both the mean and beta (operands deduplicated): the
// mean gets an input of its own, beta stays a parameter.
#act = affine_map<(n, c) -> (n, c)>
#chan = affine_map<(n, c) -> (c)>
// CHECK-LABEL: func.func @shared_input(
// CHECK-SAME: %[[B:arg0]]: tensor<3xf32> {soap.init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[X:arg1]]: tensor<8x3xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[B]], %[[VAR]], %[[MEAN]] :
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[BETA:.*]]: f32, %[[V:.*]]: f32, %[[M:.*]]: f32, %{{.*}}: f32):
// CHECK: arith.subf %[[IN]], %[[M]]
// CHECK: arith.addf %{{.*}}, %[[BETA]]
func.func @shared_input(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %var = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %eps = arith.constant 1.0e-03 : f32
  %e = tensor.empty() : tensor<8x3xf32>
  %0 = linalg.generic {indexing_maps = [#act, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %c, %var : tensor<8x3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%e : tensor<8x3xf32>) {
  ^bb0(%in: f32, %mb: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %mb : f32
    %n = arith.mulf %d, %r : f32
    %t = arith.addf %n, %mb : f32
    linalg.yield %t : f32
  } -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

// Statistics the function computes (layer norm) already are the batch's:
// nothing is added. Per-element "statistics" (read through the activation's
// own map) normalize over nothing: not a batch norm, lifted as weights.
#act = affine_map<(n, c) -> (n, c)>
#row = affine_map<(n, c) -> (n)>
// CHECK-LABEL: func.func @not_batch_norm(
// CHECK-SAME: %[[M:arg0]]: tensor<2x3xf32> {soap.init = dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[X:arg1]]: tensor<2x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[M]], %[[M]] :
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] :
// CHECK-NOT: linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[SUM]], %[[SUM]] :
// CHECK-NOT: linalg.generic
func.func @not_batch_norm(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %eps = arith.constant 1.0e-03 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#act, #act, #act, #act],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %c, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
      outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %m: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    linalg.yield %n : f32
  } -> tensor<2x3xf32>
  %re = tensor.empty() : tensor<2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%re : tensor<2xf32>) -> tensor<2xf32>
  %sum = linalg.generic {indexing_maps = [#act, #row],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%z : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2xf32>
  %1 = linalg.generic {indexing_maps = [#act, #row, #row, #act],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %sum : tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>)
      outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %m: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    linalg.yield %n : f32
  } -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
