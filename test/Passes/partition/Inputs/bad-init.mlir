// A training step (docs/train-step.md) whose loss sums over the batch into
// the parameter itself: an init that is not the identity of a sum.
func.func @train_step(%p: tensor<f32> {soap.role = "param", soap.name = "p"},
                      %x: tensor<4xf32> {soap.role = "input", soap.name = "x"})
    -> (tensor<f32> {soap.role = "loss", soap.name = "loss"},
        tensor<f32> {soap.role = "param", soap.name = "p"}) {
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%p : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s, %p : tensor<f32>, tensor<f32>
}
