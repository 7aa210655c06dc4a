// RUN: soap-opt %s | FileCheck %s
// RUN: soap-opt %s | soap-opt | FileCheck %s
// RUN: soap-opt %s --mlir-print-op-generic | soap-opt | FileCheck %s

module attributes {soap.num_devices = 4 : i64} {

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<8x4xf32>, %y: tensor<4x8xf32>) {
  // CHECK: soap.all_reduce sum %{{.*}} over [0, 1, 2, 3] : tensor<8x4xf32>
  %0 = soap.all_reduce sum %x over [0, 1, 2, 3] : tensor<8x4xf32>
  // CHECK: soap.all_reduce max %{{.*}} over [0, 1] : tensor<8x4xf32>
  %1 = soap.all_reduce max %x over [0, 1] : tensor<8x4xf32>
  // CHECK: soap.all_reduce min %{{.*}} over [2, 3] : tensor<8x4xf32>
  %2 = soap.all_reduce min %x over [2, 3] : tensor<8x4xf32>
  // CHECK: soap.all_reduce mean %{{.*}} over [3, 1] : tensor<8x4xf32>
  %3 = soap.all_reduce mean %x over [3, 1] : tensor<8x4xf32>
  // CHECK: soap.all_gather %{{.*}} dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<16x4xf32>
  %4 = soap.all_gather %x dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<16x4xf32>
  // CHECK: soap.all_gather %{{.*}} dim 1 over [0, 1, 2, 3] : tensor<8x4xf32> -> tensor<8x16xf32>
  %5 = soap.all_gather %x dim 1 over [0, 1, 2, 3] : tensor<8x4xf32> -> tensor<8x16xf32>
  // CHECK: soap.reduce_scatter sum %{{.*}} dim 0 over [0, 1, 2, 3] : tensor<8x4xf32> -> tensor<2x4xf32>
  %6 = soap.reduce_scatter sum %x dim 0 over [0, 1, 2, 3] : tensor<8x4xf32> -> tensor<2x4xf32>
  // CHECK: soap.all_to_all %{{.*}} split 0 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<4x8xf32>
  %7 = soap.all_to_all %x split 0 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<4x8xf32>
  // CHECK: soap.broadcast %{{.*}} root 2 over [0, 1, 2] : tensor<4x8xf32>
  %8 = soap.broadcast %y root 2 over [0, 1, 2] : tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @point_to_point
func.func @point_to_point(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK: soap.send %{{.*}} from [0, 1] to [2, 3] : tensor<8x4xf32>
  soap.send %x from [0, 1] to [2, 3] : tensor<8x4xf32>
  // CHECK: soap.recv from [0, 1] to [2, 3] : tensor<8x4xf32>
  %0 = soap.recv from [0, 1] to [2, 3] : tensor<8x4xf32>
  // CHECK: soap.send %{{.*}} from [1] to [0] tag 7 : tensor<8x4xf32>
  soap.send %0 from [1] to [0] tag 7 : tensor<8x4xf32>
  // CHECK: soap.recv from [1] to [0] tag 7 : tensor<8x4xf32>
  %1 = soap.recv from [1] to [0] tag 7 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @guard
func.func @guard(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: %[[RANK:.*]] = soap.rank : index
  %r = soap.rank : index
  // CHECK: %[[R:.*]] = soap.on_devices [0, 1] -> tensor<4xf32> {
  // CHECK:   %[[E:.*]] = tensor.empty() : tensor<4xf32>
  // CHECK:   soap.yield %[[E]] : tensor<4xf32>
  // CHECK: }
  %0 = soap.on_devices [0, 1] -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    soap.yield %e : tensor<4xf32>
  }
  // A guard with no results needs no explicit terminator.
  // CHECK: soap.on_devices [2, 3] {
  // CHECK-NEXT: soap.send
  // CHECK-NEXT: }
  soap.on_devices [2, 3] {
    soap.send %x from [2] to [3] : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
}
