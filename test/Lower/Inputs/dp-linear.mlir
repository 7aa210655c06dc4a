// Inputs/linear-sgd.mlir as a data-parallel SPMD program, the form
// --soap-partition gives it: @train_step takes the GLOBAL batch (4 rows),
// each rank takes its LOCAL rows at offset soap.rank * LOCAL, computes the
// partial loss and gradient sums of its rows, and soap.all_reduce sums them
// over the NDEV ranks; the replicated parameters are updated alike on every
// rank. NDEV, LOCAL (= 4 / NDEV) and GROUP ([0, ..., NDEV-1]) are
// substituted by the test (sed).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
#id1 = affine_map<(d0) -> (d0)>
module attributes {soap.num_devices = NDEV : i64} {
  func.func @train_step(
      %w: tensor<3x2xf32> {soap.role = "param", soap.name = "fc.weight", soap.init = "fan-in"},
      %b: tensor<2xf32> {soap.role = "param", soap.name = "fc.bias", soap.init = "zeros"},
      %xg: tensor<4x3xf32> {soap.role = "input", soap.name = "input"},
      %yg: tensor<4x2xf32> {soap.role = "label", soap.name = "target"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"},
          tensor<3x2xf32> {soap.role = "param", soap.name = "fc.weight"},
          tensor<2xf32> {soap.role = "param", soap.name = "fc.bias"}) {
    %zero = arith.constant 0.0 : f32
    %lr = arith.constant 0.1 : f32
    %scale = arith.constant 0.25 : f32 // 2 / (4 * 2), global batch
    %inv = arith.constant 0.125 : f32  // 1 / (4 * 2)
    %rank = soap.rank : index
    %local = arith.constant LOCAL : index
    %offset = arith.muli %rank, %local : index
    %x = tensor.extract_slice %xg[%offset, 0] [LOCAL, 3] [1, 1] : tensor<4x3xf32> to tensor<LOCALx3xf32>
    %y = tensor.extract_slice %yg[%offset, 0] [LOCAL, 2] [1, 1] : tensor<4x2xf32> to tensor<LOCALx2xf32>
    %eb = tensor.empty() : tensor<LOCALx2xf32>
    %zb = linalg.fill ins(%zero : f32) outs(%eb : tensor<LOCALx2xf32>) -> tensor<LOCALx2xf32>
    %xw = linalg.matmul ins(%x, %w : tensor<LOCALx3xf32>, tensor<3x2xf32>) outs(%zb : tensor<LOCALx2xf32>) -> tensor<LOCALx2xf32>
    %diff = linalg.generic {indexing_maps = [#id2, #row, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%xw, %b, %y : tensor<LOCALx2xf32>, tensor<2xf32>, tensor<LOCALx2xf32>) outs(%eb : tensor<LOCALx2xf32>) {
    ^bb0(%p: f32, %bb: f32, %t: f32, %o: f32):
      %s = arith.addf %p, %bb : f32
      %d = arith.subf %s, %t : f32
      linalg.yield %d : f32
    } -> tensor<LOCALx2xf32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id2, #all], iterator_types = ["reduction", "reduction"]}
        ins(%diff : tensor<LOCALx2xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%d: f32, %acc: f32):
      %sq = arith.mulf %d, %d : f32
      %a = arith.addf %acc, %sq : f32
      linalg.yield %a : f32
    } -> tensor<f32>
    %partial = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%sum : tensor<f32>) outs(%e0 : tensor<f32>) {
    ^bb0(%s: f32, %o: f32):
      %l = arith.mulf %s, %inv : f32
      linalg.yield %l : f32
    } -> tensor<f32>
    %loss = soap.all_reduce sum %partial over GROUP : tensor<f32>
    %dpred = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%diff : tensor<LOCALx2xf32>) outs(%eb : tensor<LOCALx2xf32>) {
    ^bb0(%d: f32, %o: f32):
      %g = arith.mulf %d, %scale : f32
      linalg.yield %g : f32
    } -> tensor<LOCALx2xf32>
    %e32 = tensor.empty() : tensor<3x2xf32>
    %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
    %dwl = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %dpred : tensor<LOCALx3xf32>, tensor<LOCALx2xf32>) outs(%z32 : tensor<3x2xf32>) -> tensor<3x2xf32>
    %dw = soap.all_reduce sum %dwl over GROUP : tensor<3x2xf32>
    %e2 = tensor.empty() : tensor<2xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %dbl = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["reduction", "parallel"]}
        ins(%dpred : tensor<LOCALx2xf32>) outs(%z2 : tensor<2xf32>) {
    ^bb0(%g: f32, %acc: f32):
      %a = arith.addf %acc, %g : f32
      linalg.yield %a : f32
    } -> tensor<2xf32>
    %db = soap.all_reduce sum %dbl over GROUP : tensor<2xf32>
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
