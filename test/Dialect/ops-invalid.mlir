// RUN: soap-opt %s -split-input-file -verify-diagnostics

func.func @empty_group(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.all_reduce' op the group must list at least one device}}
  %0 = soap.all_reduce sum %x over [] : tensor<8xf32>
  return
}

// -----

module attributes {soap.num_devices = 4} {
func.func @group_out_of_range(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.all_reduce' op device 5 in the group is out of range: the module declares 4 devices}}
  %0 = soap.all_reduce sum %x over [0, 5] : tensor<8xf32>
  return
}
}

// -----

func.func @negative_device(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.all_reduce' op device -1 in the group is out of range}}
  %0 = soap.all_reduce sum %x over [-1, 0] : tensor<8xf32>
  return
}

// -----

func.func @repeated_device(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.all_reduce' op device 1 appears twice in the group}}
  %0 = soap.all_reduce max %x over [0, 1, 1] : tensor<8xf32>
  return
}

// -----

func.func @all_reduce_types(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.all_reduce' op failed to verify that all of {input, result} have same type}}
  %0 = "soap.all_reduce"(%x) <{kind = 0 : i32, group = array<i64: 0, 1>}> : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_gather_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_gather' op dim 2 is out of range for a tensor of rank 2}}
  %0 = soap.all_gather %x dim 2 over [0, 1] : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @all_gather_size(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_gather' op result dimension 0 is 12 but the input's 8 times the group size 2 is 16}}
  %0 = soap.all_gather %x dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<12x4xf32>
  return
}

// -----

func.func @all_gather_other_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_gather' op result dimension 1 is 5 but must equal the input's 4}}
  %0 = soap.all_gather %x dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<16x5xf32>
  return
}

// -----

func.func @all_gather_element(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_gather' op result element type 'f16' differs from the input's 'f32'}}
  %0 = soap.all_gather %x dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<16x4xf16>
  return
}

// -----

func.func @all_gather_rank(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_gather' op result rank 1 differs from the input's 2}}
  %0 = soap.all_gather %x dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<64xf32>
  return
}

// -----

func.func @reduce_scatter_size(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.reduce_scatter' op input dimension 0 is 8 but the result's 2 times the group size 2 is 4}}
  %0 = soap.reduce_scatter sum %x dim 0 over [0, 1] : tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_scatter_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.reduce_scatter' op dim -1 is out of range for a tensor of rank 2}}
  %0 = soap.reduce_scatter sum %x dim -1 over [0, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @all_to_all_split_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_to_all' op split dimension 3 is out of range for a tensor of rank 2}}
  %0 = soap.all_to_all %x split 3 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @all_to_all_concat_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_to_all' op concat dimension 2 is out of range for a tensor of rank 2}}
  %0 = soap.all_to_all %x split 0 concat 2 over [0, 1] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @all_to_all_split_size(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_to_all' op input dimension 0 is 8 but the result's 2 times the group size 2 is 4}}
  %0 = soap.all_to_all %x split 0 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @all_to_all_concat_size(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_to_all' op result dimension 1 is 4 but the input's 4 times the group size 2 is 8}}
  %0 = soap.all_to_all %x split 0 concat 1 over [0, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @all_to_all_same_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'soap.all_to_all' op result dimension 0 is 4 but must equal the input's 8}}
  %0 = soap.all_to_all %x split 0 concat 0 over [0, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @broadcast_root(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.broadcast' op root 5 is not in the group}}
  %0 = soap.broadcast %x root 5 over [0, 1] : tensor<8xf32>
  return
}

// -----

func.func @send_pairs(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.send' op 'from' lists 2 devices and 'to' lists 1; they must pair up}}
  soap.send %x from [0, 1] to [2] : tensor<8xf32>
  return
}

// -----

func.func @send_self(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.send' op device 1 sends to itself}}
  soap.send %x from [0, 1] to [2, 1] : tensor<8xf32>
  return
}

// -----

func.func @send_twice(%x: tensor<8xf32>) {
  // expected-error @+1 {{'soap.send' op device 0 appears twice in 'from'}}
  soap.send %x from [0, 0] to [1, 2] : tensor<8xf32>
  return
}

// -----

func.func @recv_twice() {
  // expected-error @+1 {{'soap.recv' op device 2 appears twice in 'to'}}
  %0 = soap.recv from [0, 1] to [2, 2] : tensor<8xf32>
  return
}

// -----

module attributes {soap.num_devices = 2} {
func.func @recv_range() {
  // expected-error @+1 {{'soap.recv' op device 3 in 'to' is out of range: the module declares 2 devices}}
  %0 = soap.recv from [0] to [3] : tensor<8xf32>
  return
}
}

// -----

func.func @guard_empty() {
  // expected-error @+1 {{'soap.on_devices' op the device set must list at least one device}}
  soap.on_devices [] {
  }
  return
}

// -----

func.func @guard_yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'soap.on_devices' op body yields 1 value(s) of types 'tensor<4xf32>' but the op has result types 'tensor<8xf32>'}}
  %0 = soap.on_devices [0] -> tensor<8xf32> {
    soap.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'soap.yield' op expects parent op 'soap.on_devices'}}
  soap.yield %x : tensor<4xf32>
}
