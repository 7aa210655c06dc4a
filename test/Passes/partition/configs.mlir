// RUN: soap-opt %s --soap-partition 2>&1 | FileCheck %s

// How configs become local ops on 2 devices, checked on the IR (the MPI
// tests check the numbers).
module attributes {soap.num_devices = 2 : i64} {
  // CHECK-LABEL: func.func @train_step
  func.func @train_step(%a: tensor<4x6xf32> {soap.role = "input"},
                        %b: tensor<6x8xf32> {soap.role = "input"})
      -> (tensor<4x8xf32> {soap.role = "loss"}, tensor<4x8xf32>, tensor<4x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    // CHECK: %[[RANK:.*]] = soap.rank : index

    // A reduction split: each device contracts its 3 of the 6 columns of
    // %a and rows of %b, and holds partial sums, which an all_reduce adds
    // where the whole product is needed (the results).
    // CHECK: %[[K:.*]] = tensor.extract %{{.*}}[%[[RANK]]] : tensor<2xi64>
    // CHECK: tensor.extract_slice %arg0[0, %{{.*}}] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
    // CHECK: tensor.extract_slice %arg1[%{{.*}}, 0] [3, 8] [1, 1] : tensor<6x8xf32> to tensor<3x8xf32>
    // CHECK: %[[PART:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
    %r = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 1]>}
        ins(%a, %b : tensor<4x6xf32>, tensor<6x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>

    // Two tasks on device 1 (a split of the rows), none on device 0: two
    // slots, each guarded; the 2 rows each slot computes come from the
    // whole sum.
    // CHECK: %[[SUM:.*]] = soap.all_reduce sum %[[PART]] over [0, 1] : tensor<4x8xf32>
    // CHECK: %[[S0:.*]] = soap.on_devices [1] -> tensor<2x8xf32> {
    // CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x8xf32>) outs(%{{.*}} : tensor<2x8xf32>)
    // CHECK: soap.yield
    // CHECK: %[[S1:.*]] = soap.on_devices [1] -> tensor<2x8xf32> {
    // CHECK: soap.yield
    %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%r : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
        attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 1]>} {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>

    // The results are whole on every device: device 0 receives the two
    // slots from device 1 (point to point: only what it lacks moves, no
    // zero-padded whole copy is summed), device 1 puts its own together.
    // CHECK: soap.send %[[S0]] from [1] to [0] tag [[TAG0:[0-9]+]] : tensor<2x8xf32>
    // CHECK: %[[R0:.*]] = soap.recv from [1] to [0] tag [[TAG0]] : tensor<2x8xf32>
    // CHECK: tensor.insert_slice %[[R0]] into %{{.*}}[0, 0] [2, 8] [1, 1]
    // CHECK: soap.send %[[S1]] from [1] to [0] tag [[TAG1:[0-9]+]] : tensor<2x8xf32>
    // CHECK: %[[R1:.*]] = soap.recv from [1] to [0] tag [[TAG1]] : tensor<2x8xf32>
    // CHECK: tensor.insert_slice %[[R1]] into %{{.*}}[%{{.*}}, 0] [2, 8] [1, 1]
    // CHECK: tensor.insert_slice %[[S0]] into %{{.*}}[0, 0] [2, 8] [1, 1]
    // CHECK: tensor.insert_slice %[[S1]] into %{{.*}}[%{{.*}}, 0] [2, 8] [1, 1]
    // CHECK: %[[T:.*]] = arith.select
    // CHECK-NOT: soap.all_reduce
    // CHECK: return %[[SUM]], %[[SUM]], %[[T]]
    return %r, %r, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}
