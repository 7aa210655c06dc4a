// A small convolution net with the data movement of SqueezeNet's fire
// modules: a padded max pool, a padded 3x3 branch beside a 1x1 branch,
// their concatenation, a global sum pool and a classifier.
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#chan = affine_map<(n, c, h, w) -> (c)>
#pool = affine_map<(n, c, h, w) -> (n, c)>
func.func @forward(%x: tensor<8x3x32x32xf32>,
                   %w1: tensor<16x3x3x3xf32> {soap.param, soap.init = "fan-in:27"},
                   %b1: tensor<16xf32> {soap.param, soap.init = "zeros"},
                   %wa: tensor<16x16x1x1xf32> {soap.param, soap.init = "fan-in:16"},
                   %wb: tensor<16x16x3x3xf32> {soap.param, soap.init = "fan-in:144"},
                   %wc: tensor<32x4xf32> {soap.param, soap.init = "fan-in:32"}) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<8x16x30x30xf32>
  %bias = linalg.generic {indexing_maps = [#chan, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b1 : tensor<16xf32>) outs(%e1 : tensor<8x16x30x30xf32>) {
  ^bb0(%b: f32, %o: f32):
    linalg.yield %b : f32
  } -> tensor<8x16x30x30xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w1 : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) outs(%bias : tensor<8x16x30x30xf32>) -> tensor<8x16x30x30xf32>
  %r1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<8x16x30x30xf32>) outs(%e1 : tensor<8x16x30x30xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16x30x30xf32>
  %p1 = tensor.pad %r1 low[0, 0, 0, 0] high[0, 0, 2, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x16x30x30xf32> to tensor<8x16x32x32xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<8x16x16x16xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %mp = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%p1, %win : tensor<8x16x32x32xf32>, tensor<2x2xf32>) outs(%f2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %ca = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%mp, %wa : tensor<8x16x16x16xf32>, tensor<16x16x1x1xf32>) outs(%z2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %ra = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ca : tensor<8x16x16x16xf32>) outs(%e2 : tensor<8x16x16x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16x16x16xf32>
  %pb = tensor.pad %mp low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x16x16x16xf32> to tensor<8x16x18x18xf32>
  %cb = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%pb, %wb : tensor<8x16x18x18xf32>, tensor<16x16x3x3xf32>) outs(%z2 : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %rb = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%cb : tensor<8x16x16x16xf32>) outs(%e2 : tensor<8x16x16x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16x16x16xf32>
  %cat = tensor.concat dim(1) %ra, %rb : (tensor<8x16x16x16xf32>, tensor<8x16x16x16xf32>) -> tensor<8x32x16x16xf32>
  %e3 = tensor.empty() : tensor<8x32xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #pool], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%cat : tensor<8x32x16x16xf32>) outs(%z3 : tensor<8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %e4 = tensor.empty() : tensor<8x4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %logits = linalg.matmul ins(%sum, %wc : tensor<8x32xf32>, tensor<32x4xf32>) outs(%z4 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %logits : tensor<8x4xf32>
}
