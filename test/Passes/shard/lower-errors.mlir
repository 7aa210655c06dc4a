// RUN: soap-opt %s --soap-lower-shard -split-input-file -verify-diagnostics

shard.grid @g(shape = 2)
func.func @shift(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{soap-lower-shard: 'shard.shift' cannot run on SOAP's runtime yet}}
  %y = shard.shift %x on @g grid_axes = [0] shift_axis = 0 offset = 1 rotate : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @product(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{soap-lower-shard: only sum, max and min all_reduce without a type change run on SOAP's runtime}}
  %y = shard.all_reduce %x on @g grid_axes = [0] reduction = product : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @g(shape = ?)
// expected-error @-1 {{soap-lower-shard: the grid needs a static shape}}
func.func @dynamic(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
