// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A bias broadcast to the batch with linalg.broadcast, then added to the
// activations. The broadcast result is computed only from a parameter, so it
// is a parameter; the batch flows back from the add into its dimension 0,
// which is therefore a sample dimension rather than a parameter one.

// CHECK: remark: dims d0:64:sample d1:256:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
//
// broadcast: bytes = bias 256*4 (1024) + result 64*256*4 (65536) = 66560
// CHECK: remark: dims d0:64:sample d1:256:parameter flops=0 bytes=66560{{$}}
// CHECK-NEXT: %bb = linalg.broadcast
//
// add: flops = 64*256 = 16384; bytes = h 65536 + bb 65536 + result 65536
//      = 196608 (the init is not read)
// CHECK: remark: dims d0:64:sample d1:256:parameter flops=16384 bytes=196608{{$}}
// CHECK-NEXT: %y = linalg.generic
// CHECK-NOT: not partitionable
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @bias(%h: tensor<64x256xf32>,
                %b: tensor<256xf32> {soap.param}) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %bb = linalg.broadcast ins(%b : tensor<256xf32>)
                         outs(%e : tensor<64x256xf32>) dimensions = [0]
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%h, %bb : tensor<64x256xf32>, tensor<64x256xf32>)
         outs(%e : tensor<64x256xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
