// Every soap.recv must receive the type its soap.send sends (the n-th send
// on a pair of devices and a tag meets the n-th receive), and, where no
// loop is around them, every send needs its receive: both are errors when
// the program is lowered, not bits reinterpreted or a hang at run time.
// RUN: not soap-opt %s -split-input-file --soap-lower-cpu -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: receives 'tensor<8xf32>' from 0 on 1 (tag 3) but the soap.send it pairs with sends 'tensor<8xi32>'
// CHECK: note: the soap.send
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<8xi32> {soap.role = "input", soap.name = "x"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
    soap.send %x from [0] to [1] tag 3 : tensor<8xi32>
    %r = soap.recv from [0] to [1] tag 3 : tensor<8xf32>
    %z = tensor.extract_slice %r[0] [1] [1] : tensor<8xf32> to tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// CHECK: error: a soap.recv from 0 to 1 (tag 5) has no matching soap.send (0 send(s), 1 receive(s) on that pair): the program would wait forever
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<8xf32> {soap.role = "input", soap.name = "x"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
    soap.send %x from [0] to [1] tag 3 : tensor<8xf32>
    %a = soap.recv from [0] to [1] tag 3 : tensor<8xf32>
    %r = soap.recv from [0] to [1] tag 5 : tensor<8xf32>
    %z = tensor.extract_slice %r[0] [1] [1] : tensor<8xf32> to tensor<f32>
    return %z : tensor<f32>
  }
}
