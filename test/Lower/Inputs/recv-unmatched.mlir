// Rank 1 receives from rank 0, which never sends: without --timeout both
// ranks would wait forever (mpi-errors.test).
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<8xf32> {soap.role = "input", soap.name = "x"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
    %r = soap.recv from [0] to [1] tag 3 : tensor<8xf32>
    %z = tensor.extract_slice %r[0] [1] [1] : tensor<8xf32> to tensor<f32>
    return %z : tensor<f32>
  }
}
