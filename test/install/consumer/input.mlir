func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param},
                  %init: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>)
                     outs(%init : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
