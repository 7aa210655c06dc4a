// A scaled ReLU (its scale a parameter, so that the gradient flows
// through the padding), a padding split along the channels on devices 1, 0 and a max
// pooling split along the batch on devices 0, 1 (as a random strategy put
// squeezenet1_1's first pooling), then a classifier. The pooling's input
// gradient reaches the padding's backward as a re-split from the batch to
// the channels in another device order, which no all_to_all fits.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @forward(%scale: tensor<4xf32> {soap.param, soap.name = "scale"},
                   %fc: tensor<64x10xf32> {soap.param, soap.name = "fc.weight"},
                   %x: tensor<4x4x7x7xf32> {soap.name = "input"}) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4x4x7x7xf32>
  %r = linalg.generic {indexing_maps = [#map, #chan, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %scale : tensor<4x4x7x7xf32>, tensor<4xf32>) outs(%e0 : tensor<4x4x7x7xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    %gt = arith.cmpf ugt, %s, %zero : f32
    %y = arith.select %gt, %s, %zero : f32
    linalg.yield %y : f32
  } -> tensor<4x4x7x7xf32>
  %padded = tensor.pad %r low[0, 0, 0, 0] high[0, 0, 3, 3] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<4x4x7x7xf32> to tensor<4x4x10x10xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  %e1 = tensor.empty() : tensor<4x4x4x4xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4x4x4x4xf32>) -> tensor<4x4x4x4xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%padded, %window : tensor<4x4x10x10xf32>, tensor<3x3xf32>) outs(%f1 : tensor<4x4x4x4xf32>) -> tensor<4x4x4x4xf32>
  %flat = tensor.collapse_shape %p [[0], [1, 2, 3]] : tensor<4x4x4x4xf32> into tensor<4x64xf32>
  %e2 = tensor.empty() : tensor<4x10xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x10xf32>) -> tensor<4x10xf32>
  %logits = linalg.matmul ins(%flat, %fc : tensor<4x64xf32>, tensor<64x10xf32>) outs(%f2 : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %logits : tensor<4x10xf32>
}
