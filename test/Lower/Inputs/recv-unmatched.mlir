// Rank 0 sends inside a loop that runs no iteration, so rank 1's receive
// waits forever. The compiler counts no loop's trips, so it cannot see
// this one; without --timeout both ranks would hang (mpi-errors.test).
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<8xf32> {soap.role = "input", soap.name = "x"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c0 step %c1 {
      soap.send %x from [0] to [1] tag 3 : tensor<8xf32>
    }
    %r = soap.recv from [0] to [1] tag 3 : tensor<8xf32>
    %z = tensor.extract_slice %r[0] [1] [1] : tensor<8xf32> to tensor<f32>
    return %z : tensor<f32>
  }
}
