// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A convolution with a bias, as torch-mlir emits it: the bias is broadcast
// into the output shape, and that broadcast is the convolution's init, which
// the convolution accumulates into. Only the output-channel loop indexes a
// parameter (the bias and the filter); the output height and width stay
// attributes, exactly as they are for the same convolution with a zero-filled
// init (conv_2d_nchw_fchw.mlir) and as they are in the broadcast itself.

// CHECK: remark: dims d0:2:sample d1:8:attribute d2:14:attribute d3:14:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
//
// bias broadcast: bytes = read bias 8*4 (32) + write 2*8*14*14*4 (12544)
//                 = 12576
// CHECK: remark: dims d0:2:sample d1:8:parameter d2:14:attribute d3:14:attribute flops=0 bytes=12576{{$}}
// CHECK-NEXT: %bias = linalg.generic
//
// flops = 2 * n*f*oh*ow*c*kh*kw = 2 * 2*8*14*14*3*3*3 = 169344
// bytes = x 2*3*16*16*4 (6144) + w 8*3*3*3*4 (864) + init read 12544
//       + result 12544 = 32096
// CHECK: remark: dims n:2:sample f:8:parameter oh:14:attribute ow:14:attribute c:3:reduction kh:3:reduction kw:3:reduction flops=169344 bytes=32096{{$}}
// CHECK-NEXT: %y = linalg.conv_2d_nchw_fchw
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_bias(%x: tensor<2x3x16x16xf32>,
                     %w: tensor<8x3x3x3xf32> {soap.param},
                     %b: tensor<8xf32> {soap.param}) -> tensor<2x8x14x14xf32> {
  %e = tensor.empty() : tensor<2x8x14x14xf32>
  %bias = linalg.generic {indexing_maps = [#chan, #id],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
            ins(%b : tensor<8xf32>) outs(%e : tensor<2x8x14x14xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x8x14x14xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>)
         outs(%bias : tensor<2x8x14x14xf32>) -> tensor<2x8x14x14xf32>
  return %y : tensor<2x8x14x14xf32>
}
