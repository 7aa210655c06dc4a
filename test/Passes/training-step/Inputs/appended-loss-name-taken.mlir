// A model with callers whose copy's name, @forward.output, is taken.
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<0.5> : tensor<4x3xf32>
  %y = call @forward(%w, %x) : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
func.func @"forward.output"() {
  return
}
func.func @forward(%w: tensor<4x3xf32> {soap.param, soap.name = "w"}, %x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
