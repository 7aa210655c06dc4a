// 2-D convolutions in layouts other than NCHW/FCHW, as libsoaprt's
// convolution takes them through strides: an NHWC/HWCF convolution with
// strides and dilations, and the weight gradient the autodiff writes for an
// NCHW convolution (a convolution of transposed tensors, transposed), whose
// transposes the lowering folds into the convolution. The "loss" weighs
// every output element by its position, so a wrong layout changes it.
#w4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#s4 = affine_map<(d0, d1, d2, d3) -> ()>
module {
  func.func @train_step(
      %x: tensor<2x11x10x3xf32> {soap.role = "input", soap.name = "x"},
      %w: tensor<3x2x3x4xf32> {soap.role = "input", soap.name = "w"},
      %img: tensor<3x2x9x9xf32> {soap.role = "input", soap.name = "img"},
      %dy: tensor<3x5x4x4xf32> {soap.role = "input", soap.name = "dy"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
    %zero = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<2x5x8x4xf32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x5x8x4xf32>) -> tensor<2x5x8x4xf32>
    %nhwc = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%x, %w : tensor<2x11x10x3xf32>, tensor<3x2x3x4xf32>) outs(%z0 : tensor<2x5x8x4xf32>) -> tensor<2x5x8x4xf32>
    // dW[f,c,kh,kw] = sum_{n,oh,ow} img[n,c,2*oh+kh,2*ow+kw] dy[n,f,oh,ow]
    // (stride 2, 3x3 window): conv(img^T, dy^T) with stride 1, dilation 2.
    %ue = tensor.empty() : tensor<2x3x9x9xf32>
    %imgT = linalg.transpose ins(%img : tensor<3x2x9x9xf32>) outs(%ue : tensor<2x3x9x9xf32>) permutation = [1, 0, 2, 3]
    %de = tensor.empty() : tensor<5x3x4x4xf32>
    %dyT = linalg.transpose ins(%dy : tensor<3x5x4x4xf32>) outs(%de : tensor<5x3x4x4xf32>) permutation = [1, 0, 2, 3]
    %e1 = tensor.empty() : tensor<2x5x3x3xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x5x3x3xf32>) -> tensor<2x5x3x3xf32>
    %g = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%imgT, %dyT : tensor<2x3x9x9xf32>, tensor<5x3x4x4xf32>) outs(%z1 : tensor<2x5x3x3xf32>) -> tensor<2x5x3x3xf32>
    %ge = tensor.empty() : tensor<5x2x3x3xf32>
    %dw = linalg.transpose ins(%g : tensor<2x5x3x3xf32>) outs(%ge : tensor<5x2x3x3xf32>) permutation = [1, 0, 2, 3]
    %a0e = tensor.empty() : tensor<f32>
    %a0 = linalg.fill ins(%zero : f32) outs(%a0e : tensor<f32>) -> tensor<f32>
    %r0 = linalg.generic {indexing_maps = [#w4, #s4], iterator_types = ["reduction", "reduction", "reduction", "reduction"]} ins(%nhwc : tensor<2x5x8x4xf32>) outs(%a0 : tensor<f32>) {
    ^bb0(%v: f32, %s: f32):
      %i0 = linalg.index 0 : index
      %i1 = linalg.index 1 : index
      %i2 = linalg.index 2 : index
      %i3 = linalg.index 3 : index
      %k = affine.apply affine_map<(a, b, c, d) -> (a * 1000 + b * 100 + c * 10 + d)>(%i0, %i1, %i2, %i3)
      %ki = arith.index_cast %k : index to i32
      %kf = arith.sitofp %ki : i32 to f32
      %c = arith.constant 0.001 : f32
      %one = arith.constant 1.0 : f32
      %wk = arith.mulf %kf, %c : f32
      %wt = arith.addf %wk, %one : f32
      %p = arith.mulf %v, %wt : f32
      %n = arith.addf %s, %p : f32
      linalg.yield %n : f32
    } -> tensor<f32>
    %r1 = linalg.generic {indexing_maps = [#w4, #s4], iterator_types = ["reduction", "reduction", "reduction", "reduction"]} ins(%dw : tensor<5x2x3x3xf32>) outs(%r0 : tensor<f32>) {
    ^bb0(%v: f32, %s: f32):
      %i0 = linalg.index 0 : index
      %i1 = linalg.index 1 : index
      %i2 = linalg.index 2 : index
      %i3 = linalg.index 3 : index
      %k = affine.apply affine_map<(a, b, c, d) -> (a * 1000 + b * 100 + c * 10 + d)>(%i0, %i1, %i2, %i3)
      %ki = arith.index_cast %k : index to i32
      %kf = arith.sitofp %ki : i32 to f32
      %c = arith.constant 0.001 : f32
      %one = arith.constant 1.0 : f32
      %wk = arith.mulf %kf, %c : f32
      %wt = arith.addf %wk, %one : f32
      %p = arith.mulf %v, %wt : f32
      %n = arith.addf %s, %p : f32
      linalg.yield %n : f32
    } -> tensor<f32>
    return %r1 : tensor<f32>
  }
}
