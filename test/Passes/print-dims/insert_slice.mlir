// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Writing one head's 8x16 output into columns 16..31 of an 8x64 buffer: the
// loops run over the inserted source. The source is read and only the
// covered part of the destination is written; the rest of the destination
// is left untouched.
//
// bytes = read source 8*16*4 (512) + write 8*16*4 (512) = 1024
// CHECK: remark: dims d0:8:sample d1:16:attribute flops=0 bytes=1024{{$}}
// CHECK-NEXT: tensor.insert_slice
//
// Rank-extending: one 64-wide row per sample written at step 3 of a
// 8x10x64 sequence buffer: bytes = 8*64*4 (2048) read + 2048 written = 4096
// CHECK: remark: dims d0:8:sample d1:64:attribute flops=0 bytes=4096{{$}}
// CHECK-NEXT: tensor.insert_slice
// CHECK-NOT: not partitionable
func.func @write_head(%head: tensor<8x16xf32>,
                      %buf: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %y = tensor.insert_slice %head into %buf[0, 16] [8, 16] [1, 1]
         : tensor<8x16xf32> into tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

func.func @write_step(%h: tensor<8x64xf32>,
                      %seq: tensor<8x10x64xf32>) -> tensor<8x10x64xf32> {
  %y = tensor.insert_slice %h into %seq[0, 3, 0] [8, 1, 64] [1, 1, 1]
         : tensor<8x64xf32> into tensor<8x10x64xf32>
  return %y : tensor<8x10x64xf32>
}
