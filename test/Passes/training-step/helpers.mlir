// A JAX-style module: the model calls helper functions and a printing
// @main calls the model. The model is the function nobody but @main calls
// (or the one with {soap.param} arguments); the passes inline its calls.
// RUN: soap-opt %s --soap-set-batch=8 | FileCheck %s --check-prefix=BATCH
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s --check-prefix=STEP
// RUN: soap-gradcheck %s --loss=mse | FileCheck %s --check-prefix=GRAD

// BATCH-LABEL: func.func @net(
// BATCH-SAME: tensor<8x3xf32>) -> tensor<8x3xf32>
// BATCH-NOT: call @
// BATCH: return
// BATCH-LABEL: func.func private @scaled_relu(
// BATCH-SAME: tensor<1x3xf32>
// The printing @main repeats its sample over the batch and prints the
// first sample of the result.
// BATCH-LABEL: func.func @main(
// BATCH: %[[REPEATED:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x3xf32>)
// BATCH: %[[Y:.*]] = call @net(%{{.*}}, %[[REPEATED]]) : (tensor<3x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
// BATCH: tensor.extract_slice %[[Y]][0, 0] [1, 3] [1, 1] : tensor<8x3xf32> to tensor<1x3xf32>

// STEP-LABEL: func.func @train_step(
// STEP-NOT: call
// STEP: return

// GRAD-NOT: FAIL
// GRAD: ok

#all = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @printMemrefF32(tensor<*xf32>)

  func.func @net(%w: tensor<3x3xf32> {soap.param}, %x: tensor<1x3xf32>) -> tensor<1x3xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x3xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3xf32>) -> tensor<1x3xf32>
    %y = linalg.matmul ins(%x, %w : tensor<1x3xf32>, tensor<3x3xf32>) outs(%f : tensor<1x3xf32>) -> tensor<1x3xf32>
    %z = func.call @scaled_relu(%y) : (tensor<1x3xf32>) -> tensor<1x3xf32>
    return %z : tensor<1x3xf32>
  }

  func.func private @scaled_relu(%x: tensor<1x3xf32>) -> tensor<1x3xf32> {
    %r = func.call @relu(%x) : (tensor<1x3xf32>) -> tensor<1x3xf32>
    %scale = arith.constant dense<1.5> : tensor<1x3xf32>
    %e = tensor.empty() : tensor<1x3xf32>
    %y = linalg.mul ins(%r, %scale : tensor<1x3xf32>, tensor<1x3xf32>) outs(%e : tensor<1x3xf32>) -> tensor<1x3xf32>
    return %y : tensor<1x3xf32>
  }

  func.func private @relu(%x: tensor<1x3xf32>) -> tensor<1x3xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x3xf32>
    %y = linalg.generic {indexing_maps = [#all, #all], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x3xf32>) outs(%e : tensor<1x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    } -> tensor<1x3xf32>
    return %y : tensor<1x3xf32>
  }

  func.func @main() {
    %w = arith.constant dense<0.5> : tensor<3x3xf32>
    %x = arith.constant dense<1.0> : tensor<1x3xf32>
    %y = func.call @net(%w, %x) : (tensor<3x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
    %u = tensor.cast %y : tensor<1x3xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
    return
  }
}
