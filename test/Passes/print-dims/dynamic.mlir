// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A classifier with a dynamic batch size: dynamic sizes print as `?`, and the
// cost of an op with a dynamic loop is not computed.

// CHECK: remark: dims d0:?:sample d1:10:attribute (cost unknown: dynamic sizes){{$}}
// CHECK-NEXT: %e = tensor.empty
// CHECK: remark: dims d0:?:sample d1:10:attribute (cost unknown: dynamic sizes){{$}}
// CHECK-NEXT: %acc = linalg.fill
// CHECK: remark: dims m:?:sample n:10:parameter k:784:reduction (cost unknown: dynamic sizes){{$}}
// CHECK-NEXT: %y = linalg.matmul
//
// A dynamic batch is fine for a reshape as long as it is the outer size of
// its group ...
// CHECK: remark: dims d0:?:sample d1:28:attribute d2:28:attribute (cost unknown: dynamic sizes){{$}}
// CHECK-NEXT: %img = tensor.expand_shape
//
// ... but a dynamic inner size leaves the reshape without a linear index.
// CHECK: remark: 'tensor.expand_shape' is not partitionable (a reshape with a dynamic inner dimension); it runs replicated{{$}}
// CHECK-NEXT: %tok = tensor.expand_shape
// CHECK: remark: 'tensor.collapse_shape' is not partitionable (a reshape with a dynamic inner dimension); it runs replicated{{$}}
// CHECK-NEXT: %flat = tensor.collapse_shape
//
// A slice with a dynamic stride is not partitionable either; a dynamic
// offset is.
// CHECK: remark: 'tensor.extract_slice' is not partitionable (a slice with a dynamic stride); it runs replicated{{$}}
// CHECK-NEXT: %s1 = tensor.extract_slice
// CHECK: remark: dims d0:?:sample d1:16:attribute (cost unknown: dynamic sizes){{$}}
// CHECK-NEXT: %s2 = tensor.extract_slice
// CHECK-NOT: remark
func.func @classify(%x: tensor<?x784xf32>,
                    %w: tensor<784x10xf32> {soap.param}) -> tensor<?x10xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x784xf32>
  %e = tensor.empty(%n) : tensor<?x10xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<?x10xf32>) -> tensor<?x10xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x784xf32>, tensor<784x10xf32>)
                     outs(%acc : tensor<?x10xf32>) -> tensor<?x10xf32>
  return %y : tensor<?x10xf32>
}

func.func @reshapes(%x: tensor<?x784xf32>, %t: tensor<?x64xf32>, %len: index)
    -> (tensor<?x28x28xf32>, tensor<4x?x64xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x784xf32>
  %img = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 28, 28]
           : tensor<?x784xf32> into tensor<?x28x28xf32>
  %tok = tensor.expand_shape %t [[0, 1], [2]] output_shape [4, %len, 64]
           : tensor<?x64xf32> into tensor<4x?x64xf32>
  %flat = tensor.collapse_shape %tok [[0, 1, 2]]
            : tensor<4x?x64xf32> into tensor<?xf32>
  return %img, %tok, %flat : tensor<?x28x28xf32>, tensor<4x?x64xf32>, tensor<?xf32>
}

func.func @slices(%x: tensor<?x64xf32>, %step: index, %off: index)
    -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %s1 = tensor.extract_slice %x[0, 0] [%n, 16] [1, %step]
          : tensor<?x64xf32> to tensor<?x16xf32>
  %s2 = tensor.extract_slice %x[0, %off] [%n, 16] [1, 1]
          : tensor<?x64xf32> to tensor<?x16xf32>
  return %s1, %s2 : tensor<?x16xf32>, tensor<?x16xf32>
}
