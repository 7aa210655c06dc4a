// RUN: soap-opt %s --soap-plane-updates | FileCheck %s

// --soap-lower-cpu's plane-updates step (soap-plane-updates): a chain of
// elementwise updates of strided slices of one tensor, each spanning its
// two leading dimensions whole (a max pooling's gradient: one update per
// window offset), runs as one loop nest over those dimensions with every
// update inside, applied to one plane of the tensor per iteration.

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>

// CHECK-LABEL: func.func @two_offsets(
// CHECK-SAME: %[[ACC:[^:]*]]: tensor<2x3x9x9xf32>, %[[X:[^:]*]]: tensor<2x3x9x9xf32>, %[[DY:[^:]*]]: tensor<2x3x4x4xf32>, %[[S:[^:]*]]: tensor<3xf32>
// CHECK: %[[N:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[ACC]])
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[B:.*]] = %[[A]])
// CHECK: %[[PLANE:.*]] = tensor.extract_slice %[[B]][%[[I]], %[[J]], 0, 0] [1, 1, 9, 9] [1, 1, 1, 1]
// CHECK: %[[OUT0:.*]] = tensor.extract_slice %[[PLANE]][0, 0, 0, 0] [1, 1, 4, 4] [1, 1, 2, 2]
// CHECK: %[[DY0:.*]] = tensor.extract_slice %[[DY]][%[[I]], %[[J]], 0, 0] [1, 1, 4, 4] [1, 1, 1, 1]
// The per-channel scale is read whole: its loop is the channel loop, which
// the nest runs, so it is sliced to the channel too.
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[S]][%[[J]]] [1] [1]
// CHECK: %[[G0:.*]] = linalg.generic {{.*}} ins(%[[DY0]], %[[S0]] : tensor<1x1x4x4xf32>, tensor<1xf32>) outs(%[[OUT0]] : tensor<1x1x4x4xf32>)
// CHECK: %[[P1:.*]] = tensor.insert_slice %[[G0]] into %[[PLANE]][0, 0, 0, 0] [1, 1, 4, 4] [1, 1, 2, 2]
// CHECK: %[[OUT1:.*]] = tensor.extract_slice %[[P1]][0, 0, 1, 1] [1, 1, 4, 4] [1, 1, 2, 2]
// CHECK: %[[G1:.*]] = linalg.generic {{.*}} outs(%[[OUT1]] : tensor<1x1x4x4xf32>)
// CHECK: %[[P2:.*]] = tensor.insert_slice %[[G1]] into %[[P1]][0, 0, 1, 1] [1, 1, 4, 4] [1, 1, 2, 2]
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[P2]] into %[[B]][%[[I]], %[[J]], 0, 0] [1, 1, 9, 9] [1, 1, 1, 1]
// CHECK: scf.yield %[[NEW]]
// CHECK: } {soap_plane_updates}
// CHECK: return %[[N]]
func.func @two_offsets(%acc: tensor<2x3x9x9xf32>, %x: tensor<2x3x9x9xf32>,
                       %dy: tensor<2x3x4x4xf32>, %s: tensor<3xf32>) -> tensor<2x3x9x9xf32> {
  %o0 = tensor.extract_slice %acc[0, 0, 0, 0] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x9x9xf32> to tensor<2x3x4x4xf32>
  %g0 = linalg.generic {indexing_maps = [#id, #chan, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dy, %s : tensor<2x3x4x4xf32>, tensor<3xf32>) outs(%o0 : tensor<2x3x4x4xf32>) {
  ^bb0(%d: f32, %c: f32, %out: f32):
    %m = arith.mulf %d, %c : f32
    %a = arith.addf %out, %m : f32
    linalg.yield %a : f32
  } -> tensor<2x3x4x4xf32>
  %acc1 = tensor.insert_slice %g0 into %acc[0, 0, 0, 0] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x4x4xf32> into tensor<2x3x9x9xf32>
  %o1 = tensor.extract_slice %acc1[0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x9x9xf32> to tensor<2x3x4x4xf32>
  %g1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dy : tensor<2x3x4x4xf32>) outs(%o1 : tensor<2x3x4x4xf32>) {
  ^bb0(%d: f32, %out: f32):
    %a = arith.addf %out, %d : f32
    linalg.yield %a : f32
  } -> tensor<2x3x4x4xf32>
  %acc2 = tensor.insert_slice %g1 into %acc1[0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x4x4xf32> into tensor<2x3x9x9xf32>
  return %acc2 : tensor<2x3x9x9xf32>
}

// A slice that does not span the first dimension whole (here the second
// update's rows 1..1 of the batch) leaves nothing to split: the chain
// stays as it is. So does a single update.
// CHECK-LABEL: func.func @partial_batch(
// CHECK-NOT: scf.for
// CHECK: return
func.func @partial_batch(%acc: tensor<2x3x9x9xf32>, %dy: tensor<2x3x4x4xf32>,
                         %dy1: tensor<1x3x4x4xf32>) -> tensor<2x3x9x9xf32> {
  %o0 = tensor.extract_slice %acc[0, 0, 0, 0] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x9x9xf32> to tensor<2x3x4x4xf32>
  %g0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dy : tensor<2x3x4x4xf32>) outs(%o0 : tensor<2x3x4x4xf32>) {
  ^bb0(%d: f32, %out: f32):
    %a = arith.addf %out, %d : f32
    linalg.yield %a : f32
  } -> tensor<2x3x4x4xf32>
  %acc1 = tensor.insert_slice %g0 into %acc[0, 0, 0, 0] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x4x4xf32> into tensor<2x3x9x9xf32>
  %o1 = tensor.extract_slice %acc1[1, 0, 1, 1] [1, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x9x9xf32> to tensor<1x3x4x4xf32>
  %g1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dy1 : tensor<1x3x4x4xf32>) outs(%o1 : tensor<1x3x4x4xf32>) {
  ^bb0(%d: f32, %out: f32):
    %a = arith.addf %out, %d : f32
    linalg.yield %a : f32
  } -> tensor<1x3x4x4xf32>
  %acc2 = tensor.insert_slice %g1 into %acc1[1, 0, 1, 1] [1, 3, 4, 4] [1, 1, 2, 2] : tensor<1x3x4x4xf32> into tensor<2x3x9x9xf32>
  return %acc2 : tensor<2x3x9x9xf32>
}
