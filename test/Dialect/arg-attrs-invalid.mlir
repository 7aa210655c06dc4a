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
