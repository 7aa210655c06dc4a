// RUN: soap-opt %s --soap-merge-reductions | FileCheck %s

// --soap-lower-cpu's merge-reductions step (soap-merge-reductions):
// independent reductions over the same loops that read one tensor through
// the same map run as one generic with all their outputs, so that they
// read their inputs once.

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
#red = ["reduction", "parallel", "reduction", "reduction"]

// A batch norm's backward sums: sum(dy) and sum(dy * x) per channel, and
// sum(dy * x * s) with a per-channel scale whose init is made between the
// first two sums (so the merged op goes to the later sum's place). The
// shared input is read once: three inputs, three outputs.
// CHECK-LABEL: func.func @batch_norm_sums(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4x4xf32>, %[[DY:[^:]*]]: tensor<2x3x4x4xf32>, %[[S:[^:]*]]: tensor<3xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} outs(%[[E]]
// CHECK: %[[Z2:.*]] = linalg.fill {{.*}} outs(%[[E]]
// CHECK: %[[M:.*]]:3 = linalg.generic
// CHECK-SAME: ins(%[[DY]], %[[X]], %[[S]] : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>)
// CHECK-SAME: outs(%[[Z]], %[[Z]], %[[Z2]] : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK: ^bb0(%[[DYV:.*]]: f32, %[[XV:.*]]: f32, %[[SV:.*]]: f32, %[[A0:.*]]: f32, %[[A1:.*]]: f32, %[[A2:.*]]: f32):
// CHECK: %[[SUM0:.*]] = arith.addf %[[DYV]], %[[A0]]
// CHECK: %[[P1:.*]] = arith.mulf %[[DYV]], %[[XV]]
// CHECK: %[[SUM1:.*]] = arith.addf %[[P1]], %[[A1]]
// CHECK: %[[P2:.*]] = arith.mulf %[[DYV]], %[[XV]]
// CHECK: %[[P3:.*]] = arith.mulf %[[P2]], %[[SV]]
// CHECK: %[[SUM2:.*]] = arith.addf %[[P3]], %[[A2]]
// CHECK: linalg.yield %[[SUM0]], %[[SUM1]], %[[SUM2]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2
func.func @batch_norm_sums(%x: tensor<2x3x4x4xf32>, %dy: tensor<2x3x4x4xf32>,
                           %s: tensor<3xf32>)
    -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #chan], iterator_types = #red}
      ins(%dy : tensor<2x3x4x4xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #chan], iterator_types = #red}
      ins(%dy, %x : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>)
      outs(%z : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %p, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #chan, #chan],
                       iterator_types = #red}
      ins(%dy, %x, %s : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>)
      outs(%z2 : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.mulf %p, %c : f32
    %r = arith.addf %q, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// What stays apart: a sum that reads the other's result (a dependence),
// a sum over other loops, one that reads nothing the first reads through
// the same map (here the same tensor transposed), and products that read
// one operand (contractions run as library calls, one op each).
// CHECK-LABEL: func.func @apart(
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
#swap = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
#rows = affine_map<(d0, d1, d2, d3) -> (d2)>
#redRows = ["reduction", "reduction", "parallel", "reduction"]
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#mm = ["parallel", "parallel", "reduction"]
func.func @apart(%x: tensor<2x3x4x4xf32>, %ma: tensor<4x5xf32>,
                 %mb: tensor<5x6xf32>, %mc: tensor<5x6xf32>)
    -> (tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>,
        tensor<4x6xf32>, tensor<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #chan], iterator_types = #red}
      ins(%x : tensor<2x3x4x4xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #chan, #chan],
                       iterator_types = #red}
      ins(%x, %0 : tensor<2x3x4x4xf32>, tensor<3xf32>)
      outs(%z : tensor<3xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %r = arith.addf %d, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #rows], iterator_types = #redRows}
      ins(%x : tensor<2x3x4x4xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %3 = linalg.generic {indexing_maps = [#swap, #chan], iterator_types = #red}
      ins(%x : tensor<2x3x4x4xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.mulf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %e46 = tensor.empty() : tensor<4x6xf32>
  %z46 = linalg.fill ins(%zero : f32) outs(%e46 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %4 = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = #mm}
      ins(%ma, %mb : tensor<4x5xf32>, tensor<5x6xf32>) outs(%z46 : tensor<4x6xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %5 = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = #mm}
      ins(%ma, %mc : tensor<4x5xf32>, tensor<5x6xf32>) outs(%z46 : tensor<4x6xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
