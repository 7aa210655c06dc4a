// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A small CNN on CIFAR-sized images (batch 8, NCHW):
//   pad + conv 3x3 (3 -> 16) + ReLU + 2x2 max pool
//   conv 3x3 (16 -> 32) + ReLU + global average pool (sum, then * 1/196)
//   flatten + linear (32 -> 10) + bias.
// Every op's remark is checked, in order. Pooling windows only carry a shape:
// the pooling body never reads them, so they move no bytes.

// pad 8x3x32x32 -> 8x3x34x34: read 8*3*32*32*4 (98304) + write 8*3*34*34*4
// (110976) = 209280
// CHECK: remark: dims d0:8:sample d1:3:attribute d2:34:attribute d3:34:attribute flops=0 bytes=209280{{$}}
// CHECK-NEXT: %xp = tensor.pad
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:32:attribute d3:32:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e1 = tensor.empty
// fill: 8*16*32*32*4 = 524288
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:32:attribute d3:32:attribute flops=0 bytes=524288{{$}}
// CHECK-NEXT: %f1 = linalg.fill
// conv1: flops = 2 * 8*16*32*32*3*3*3 = 7077888
// bytes = input 8*3*34*34*4 (110976) + w1 16*3*3*3*4 (1728) + init 524288
//       + result 524288 = 1161280
// CHECK: remark: dims n:8:sample f:16:parameter oh:32:attribute ow:32:attribute c:3:reduction kh:3:reduction kw:3:reduction flops=7077888 bytes=1161280{{$}}
// CHECK-NEXT: %c1 = linalg.conv_2d_nchw_fchw
// ReLU: flops = 8*16*32*32 = 131072; bytes = 524288 read + 524288 written
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:32:attribute d3:32:attribute flops=131072 bytes=1048576{{$}}
// CHECK-NEXT: %r1 = linalg.generic
//
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:16:attribute d3:16:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e2 = tensor.empty
// fill: 8*16*16*16*4 = 131072
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:16:attribute d3:16:attribute flops=0 bytes=131072{{$}}
// CHECK-NEXT: %f2 = linalg.fill
// CHECK: remark: dims d0:2:attribute d1:2:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %win = tensor.empty
// max pool 2x2 stride 2: flops = 8*16*16*16*2*2 = 131072
// bytes = input 8*16*32*32*4 (524288) + init 131072 + result 131072 = 786432
// CHECK: remark: dims n:8:sample c:16:attribute oh:16:attribute ow:16:attribute kh:2:reduction kw:2:reduction flops=131072 bytes=786432{{$}}
// CHECK-NEXT: %p1 = linalg.pooling_nchw_max
//
// CHECK: remark: dims d0:8:sample d1:32:attribute d2:14:attribute d3:14:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e3 = tensor.empty
// fill: 8*32*14*14*4 = 200704
// CHECK: remark: dims d0:8:sample d1:32:attribute d2:14:attribute d3:14:attribute flops=0 bytes=200704{{$}}
// CHECK-NEXT: %f3 = linalg.fill
// conv2 (16x16 -> 14x14): flops = 2 * 8*32*14*14*16*3*3 = 14450688
// bytes = input 8*16*16*16*4 (131072) + w2 32*16*3*3*4 (18432) + init 200704
//       + result 200704 = 550912
// CHECK: remark: dims n:8:sample f:32:parameter oh:14:attribute ow:14:attribute c:16:reduction kh:3:reduction kw:3:reduction flops=14450688 bytes=550912{{$}}
// CHECK-NEXT: %c2 = linalg.conv_2d_nchw_fchw
// ReLU: flops = 8*32*14*14 = 50176; bytes = 2 * 200704 = 401408
// CHECK: remark: dims d0:8:sample d1:32:attribute d2:14:attribute d3:14:attribute flops=50176 bytes=401408{{$}}
// CHECK-NEXT: %r2 = linalg.generic
//
// CHECK: remark: dims d0:8:sample d1:32:attribute d2:1:attribute d3:1:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e4 = tensor.empty
// fill: 8*32*4 = 1024
// CHECK: remark: dims d0:8:sample d1:32:attribute d2:1:attribute d3:1:attribute flops=0 bytes=1024{{$}}
// CHECK-NEXT: %f4 = linalg.fill
// CHECK: remark: dims d0:14:attribute d1:14:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %gwin = tensor.empty
// global sum pool 14x14: flops = 8*32*14*14 = 50176
// bytes = input 200704 + init 1024 + result 1024 = 202752
// CHECK: remark: dims n:8:sample c:32:attribute oh:1:attribute ow:1:attribute kh:14:reduction kw:14:reduction flops=50176 bytes=202752{{$}}
// CHECK-NEXT: %gap = linalg.pooling_nchw_sum
// flatten: a view
// CHECK: remark: dims d0:8:sample d1:32:attribute d2:1:attribute d3:1:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %flat = tensor.collapse_shape
// CHECK: remark: dims d0:8:sample d1:32:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e5 = tensor.empty
// * 1/196: flops = 8*32 = 256; bytes = 1024 + 1024 = 2048
// CHECK: remark: dims d0:8:sample d1:32:attribute flops=256 bytes=2048{{$}}
// CHECK-NEXT: %avg = linalg.generic
//
// CHECK: remark: dims d0:8:sample d1:10:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e6 = tensor.empty
// fill: 8*10*4 = 320
// CHECK: remark: dims d0:8:sample d1:10:attribute flops=0 bytes=320{{$}}
// CHECK-NEXT: %f6 = linalg.fill
// linear: flops = 2 * 8*10*32 = 5120
// bytes = avg 1024 + wl 32*10*4 (1280) + init 320 + result 320 = 2944
// CHECK: remark: dims m:8:sample n:10:parameter k:32:reduction flops=5120 bytes=2944{{$}}
// CHECK-NEXT: %fc = linalg.matmul
// bias: flops = 80; bytes = 320 + bl 40 + 320 = 680
// CHECK: remark: dims d0:8:sample d1:10:parameter flops=80 bytes=680{{$}}
// CHECK-NEXT: %logits = linalg.generic
// CHECK-NOT: not partitionable
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @cnn(%x: tensor<8x3x32x32xf32>,
               %w1: tensor<16x3x3x3xf32> {soap.param},
               %w2: tensor<32x16x3x3xf32> {soap.param},
               %wl: tensor<32x10xf32> {soap.param},
               %bl: tensor<10xf32> {soap.param}) -> tensor<8x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv = arith.constant 0.00510204081 : f32

  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x3x32x32xf32> to tensor<8x3x34x34xf32>
  %e1 = tensor.empty() : tensor<8x16x32x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                  strides = dense<1> : tensor<2xi64>}
          ins(%xp, %w1 : tensor<8x3x34x34xf32>, tensor<16x3x3x3xf32>)
          outs(%f1 : tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id4, #id4],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%c1 : tensor<8x16x32x32xf32>) outs(%e1 : tensor<8x16x32x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32x32xf32>

  %e2 = tensor.empty() : tensor<8x16x16x16xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p1 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}
          ins(%r1, %win : tensor<8x16x32x32xf32>, tensor<2x2xf32>)
          outs(%f2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>

  %e3 = tensor.empty() : tensor<8x32x14x14xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x32x14x14xf32>) -> tensor<8x32x14x14xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                  strides = dense<1> : tensor<2xi64>}
          ins(%p1, %w2 : tensor<8x16x16x16xf32>, tensor<32x16x3x3xf32>)
          outs(%f3 : tensor<8x32x14x14xf32>) -> tensor<8x32x14x14xf32>
  %r2 = linalg.generic {indexing_maps = [#id4, #id4],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%c2 : tensor<8x32x14x14xf32>) outs(%e3 : tensor<8x32x14x14xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32x14x14xf32>

  %e4 = tensor.empty() : tensor<8x32x1x1xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<8x32x1x1xf32>) -> tensor<8x32x1x1xf32>
  %gwin = tensor.empty() : tensor<14x14xf32>
  %gap = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>,
                                  strides = dense<1> : tensor<2xi64>}
           ins(%r2, %gwin : tensor<8x32x14x14xf32>, tensor<14x14xf32>)
           outs(%f4 : tensor<8x32x1x1xf32>) -> tensor<8x32x1x1xf32>
  %flat = tensor.collapse_shape %gap [[0], [1, 2, 3]]
            : tensor<8x32x1x1xf32> into tensor<8x32xf32>
  %e5 = tensor.empty() : tensor<8x32xf32>
  %avg = linalg.generic {indexing_maps = [#id2, #id2],
                         iterator_types = ["parallel", "parallel"]}
           ins(%flat : tensor<8x32xf32>) outs(%e5 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %inv : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>

  %e6 = tensor.empty() : tensor<8x10xf32>
  %f6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %fc = linalg.matmul ins(%avg, %wl : tensor<8x32xf32>, tensor<32x10xf32>)
                      outs(%f6 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %logits = linalg.generic {indexing_maps = [#id2, #row, #id2],
                            iterator_types = ["parallel", "parallel"]}
              ins(%fc, %bl : tensor<8x10xf32>, tensor<10xf32>)
              outs(%e6 : tensor<8x10xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x10xf32>
  return %logits : tensor<8x10xf32>
}
