// Data-movement ops of the tensor dialect follow their #soap.config as the
// simulator prices it (one communication plan): each task's block of the
// result comes from the region its loops read, moved there by the steps
// lib/layout plans. A slice split along the columns it takes gathers its
// rows; a concatenation split along its dimension takes each device's input
// (the other input is outside its block: the simulator's task reads none of
// it); a reshape reshapes each device's contiguous block.
// RUN: soap-opt %s --soap-partition | FileCheck %s
// RUN: soap-opt %s --soap-simulate="machine=p100-4x4 devices=2 training=false func=train_step communication=%t.json" -o /dev/null 2>/dev/null
// RUN: soap-opt %s --soap-partition -o %t.p.mlir
// RUN: %python %S/Inputs/compare_comm.py %t.p.mlir %t.json | FileCheck %s --check-prefix=SAME
// SAME: OK: 5 communication steps equal

#map = affine_map<(d0, d1) -> (d0, d1)>
module attributes {soap.num_devices = 2 : i64} {
  // CHECK-LABEL: func.func @train_step
  func.func @train_step(%x: tensor<4x32xf32> {soap.role = "input"})
      -> (tensor<f32> {soap.role = "loss"}) {
    // CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x32xf32>)
    %e = tensor.empty() : tensor<4x32xf32>
    %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
    ^bb0(%in: f32, %out: f32):
      %r = math.tanh %in : f32
      linalg.yield %r : f32
    } -> tensor<4x32xf32>
    // The rows are gathered once; both slices take their columns from the
    // copy.
    // CHECK: %[[ROWS:.*]] = soap.all_gather %{{.*}} dim 0 over [0, 1] : tensor<2x32xf32> -> tensor<4x32xf32>
    // CHECK: tensor.extract_slice %[[ROWS]][0, %{{.*}}] [4, 4] [1, 1] : tensor<4x32xf32> to tensor<4x4xf32>
    // CHECK: tensor.extract_slice %[[ROWS]][0, %{{.*}}] [4, 4] [1, 1] : tensor<4x32xf32> to tensor<4x4xf32>
    // CHECK-NOT: soap.all_gather
    %s0 = tensor.extract_slice %t[0, 0] [4, 8] [1, 1] {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} : tensor<4x32xf32> to tensor<4x8xf32>
    %s1 = tensor.extract_slice %t[0, 8] [4, 8] [1, 1] {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} : tensor<4x32xf32> to tensor<4x8xf32>
    // Device 0's block is %s0, device 1's %s1: each receives the half it
    // lacks and picks its own.
    // CHECK: soap.send %{{.*}} from [1] to [0] tag 1 : tensor<4x4xf32>
    // CHECK: soap.send %{{.*}} from [0] to [1] tag 2 : tensor<4x4xf32>
    // CHECK: %[[MINE:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf32>
    %c = tensor.concat dim(1) %s0, %s1 {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
    // CHECK: %[[BLOCK:.*]] = soap.all_to_all %[[MINE]] split 0 concat 1 over [0, 1] : tensor<4x8xf32> -> tensor<2x16xf32>
    // CHECK: tensor.expand_shape %[[BLOCK]] {{\[\[}}0, 1], [2]] output_shape [1, 2, 16] : tensor<2x16xf32> into tensor<1x2x16xf32>
    %x3 = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 2, 16] {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} : tensor<4x16xf32> into tensor<2x2x16xf32>
    %z = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<f32>
    %f = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]} ins(%x3 : tensor<2x2x16xf32>) outs(%f : tensor<f32>) attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    // CHECK: soap.all_reduce sum
    return %sum : tensor<f32>
  }
}
