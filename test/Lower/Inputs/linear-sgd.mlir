// A linear model trained by SGD (lr = 0.1) on the mean squared error,
// written by hand after docs/train-step.md:
//   pred = x W + b, loss = mean((pred - y)^2),
//   dW = x^T dpred (a matmul with a transposed operand), db = sum_rows dpred.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
#id1 = affine_map<(d0) -> (d0)>
module {
  func.func @train_step(
      %w: tensor<3x2xf32> {soap.role = "param", soap.name = "fc.weight", soap.init = "fan-in"},
      %b: tensor<2xf32> {soap.role = "param", soap.name = "fc.bias", soap.init = "zeros"},
      %x: tensor<4x3xf32> {soap.role = "input", soap.name = "input"},
      %y: tensor<4x2xf32> {soap.role = "label", soap.name = "target"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"},
          tensor<3x2xf32> {soap.role = "param", soap.name = "fc.weight"},
          tensor<2xf32> {soap.role = "param", soap.name = "fc.bias"}) {
    %zero = arith.constant 0.0 : f32
    %lr = arith.constant 0.1 : f32
    %scale = arith.constant 0.25 : f32 // 2 / (4 * 2)
    %inv = arith.constant 0.125 : f32  // 1 / (4 * 2)
    %e42 = tensor.empty() : tensor<4x2xf32>
    %z42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
    %xw = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%z42 : tensor<4x2xf32>) -> tensor<4x2xf32>
    // diff = xw + b - y
    %diff = linalg.generic {indexing_maps = [#id2, #row, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%xw, %b, %y : tensor<4x2xf32>, tensor<2xf32>, tensor<4x2xf32>) outs(%e42 : tensor<4x2xf32>) {
    ^bb0(%p: f32, %bb: f32, %t: f32, %o: f32):
      %s = arith.addf %p, %bb : f32
      %d = arith.subf %s, %t : f32
      linalg.yield %d : f32
    } -> tensor<4x2xf32>
    // loss = sum(diff^2) / 8
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id2, #all], iterator_types = ["reduction", "reduction"]}
        ins(%diff : tensor<4x2xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%d: f32, %acc: f32):
      %sq = arith.mulf %d, %d : f32
      %a = arith.addf %acc, %sq : f32
      linalg.yield %a : f32
    } -> tensor<f32>
    %loss = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%sum : tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%s: f32, %o: f32):
      %l = arith.mulf %s, %inv : f32
      linalg.yield %l : f32
    } -> tensor<f32>
    // dpred = diff / 4
    %dpred = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%diff : tensor<4x2xf32>) outs(%e42 : tensor<4x2xf32>) {
    ^bb0(%d: f32, %o: f32):
      %g = arith.mulf %d, %scale : f32
      linalg.yield %g : f32
    } -> tensor<4x2xf32>
    // dW = x^T dpred
    %e32 = tensor.empty() : tensor<3x2xf32>
    %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
    %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %dpred : tensor<4x3xf32>, tensor<4x2xf32>) outs(%z32 : tensor<3x2xf32>) -> tensor<3x2xf32>
    // db = sum over rows of dpred
    %e2 = tensor.empty() : tensor<2xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %db = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["reduction", "parallel"]}
        ins(%dpred : tensor<4x2xf32>) outs(%z2 : tensor<2xf32>) {
    ^bb0(%g: f32, %acc: f32):
      %a = arith.addf %acc, %g : f32
      linalg.yield %a : f32
    } -> tensor<2xf32>
    %nw = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%w, %dw : tensor<3x2xf32>, tensor<3x2xf32>) outs(%e32 : tensor<3x2xf32>) {
    ^bb0(%p: f32, %g: f32, %o: f32):
      %s = arith.mulf %g, %lr : f32
      %n = arith.subf %p, %s : f32
      linalg.yield %n : f32
    } -> tensor<3x2xf32>
    %nb = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
        ins(%b, %db : tensor<2xf32>, tensor<2xf32>) outs(%e2 : tensor<2xf32>) {
    ^bb0(%p: f32, %g: f32, %o: f32):
      %s = arith.mulf %g, %lr : f32
      %n = arith.subf %p, %s : f32
      linalg.yield %n : f32
    } -> tensor<2xf32>
    return %loss, %nw, %nb : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
  }
}
