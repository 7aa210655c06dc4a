// A convolution, a ReLU and a 3x3 stride-2 max pooling, as torch-mlir
// writes them (the pooling's output starts at -inf): the pooling's input
// gradient, 4x16x64x64 f32 (1 MiB), is what the autodiff updates once per
// window offset.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @forward(%x: tensor<4x3x66x66xf32>) -> tensor<4x16x31x31xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<16x3x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x16x64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16x64x64xf32>) -> tensor<4x16x64x64xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<4x3x66x66xf32>, tensor<16x3x3x3xf32>) outs(%z : tensor<4x16x64x64xf32>) -> tensor<4x16x64x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<4x16x64x64xf32>) outs(%e : tensor<4x16x64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x16x64x64xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pe = tensor.empty() : tensor<4x16x31x31xf32>
  %p0 = linalg.fill ins(%ninf : f32) outs(%pe : tensor<4x16x31x31xf32>) -> tensor<4x16x31x31xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r, %win : tensor<4x16x64x64xf32>, tensor<3x3xf32>) outs(%p0 : tensor<4x16x31x31xf32>) -> tensor<4x16x31x31xf32>
  return %p : tensor<4x16x31x31xf32>
}
