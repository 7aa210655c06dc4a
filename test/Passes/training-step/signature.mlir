// @train_step's signature and attributes follow docs/train-step.md:
// parameters, optimizer state, inputs, labels; results the loss, then the
// parameters and the state in argument order, tagged like the arguments.
// RUN: soap-opt %s --soap-training-step | FileCheck %s --check-prefix=SGD
// RUN: soap-opt %s --soap-training-step="optimizer=momentum" | FileCheck %s --check-prefix=MOMENTUM
// RUN: soap-opt %s --soap-training-step="optimizer=adam lr=0.001" | FileCheck %s --check-prefix=ADAM

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

// The loss function stays.
// SGD-LABEL: func.func @loss(
// SGD-SAME: soap.param
func.func @loss(%w: tensor<4x3xf32> {soap.param, soap.name = "fc.weight", soap.init = "fan-in"},
                %b: tensor<3xf32> {soap.param, soap.name = "fc.bias", soap.init = "zeros"},
                %x: tensor<2x4xf32> {soap.name = "input"},
                %labels: tensor<2x3xf32> {soap.name = "labels"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = tensor.empty() : tensor<f32>
  %sf = linalg.fill ins(%zero : f32) outs(%s : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #col, #id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%mm, %b, %labels : tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) outs(%sf : tensor<f32>) {
  ^bb0(%y: f32, %bias: f32, %t: f32, %o: f32):
    %z = arith.addf %y, %bias : f32
    %d = arith.subf %z, %t : f32
    %sq = arith.mulf %d, %d : f32
    %a = arith.addf %o, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// SGD-LABEL: func.func @train_step(
// SGD-SAME: %{{.*}}: tensor<4x3xf32> {soap.init = "fan-in", soap.name = "fc.weight", soap.role = "param"},
// SGD-SAME: %{{.*}}: tensor<3xf32> {soap.init = "zeros", soap.name = "fc.bias", soap.role = "param"},
// SGD-SAME: %{{.*}}: tensor<2x4xf32> {soap.name = "input", soap.role = "input"},
// SGD-SAME: %{{.*}}: tensor<2x3xf32> {soap.name = "labels", soap.role = "label"})
// SGD-SAME: -> (tensor<f32> {soap.name = "loss", soap.role = "loss"},
// SGD-SAME: tensor<4x3xf32> {soap.name = "fc.weight", soap.role = "param"},
// SGD-SAME: tensor<3xf32> {soap.name = "fc.bias", soap.role = "param"})
// The gradient of the matmul is a matmul.
// SGD: linalg.matmul
// SGD: linalg.matmul
// SGD: return

// MOMENTUM-LABEL: func.func @train_step(
// MOMENTUM-SAME: soap.role = "param"
// MOMENTUM-SAME: soap.role = "param"
// MOMENTUM-SAME: %{{.*}}: tensor<4x3xf32> {soap.init = "zeros", soap.name = "fc.weight.velocity", soap.role = "opt_state"},
// MOMENTUM-SAME: %{{.*}}: tensor<3xf32> {soap.init = "zeros", soap.name = "fc.bias.velocity", soap.role = "opt_state"},
// MOMENTUM-SAME: soap.role = "input"
// MOMENTUM-SAME: soap.role = "label"
// MOMENTUM-SAME: -> (tensor<f32> {soap.name = "loss", soap.role = "loss"},
// MOMENTUM-SAME: {soap.name = "fc.weight", soap.role = "param"},
// MOMENTUM-SAME: {soap.name = "fc.bias", soap.role = "param"},
// MOMENTUM-SAME: tensor<4x3xf32> {soap.name = "fc.weight.velocity", soap.role = "opt_state"},
// MOMENTUM-SAME: tensor<3xf32> {soap.name = "fc.bias.velocity", soap.role = "opt_state"})

// ADAM-LABEL: func.func @train_step(
// ADAM-SAME: soap.role = "param"
// ADAM-SAME: soap.role = "param"
// ADAM-SAME: {soap.init = "zeros", soap.name = "fc.weight.m", soap.role = "opt_state"},
// ADAM-SAME: {soap.init = "zeros", soap.name = "fc.weight.v", soap.role = "opt_state"},
// ADAM-SAME: {soap.init = "zeros", soap.name = "fc.bias.m", soap.role = "opt_state"},
// ADAM-SAME: {soap.init = "zeros", soap.name = "fc.bias.v", soap.role = "opt_state"},
// ADAM-SAME: %{{.*}}: tensor<f32> {soap.init = "zeros", soap.name = "adam.step", soap.role = "opt_state"},
// ADAM-SAME: soap.role = "input"
// ADAM-SAME: soap.role = "label"
// ADAM-SAME: -> (tensor<f32> {soap.name = "loss", soap.role = "loss"},
// ADAM-SAME: {soap.name = "fc.bias.v", soap.role = "opt_state"},
// ADAM-SAME: tensor<f32> {soap.name = "adam.step", soap.role = "opt_state"})
// ADAM: math.powf
// ADAM: math.sqrt
