// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Ops that compute tensors outside the partitioning interface are reported by
// name and run replicated. Constants (the dense weight) are not reported, nor
// are ops that compute scalars (tensor.dim, the body of tensor.generate).
// The batch still flows through elementwise arith ops on tensors, and the
// dense constant is a parameter.

// CHECK: remark: 'tensor.generate' is not partitionable; it runs replicated{{$}}
// CHECK-NEXT: %pos = tensor.generate
// CHECK: remark: 'arith.addf' is not partitionable; it runs replicated{{$}}
// CHECK-NEXT: %s = arith.addf
// CHECK: remark: dims d0:4:sample d1:8:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
// CHECK: remark: dims d0:4:sample d1:8:attribute flops=0 bytes=128{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// flops = 2 * 4*8*16 = 1024
// bytes = s 4*16*4 (256) + w 16*8*4 (512) + init 4*8*4 (128) + result 128
//       = 1024
// CHECK: remark: dims m:4:sample n:8:parameter k:16:reduction flops=1024 bytes=1024{{$}}
// CHECK-NEXT: %y = linalg.matmul
//
// CHECK: remark: 'tensor.from_elements' is not partitionable; it runs replicated{{$}}
// CHECK-NEXT: %v = tensor.from_elements
// CHECK: remark: 'tensor.cast' is not partitionable; it runs replicated{{$}}
// CHECK-NEXT: %c = tensor.cast
func.func @positional(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %w = arith.constant dense<0.5> : tensor<16x8xf32>
  %rows = tensor.dim %x, %c0 : tensor<4x16xf32>
  %pos = tensor.generate {
  ^bb0(%i: index, %j: index):
    %k = arith.index_cast %j : index to i32
    %f = arith.sitofp %k : i32 to f32
    tensor.yield %f : f32
  } : tensor<4x16xf32>
  %s = arith.addf %x, %pos : tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%s, %w : tensor<4x16xf32>, tensor<16x8xf32>)
                     outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @scales(%a: f32, %b: f32) -> tensor<?xf32> {
  %v = tensor.from_elements %a, %b : tensor<2xf32>
  %c = tensor.cast %v : tensor<2xf32> to tensor<?xf32>
  return %c : tensor<?xf32>
}
