// Not a valid module: soap-profile reports the parse error.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = linalg.matmul ins(%x :
}
