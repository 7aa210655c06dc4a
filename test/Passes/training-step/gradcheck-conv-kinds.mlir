// Gradients of every convolution and pooling layout linalg has agree with
// central finite differences: depthwise (NCHW/CHW, NHWC/HWC, with a channel
// multiplier), NHWC/HWCF, NHWC/FHWC, grouped, 1-D and 3-D convolutions,
// with strides, dilations and uneven windows, and NHWC max/sum pooling.
// The input gradient of a window read is a transposed convolution (the
// adjoint spread by the stride, read through the flipped filter); max and
// min route the adjoint to the window elements equal to the result.
// RUN: soap-gradcheck %s --func=depthwise_nchw --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=depthwise_nhwc_multiplier --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=conv_nhwc_hwcf --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=conv_nhwc_fhwc --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=conv_grouped --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=conv_1d --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=conv_3d --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=pool_nhwc_max --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=pool_nhwc_sum --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=generic_window_offset --loss=mse | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: all {{[0-9]+}} parameters ok

func.func @depthwise_nchw(%x: tensor<2x3x9x10xf32> {soap.param, soap.name = "x"},
                          %w: tensor<3x3x2xf32> {soap.param, soap.name = "w"}) -> tensor<2x3x3x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x3x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x3x5xf32>) -> tensor<2x3x3x5xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[2, 2]> : tensor<2xi64>}
      ins(%x, %w : tensor<2x3x9x10xf32>, tensor<3x3x2xf32>) outs(%i : tensor<2x3x3x5xf32>) -> tensor<2x3x3x5xf32>
  return %r : tensor<2x3x3x5xf32>
}

func.func @depthwise_nhwc_multiplier(%x: tensor<2x7x7x3xf32> {soap.param, soap.name = "x"},
                                     %w: tensor<3x3x3x2xf32> {soap.param, soap.name = "w"}) -> tensor<2x3x3x3x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x3x3x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x3x3x2xf32>) -> tensor<2x3x3x3x2xf32>
  %r = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x7x7x3xf32>, tensor<3x3x3x2xf32>) outs(%i : tensor<2x3x3x3x2xf32>) -> tensor<2x3x3x3x2xf32>
  return %r : tensor<2x3x3x3x2xf32>
}

func.func @conv_nhwc_hwcf(%x: tensor<2x8x8x3xf32> {soap.param, soap.name = "x"},
                          %w: tensor<3x2x3x4xf32> {soap.param, soap.name = "w"}) -> tensor<2x2x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2x3x4xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[2, 3]> : tensor<2xi64>}
      ins(%x, %w : tensor<2x8x8x3xf32>, tensor<3x2x3x4xf32>) outs(%i : tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %r : tensor<2x2x3x4xf32>
}

func.func @conv_nhwc_fhwc(%x: tensor<2x6x6x3xf32> {soap.param, soap.name = "x"},
                          %w: tensor<4x3x3x3xf32> {soap.param, soap.name = "w"}) -> tensor<2x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x4xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x6x6x3xf32>, tensor<4x3x3x3xf32>) outs(%i : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return %r : tensor<2x4x4x4xf32>
}

// Two groups of 2 input and 3 output channels each.
func.func @conv_grouped(%x: tensor<2x2x2x7x7xf32> {soap.param, soap.name = "x"},
                        %w: tensor<2x3x2x3x3xf32> {soap.param, soap.name = "w"}) -> tensor<2x2x3x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2x3x3x3xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x3x3x3xf32>) -> tensor<2x2x3x3x3xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x2x2x7x7xf32>, tensor<2x3x2x3x3xf32>) outs(%i : tensor<2x2x3x3x3xf32>) -> tensor<2x2x3x3x3xf32>
  return %r : tensor<2x2x3x3x3xf32>
}

func.func @conv_1d(%x: tensor<2x11x3xf32> {soap.param, soap.name = "x"},
                   %w: tensor<3x3x4xf32> {soap.param, soap.name = "w"}) -> tensor<2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %r = linalg.conv_1d_nwc_wcf {dilations = dense<2> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
      ins(%x, %w : tensor<2x11x3xf32>, tensor<3x3x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %r : tensor<2x4x4xf32>
}

func.func @conv_3d(%x: tensor<1x2x5x5x5xf32> {soap.param, soap.name = "x"},
                   %w: tensor<3x2x2x3x2xf32> {soap.param, soap.name = "w"}) -> tensor<1x3x2x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x2x3x4xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x2x3x4xf32>) -> tensor<1x3x2x3x4xf32>
  %r = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : tensor<3xi64>, strides = dense<[2, 1, 1]> : tensor<3xi64>}
      ins(%x, %w : tensor<1x2x5x5x5xf32>, tensor<3x2x2x3x2xf32>) outs(%i : tensor<1x3x2x3x4xf32>) -> tensor<1x3x2x3x4xf32>
  return %r : tensor<1x3x2x3x4xf32>
}

// NHWC max pooling (3x3, stride 2; the input is a product so that ties
// are unlikely) and sum pooling (2x2, stride 1).
func.func @pool_nhwc_max(%x: tensor<2x7x7x3xf32> {soap.param, soap.name = "x"}) -> tensor<2x3x3x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %window = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x3x3x3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %max = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %window : tensor<2x7x7x3xf32>, tensor<3x3xf32>) outs(%m0 : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  return %max : tensor<2x3x3x3xf32>
}

func.func @pool_nhwc_sum(%x: tensor<2x7x7x3xf32> {soap.param, soap.name = "x"}) -> tensor<2x6x6x3xf32> {
  %zero = arith.constant 0.0 : f32
  %window = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<2x6x6x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x6x3xf32>) -> tensor<2x6x6x3xf32>
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %window : tensor<2x7x7x3xf32>, tensor<2x2xf32>) outs(%s0 : tensor<2x6x6x3xf32>) -> tensor<2x6x6x3xf32>
  return %sum : tensor<2x6x6x3xf32>
}

// A window with a constant offset (x[2*o + k + 1]) and a body that is not a
// plain product (out - tanh(x) * w).
func.func @generic_window_offset(%x: tensor<2x12xf32> {soap.param, soap.name = "x"},
                                 %w: tensor<3xf32> {soap.param, soap.name = "w"}) -> tensor<2x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x5xf32>) -> tensor<2x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, o, k) -> (n, 2 * o + k + 1)>,
                                        affine_map<(n, o, k) -> (k)>,
                                        affine_map<(n, o, k) -> (n, o)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x12xf32>, tensor<3xf32>) outs(%i : tensor<2x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %b : f32
    %s = arith.subf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x5xf32>
  return %r : tensor<2x5xf32>
}
