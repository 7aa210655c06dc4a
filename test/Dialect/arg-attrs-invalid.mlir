// RUN: soap-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'soap.param' is a unit attribute and takes no value}}
func.func @param_value(%w: tensor<4xf32> {soap.param = 1}) {
  return
}

// -----

// expected-error @+1 {{'soap.batch_dim' must be an integer}}
func.func @batch_dim_type(%x: tensor<4x4xf32> {soap.batch_dim = "rows"}) {
  return
}

// -----

// expected-error @+1 {{'soap.batch_dim' on argument 0 needs a ranked tensor argument}}
func.func @batch_dim_scalar(%x: f32 {soap.batch_dim = 0}) {
  return
}

// -----

// expected-error @+1 {{'soap.batch_dim' 2 of argument 0 is out of range for rank 2}}
func.func @batch_dim_range(%x: tensor<4x4xf32> {soap.batch_dim = 2}) {
  return
}

// -----

// expected-error @+1 {{unknown SOAP argument attribute 'soap.params'}}
func.func @unknown(%x: tensor<4x4xf32> {soap.params}) {
  return
}

// -----

// expected-error @+1 {{'soap.name' on argument 0 must be a non-empty string}}
func.func @name_empty(%x: tensor<4xf32> {soap.name = ""}) {
  return
}

// -----

// expected-error @+1 {{'soap.role' on argument 0 must be one of "param", "opt_state", "input", "label", "loss"}}
func.func @role_unknown(%x: tensor<4xf32> {soap.role = "weights"}) {
  return
}

// -----

// expected-error @+1 {{'soap.init' on argument 0 must be "zeros", "ones", "fan-in", "fan-in:N" (N > 0) or initial values, not "fan-in:0"}}
func.func @init_fan_in_zero(%x: tensor<4xf32> {soap.init = "fan-in:0"}) {
  return
}

// -----

// expected-error @+1 {{'soap.init' on argument 0 has initial values of type 'tensor<3xf32>' but the argument is 'tensor<4xf32>'}}
func.func @init_values_shape(%x: tensor<4xf32> {soap.init = dense<1.0> : tensor<3xf32>}) {
  return
}

// -----

// expected-error @+1 {{'soap.range' on argument 0 needs an integer tensor, not 'tensor<4xf32>'}}
func.func @range_float(%x: tensor<4xf32> {soap.range = 10}) {
  return
}

// -----

// expected-error @+1 {{'soap.range' on argument 0 must be a positive integer}}
func.func @range_zero(%x: tensor<4xi64> {soap.range = 0}) {
  return
}

// -----

// expected-error @+1 {{'soap.role' on result 0 must be one of "param", "opt_state", "input", "label", "loss"}}
func.func @result_role(%x: tensor<f32>) -> (tensor<f32> {soap.role = "output"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{unknown SOAP result attribute 'soap.init'}}
func.func @result_init(%x: tensor<f32>) -> (tensor<f32> {soap.init = "zeros"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'soap.shard' on argument 0 must be {global_shape = array<i64: ...>, offsets = array<i64: ...>}}}
func.func @shard_form(%w: tensor<2x4xf32> {soap.shard = {global_shape = [4, 4]}}) {
  return
}

// -----

// expected-error @+1 {{'soap.shard' on argument 0: the shard at offset 3 of dimension 0 does not fit in 4}}
func.func @shard_fit(%w: tensor<2x4xf32> {soap.shard = {global_shape = array<i64: 4, 4>, offsets = array<i64: 0, 0, 3, 0>}}) {
  return
}

// -----

// expected-error @+1 {{'soap.shard' on result 0: global_shape has 1 dimensions but the value has 2}}
func.func @shard_rank(%w: tensor<2x4xf32>) -> (tensor<2x4xf32> {soap.shard = {global_shape = array<i64: 4>, offsets = array<i64: 0, 2>}}) {
  return %w : tensor<2x4xf32>
}
