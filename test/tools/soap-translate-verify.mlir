// soap-translate reads programs with SOAP ops and attributes, and rejects
// malformed ones with the verifier's message.
// RUN: not soap-translate --soap-verify %s --split-input-file 2> %t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// CHECK: soap.all_reduce sum %{{.*}} over [0, 1]
module attributes {soap.num_devices = 2} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = soap.all_reduce sum %x over [0, 1] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// ERR: error: 'soap.all_reduce' op device 2 in the group is out of range: the module declares 2 devices
module attributes {soap.num_devices = 2} {
  func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = soap.all_reduce sum %x over [0, 2] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
