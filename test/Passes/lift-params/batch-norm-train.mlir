// Batch norm exported in evaluation form trains with the batch's
// statistics (the default, batch-norm=train): the mean and variance
// operands become reductions of the activation over every loop but the
// channel's, computed before the normalization, and the exported
// statistics go. Gamma and beta stay parameters; the one dense<1.0> that
// CSE made the gamma and the variance of both layers gives each layer its
// own gamma.
// RUN: soap-opt %s --soap-lift-params | FileCheck %s
// RUN: soap-opt %s --soap-lift-params="batch-norm=train" | FileCheck %s
// The count follows --soap-set-batch: it sums ones over the resized
// activation (a count kept at the export's batch made ResNet-18's means
// batch-size times too large).
// RUN: soap-opt %s --soap-lift-params --soap-set-batch=5 | FileCheck %s --check-prefix=BATCH
// BATCH: linalg.generic {{.*}} ins(%arg4 : tensor<5x3x4x4xf32>) outs(%{{.*}} : tensor<3xf32>)
// BATCH: arith.addf %in, %out
// BATCH: linalg.generic {{.*}} ins(%arg4 : tensor<5x3x4x4xf32>) outs(%{{.*}} : tensor<3xf32>)
// BATCH-NEXT: ^bb0
// BATCH-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// BATCH-NEXT: arith.addf %[[ONE]], %{{.*}} : f32

#act = affine_map<(n, c, h, w) -> (n, c, h, w)>
#chan = affine_map<(n, c, h, w) -> (c)>

// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[G1:arg0]]: tensor<3xf32> {soap.init = dense<1.000000e+00> : tensor<3xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[G2:arg1]]: tensor<3xf32> {soap.init = dense<1.000000e+00> : tensor<3xf32>, soap.name = "param.1", soap.param}
// CHECK-SAME: %[[B1:arg2]]: tensor<3xf32> {soap.init = dense<0.000000e+00> : tensor<3xf32>, soap.name = "param.2", soap.param}
// CHECK-SAME: %[[B2:arg3]]: tensor<3xf32> {soap.init = dense<0.000000e+00> : tensor<3xf32>, soap.name = "param.3", soap.param}
// CHECK-SAME: %[[X:arg4]]: tensor<2x3x4x4xf32>)
// CHECK-NOT: arith.constant dense
// The mean: a sum over n, h, w divided by a count per channel, a sum of
// ones over the activation's loops (so that it follows the batch).
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[C]]], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%[[X]] : {{.*}}) outs(%{{.*}} : tensor<3xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: %[[COUNT:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[C]]], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%[[X]] : tensor<2x3x4x4xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: arith.addf %[[ONE]], %{{.*}} : f32
// CHECK: %[[MEAN:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]], #[[ID1]]], {{.*}} ins(%[[SUM]], %[[COUNT]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: arith.divf
// The biased variance: the mean square of x - mean.
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MEAN]] : tensor<2x3x4x4xf32>, tensor<3xf32>)
// CHECK: %[[D:.*]] = arith.subf
// CHECK: arith.mulf %[[D]], %[[D]]
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[SQ]], %[[COUNT]] :
// The normalization reads them in place of the exported statistics.
// CHECK: %[[BN1:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[G1]], %[[B1]], %[[MEAN]], %[[VAR]] :
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}} ins(%[[BN1]], %[[G2]], %[[B2]], %{{.*}}, %{{.*}} :
// CHECK: return
func.func @forward(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  %ones = arith.constant dense<1.0> : tensor<3xf32>
  %zeros = arith.constant dense<0.0> : tensor<3xf32>
  %eps = arith.constant 1.0e-05 : f64
  %0 = linalg.generic {indexing_maps = [#act, #chan, #chan, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %ones, %zeros, %zeros, %ones : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%x : tensor<2x3x4x4xf32>) {
  ^bb0(%in: f32, %gamma: f32, %beta: f32, %mean: f32, %var: f32, %out: f32):
    %e = arith.truncf %eps : f64 to f32
    %v = arith.addf %var, %e : f32
    %r = math.rsqrt %v : f32
    %d = arith.subf %in, %mean : f32
    %n = arith.mulf %d, %r : f32
    %g = arith.mulf %n, %gamma : f32
    %b = arith.addf %g, %beta : f32
    linalg.yield %b : f32
  } -> tensor<2x3x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#act, #chan, #chan, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%0, %ones, %zeros, %zeros, %ones : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%0 : tensor<2x3x4x4xf32>) {
  ^bb0(%in: f32, %gamma: f32, %beta: f32, %mean: f32, %var: f32, %out: f32):
    %e = arith.truncf %eps : f64 to f32
    %v = arith.addf %var, %e : f32
    %r = math.rsqrt %v : f32
    %d = arith.subf %in, %mean : f32
    %n = arith.mulf %d, %r : f32
    %g = arith.mulf %n, %gamma : f32
    %b = arith.addf %g, %beta : f32
    linalg.yield %b : f32
  } -> tensor<2x3x4x4xf32>
  return %1 : tensor<2x3x4x4xf32>
}
