// RUN: soap-opt %s -split-input-file -verify-diagnostics

func.func @split_zero() -> tensor<8x8xf32> {
  // expected-error @+1 {{split 0 of dimension 1 must be at least 1}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [1, 0], devices = []>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @replicas_zero() -> tensor<8x8xf32> {
  // expected-error @+1 {{replicas must be at least 1, got 0}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [1, 1], replicas = 0, devices = []>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @partial_mean() -> tensor<8x8xf32> {
  // expected-error @+1 {{partial state 'mean' is not allowed; use sum, max or min}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [1, 1], replicas = 2, partial = mean, devices = [0, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @partial_unknown() -> tensor<8x8xf32> {
  // expected-error @+1 {{unknown partial state 'avg'; expected sum, max or min}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [1, 1], replicas = 2, partial = avg, devices = [0, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @partial_one_replica() -> tensor<8x8xf32> {
  // expected-error @+1 {{a partial 'sum' layout needs at least 2 replicas to combine}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], partial = sum, devices = [0, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @device_count() -> tensor<8x8xf32> {
  // expected-error @+1 {{layout lists 3 devices but split [2, 1] with 1 replica needs 2}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], devices = [0, 1, 2]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @device_count_replicas() -> tensor<8x8xf32> {
  // expected-error @+1 {{layout lists 2 devices but split [2, 1] with 2 replicas needs 4}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], replicas = 2, devices = [0, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @negative_device() -> tensor<8x8xf32> {
  // expected-error @+1 {{device -1 in the layout is negative}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], devices = [-1, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @repeated_device() -> tensor<8x8xf32> {
  // expected-error @+1 {{device 1 appears twice in the layout}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], devices = [1, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

module attributes {soap.num_devices = 8} {
func.func @out_of_range() -> tensor<8x8xf32> {
  // expected-error @+1 {{layout device 9 is out of range: the module declares 8 devices}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], devices = [0, 9]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
}

// -----

func.func @rank_mismatch() -> tensor<8x8xf32> {
  // expected-error @+1 {{layout splits 1 dimensions but the result has rank 2}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2], devices = [0, 1]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @not_dividing() -> tensor<8x8xf32> {
  // expected-error @+1 {{split 3 does not divide dimension 0 of size 8}}
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [3, 1], devices = [0, 1, 2]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @not_a_tensor() -> index {
  // expected-error @+1 {{a #soap.layout needs a ranked tensor result}}
  %0 = arith.constant {soap.layout = #soap.layout<split = [], devices = [0]>} 0 : index
  return %0 : index
}

// -----

func.func @not_a_layout() -> tensor<8xf32> {
  // expected-error @+1 {{'soap.layout' must be a #soap.layout attribute}}
  %0 = tensor.empty() {soap.layout = [1, 2]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
