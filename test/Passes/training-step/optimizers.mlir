// One @train_step from random parameters and optimizer state follows each
// optimizer's update formula (docs/training-step.md), computed again in
// C++ from the checked gradients; the step's loss is the forward loss.
// RUN: soap-gradcheck %s --loss=softmax-xent --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=SGD
// RUN: soap-gradcheck %s --loss=softmax-xent --optimizer=sgd --lr=0.1 --weight-decay=0.01 | FileCheck %s --check-prefix=SGD
// RUN: soap-gradcheck %s --loss=softmax-xent --optimizer=momentum --lr=0.05 --weight-decay=0.01 | FileCheck %s --check-prefix=MOMENTUM
// RUN: soap-gradcheck %s --loss=softmax-xent --optimizer=adam --lr=0.001 --weight-decay=0.01 | FileCheck %s --check-prefix=ADAM

// SGD: all 2 parameters ok
// SGD: train_step sgd: max rel error {{.*}} ok
// MOMENTUM: train_step momentum: max rel error {{.*}} ok
// ADAM: train_step adam: max rel error {{.*}} ok

func.func @forward(%w: tensor<4x3xf32> {soap.param, soap.name = "w"},
                   %b: tensor<3xf32> {soap.param, soap.name = "b", soap.init = "zeros"},
                   %x: tensor<5x4xf32> {soap.name = "x"}) -> tensor<5x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<5x4xf32>, tensor<4x3xf32>) outs(%f : tensor<5x3xf32>) -> tensor<5x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<5x3xf32>, tensor<3xf32>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%y: f32, %c: f32, %o: f32):
    %s = arith.addf %y, %c : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}
