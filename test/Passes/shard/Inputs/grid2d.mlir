// Rows split along grid axis 0, columns along axis 1 (a 2x2 grid); and a
// matmul split only along axis 0 of the grid on its columns.
shard.grid @g(shape = 2x2)
func.func @f(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %rows = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @g split_axes = [[], [1]] : !shard.sharding
  %cols0 = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %a0 = shard.shard %a to %rows annotate_for_users : tensor<4x6xf32>
  %b1 = shard.shard %b to %cols annotate_for_users : tensor<6x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul ins(%a0, %b1 : tensor<4x6xf32>, tensor<6x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b0 = shard.shard %b to %cols0 annotate_for_users : tensor<6x8xf32>
  %d = linalg.matmul ins(%a, %b0 : tensor<4x6xf32>, tensor<6x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c, %d : tensor<4x8xf32>, tensor<4x8xf32>
}
