// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A residual add followed by a ReLU, fused in one elementwise linalg.generic
// over two activations. The zero constant inside the body is not arithmetic.

// CHECK: remark: dims d0:32:sample d1:128:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %init = tensor.empty
//
// flops = 2 (add, max) * 32*128 = 8192
// bytes = x 32*128*4 (16384) + skip (16384) + result (16384); the init is
// not read by the body. bytes = 49152
// CHECK: remark: dims d0:32:sample d1:128:attribute flops=8192 bytes=49152{{$}}
// CHECK-NEXT: %y = linalg.generic
// CHECK-NOT: not partitionable
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @residual_relu(%x: tensor<32x128xf32>,
                         %skip: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %init = tensor.empty() : tensor<32x128xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%x, %skip : tensor<32x128xf32>, tensor<32x128xf32>)
         outs(%init : tensor<32x128xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}
