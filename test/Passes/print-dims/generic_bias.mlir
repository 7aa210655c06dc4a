// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Adding a bias broadcast along the batch inside a linalg.generic: the bias is
// a parameter indexed by d1, which makes d1 a parameter loop.

// CHECK: remark: dims d0:64:sample d1:256:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %init = tensor.empty
//
// flops = 1 (add) * 64*256 = 16384
// bytes = h 64*256*4 (65536) + bias 256*4 (1024) + result 65536 = 132096
// CHECK: remark: dims d0:64:sample d1:256:parameter flops=16384 bytes=132096{{$}}
// CHECK-NEXT: %y = linalg.generic
// CHECK-NOT: not partitionable
func.func @bias_add(%h: tensor<64x256xf32>,
                    %b: tensor<256xf32> {soap.param}) -> tensor<64x256xf32> {
  %init = tensor.empty() : tensor<64x256xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
         ins(%h, %b : tensor<64x256xf32>, tensor<256xf32>)
         outs(%init : tensor<64x256xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
