// RUN: soap-opt %s -split-input-file -verify-diagnostics --soap-mark-train-step="func=f params=0 loss=1"
// RUN: not soap-opt %s -split-input-file --soap-mark-train-step="func=f params=5 loss=1" 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: argument 5 does not exist (@f has 2)

module {
  // expected-error @+1 {{result 0 has type 'tensor<3xf32>' but the parameter it updates (argument 0) has type 'tensor<2xf32>'}}
  func.func @f(%w: tensor<2xf32>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %x, %c : tensor<3xf32>, tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{@f returns 2 results besides the loss, but 1 parameters are marked}}
  func.func @f(%w: tensor<2xf32>, %x: tensor<3xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c, %c, %c : tensor<f32>, tensor<f32>, tensor<f32>
  }
}

