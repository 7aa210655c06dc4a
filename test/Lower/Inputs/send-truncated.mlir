// Rank 0 sends 8 elements, rank 1 receives 4: MPI_Recv fails with
// MPI_ERR_TRUNCATE (mpi-errors.test). The send is in a loop (of one trip),
// so the compiler leaves the pairing to the runtime; without the loop
// --soap-lower-cpu refuses the mismatch (send-recv-pairs.mlir).
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<8xf32> {soap.role = "input", soap.name = "x"})
      -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c1 step %c1 {
      soap.send %x from [0] to [1] tag 3 : tensor<8xf32>
    }
    %r = soap.recv from [0] to [1] tag 3 : tensor<4xf32>
    %z = tensor.extract_slice %r[0] [1] [1] : tensor<4xf32> to tensor<f32>
    return %z : tensor<f32>
  }
}
