// A strided convolution's gradients (the input's: a unit-stride
// convolution of the spread adjoint; the filter's: a convolution of the
// transposed input with the transposed adjoint) run as the forward
// convolution's #soap.config says, its loops reordered: the input
// gradient's loops are (n, c, h, w, f, kh, kw), the filter gradient's
// (c, f, kh, kw, n, oh, ow), whose split batch is a reduction (partial
// filter gradients that the parameter's sync adds). So the partitioned
// backward pass runs where the simulator prices it, not where the adjoint
// happens to be. A split of the output's rows or columns: the filter
// gradient's loops are the forward's renamed, so it gets the config too
// (each task reads the input rows, with their halo, and the adjoint rows
// its forward task read and wrote; its split loop is a reduction); the
// input gradient's rows are another loop (its tasks would read the adjoint
// with halos), so it carries the forward's config as
// soap.transposed_config instead, with which the partitioner runs each
// forward task's part of it (test/Passes/partition/conv-row-gradient.test).
// RUN: soap-opt %s --split-input-file --soap-training-step="loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, soap.config = #soap.config<degrees = [2, 2, 1, 1, 1, 1, 1], devices = [0, 2, 1, 3]>, strides = dense<2> : vector<2xi64>}
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, soap.config = #soap.config<degrees = [2, 1, 1, 1, 2, 1, 1], devices = [0, 2, 1, 3]>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: -> tensor<4x3x9x9xf32>
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, soap.config = #soap.config<degrees = [1, 2, 1, 1, 2, 1, 1], devices = [0, 1, 2, 3]>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: -> tensor<3x2x3x3xf32>
#image = affine_map<(n, c, h, w) -> (n, c, h, w)>
#channel = affine_map<(n, c, h, w) -> (c)>
module attributes {soap.num_devices = 4 : i64} {
func.func @f(%x0: tensor<4x3x9x9xf32>, %w: tensor<2x3x3x3xf32> {soap.param},
             %s: tensor<3xf32> {soap.param}) -> tensor<4x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x3x9x9xf32>
  %x = linalg.generic {indexing_maps = [#image, #channel, #image],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
         ins(%x0, %s : tensor<4x3x9x9xf32>, tensor<3xf32>) outs(%ex : tensor<4x3x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x3x9x9xf32>
  %e = tensor.empty() : tensor<4x2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>,
                                 soap.config = #soap.config<degrees = [2, 2, 1, 1, 1, 1, 1], devices = [0, 2, 1, 3]>}
         ins(%x, %w : tensor<4x3x9x9xf32>, tensor<2x3x3x3xf32>)
         outs(%z : tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  return %y : tensor<4x2x4x4xf32>
}
}

// -----

// CHECK-LABEL: func.func @train_step
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, soap.config = #soap.config<degrees = [1, 1, 2, 1, 1, 1, 1], devices = [0, 1]>, strides = dense<2> : vector<2xi64>}
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, soap.transposed_config = #soap.config<degrees = [1, 1, 2, 1, 1, 1, 1], devices = [0, 1]>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: -> tensor<4x3x9x9xf32>
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, soap.config = #soap.config<degrees = [1, 1, 1, 1, 1, 2, 1], devices = [0, 1]>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: -> tensor<3x2x3x3xf32>
#image = affine_map<(n, c, h, w) -> (n, c, h, w)>
#channel = affine_map<(n, c, h, w) -> (c)>
module attributes {soap.num_devices = 2 : i64} {
func.func @f(%x0: tensor<4x3x9x9xf32>, %w: tensor<2x3x3x3xf32> {soap.param},
             %s: tensor<3xf32> {soap.param}) -> tensor<4x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x3x9x9xf32>
  %x = linalg.generic {indexing_maps = [#image, #channel, #image],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
         ins(%x0, %s : tensor<4x3x9x9xf32>, tensor<3xf32>) outs(%ex : tensor<4x3x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x3x9x9xf32>
  %e = tensor.empty() : tensor<4x2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 2, 1, 1, 1, 1], devices = [0, 1]>}
         ins(%x, %w : tensor<4x3x9x9xf32>, tensor<2x3x3x3xf32>)
         outs(%z : tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  return %y : tensor<4x2x4x4xf32>
}
}
