// RUN: soap-opt %s -split-input-file -verify-diagnostics

func.func @degree_zero(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{degree 0 of dimension 1 must be at least 1}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [1, 0, 1], devices = []>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @device_count(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{config lists 3 devices but its degrees [2, 2, 1] make 4 tasks}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 2, 1], devices = [0, 1, 2]>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

module attributes {soap.num_devices = 8} {
func.func @device_out_of_range(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{device 9 of task 3 is out of range: the module declares 8 devices}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 2, 1], devices = [0, 1, 2, 9]>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
}

// -----

module attributes {soap.num_devices = 2} {
func.func @negative_device(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{device -1 of task 0 is out of range: the module declares 2 devices}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [-1, 1]>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
}

// -----

func.func @wrong_rank(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{config has 2 degrees but the op has 3 dimensions}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 2], devices = [0, 1, 2, 3]>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @not_dividing(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{degree 3 does not divide dimension 1 ('n') of size 16}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [1, 3, 1], devices = [0, 1, 2]>} ins(%a, %b : tensor<8x12xf32>, tensor<12x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @not_dividing_conv(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %o: tensor<2x4x7x7xf32>) -> tensor<2x4x7x7xf32> {
  // expected-error @+1 {{degree 2 does not divide dimension 2 ('oh') of size 7}}
  %0 = linalg.conv_2d_nchw_fchw {soap.config = #soap.config<degrees = [1, 1, 2, 1, 1, 1, 1], devices = [0, 1]>, dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) outs(%o : tensor<2x4x7x7xf32>) -> tensor<2x4x7x7xf32>
  return %0 : tensor<2x4x7x7xf32>
}

// -----

func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8x8xf32>, %c: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{degree 2 cannot split dimension 0 ('m') of dynamic size}}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} ins(%a, %b : tensor<?x8xf32>, tensor<8x8xf32>) outs(%c : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @dynamic_degree_one(%a: tensor<?x8xf32>, %b: tensor<8x8xf32>, %c: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // A dynamic dimension left whole is fine.
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>} ins(%a, %b : tensor<?x8xf32>, tensor<8x8xf32>) outs(%c : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @callee(%a: tensor<8xf32>) -> tensor<8xf32> {
  return %a : tensor<8xf32>
}
func.func @not_partitionable(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'func.call' cannot carry a #soap.config: it is not partitionable}}
  %0 = func.call @callee(%a) {soap.config = #soap.config<degrees = [2], devices = [0, 1]>} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @dynamic_reshape(%a: tensor<4x?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{cannot carry a #soap.config: a reshape with a dynamic inner dimension}}
  %0 = tensor.collapse_shape %a [[0, 1]] {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} : tensor<4x?xf32> into tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @not_a_config(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'soap.config' must be a #soap.config attribute}}
  %0 = tensor.empty() {soap.config = 3} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{'soap.num_devices' must be a positive integer}}
module attributes {soap.num_devices = 0} {
}

// -----

// expected-error @+1 {{'soap.num_devices' must be a positive integer}}
module attributes {soap.num_devices = "four"} {
}

// -----

func.func @unknown_attr() -> tensor<8xf32> {
  // expected-error @+1 {{unknown SOAP attribute 'soap.degree'}}
  %0 = tensor.empty() {soap.degree = 2} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @bad_syntax() -> tensor<8xf32> {
  // expected-error @+1 {{expected 'degrees'}}
  %0 = tensor.empty() {soap.config = #soap.config<degree = [2], devices = [0, 1]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// An op that is invalid on its own is named by its own verifier, not
// crashed on by the checks of its #soap.config (MLIR verifies dialect
// attributes before the op itself).
func.func @invalid_transpose(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'linalg.transpose' op permutation is not valid}}
  %0 = linalg.transpose {soap.config = #soap.config<degrees = [1, 1], devices = [0]>} ins(%a : tensor<4x8xf32>) outs(%b : tensor<8x4xf32>) permutation = [1, 1]
  return %0 : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @generic_with_too_few_maps(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'linalg.generic' op expected the number of indexing_map (1) to be equal to the number of input/output operands (2)}}
  %0 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"], soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} ins(%a : tensor<4x8xf32>) outs(%b : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @invalid_collapse(%a: tensor<4x8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'tensor.collapse_shape' op}}
  %0 = tensor.collapse_shape %a [[0, 1]] {soap.config = #soap.config<degrees = [1], devices = [0]>} : tensor<4x8xf32> into tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @invalid_reduce(%a: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'linalg.reduce' op}}
  %0 = linalg.reduce ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) dimensions = [2] {soap.config = #soap.config<degrees = [1, 1], devices = [0]>}
    (%x: f32, %y: f32) {
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
  return %0 : tensor<4xf32>
}

// -----

func.func @replicated_with_config(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'soap.replicated' must be a unit attribute on an op without a #soap.config}}
  %0 = linalg.matmul {soap.replicated, soap.config = #soap.config<degrees = [1, 1, 1], devices = [0]>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @replicated_not_unit(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'soap.replicated' must be a unit attribute on an op without a #soap.config}}
  %0 = linalg.matmul {soap.replicated = 1 : i64} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @transposed_config_not_conv(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'soap.transposed_config' must be a #soap.config over the forward's loops on a linalg.conv_2d_nchw_fchw (7 degrees) or a linalg.generic (one per loop)}}
  %0 = linalg.matmul {soap.transposed_config = #soap.config<degrees = [1, 1, 1], devices = [0]>} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
