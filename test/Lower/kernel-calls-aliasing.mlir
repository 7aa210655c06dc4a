// RUN: soap-opt %s --split-input-file --soap-kernel-calls | FileCheck %s

// A convolution call reads a spread image's points, or a relaid filter's
// source, where they are only while nothing between the copy and the call
// may write or free that memory; the zero fill of its output goes only when
// nothing between the fill and the call may touch the output. "May" counts
// buffers that a select (the partitioner's choice of a rank's slot) or a
// guard's result may be: freeing the select's operand frees the memory the
// select is on the ranks that picked it (the 2-rank mobilenet_v3_small
// export under random:1 read freed filters and adjoints).

// The adjoint is a select of a buffer freed after the copy: the call reads
// the image (the copy into its points stays).
// CHECK-LABEL: func.func @spread_freed
// CHECK: %[[POINTS:.*]] = memref.subview
// CHECK: memref.copy %{{.*}}, %[[POINTS]]
// CHECK: memref.dealloc
// CHECK: memref.extract_aligned_pointer_as_index %[[POINTS]]
// CHECK: call @soaprt_conv2d_spread_f32
func.func @spread_freed(%dy0: memref<1x1x3x3xf32>, %w: memref<1x1x3x3xf32>, %out: memref<1x1x5x5xf32>, %c: i1) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<1x1x3x3xf32>
  linalg.copy ins(%dy0 : memref<1x1x3x3xf32>) outs(%a : memref<1x1x3x3xf32>)
  %b = memref.alloc() : memref<1x1x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<1x1x3x3xf32>)
  %dy = arith.select %c, %a, %b : memref<1x1x3x3xf32>
  %image = memref.alloc() : memref<1x1x7x7xf32>
  linalg.fill ins(%zero : f32) outs(%image : memref<1x1x7x7xf32>)
  %points = memref.subview %image[0, 0, 1, 1] [1, 1, 3, 3] [1, 1, 2, 2] : memref<1x1x7x7xf32> to memref<1x1x3x3xf32, strided<[49, 49, 14, 2], offset: 8>>
  memref.copy %dy, %points : memref<1x1x3x3xf32> to memref<1x1x3x3xf32, strided<[49, 49, 14, 2], offset: 8>>
  memref.dealloc %a : memref<1x1x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x1x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%image, %w : memref<1x1x7x7xf32>, memref<1x1x3x3xf32>) outs(%out : memref<1x1x5x5xf32>)
  memref.dealloc %image : memref<1x1x7x7xf32>
  memref.dealloc %b : memref<1x1x3x3xf32>
  return
}

// -----

// The same with the buffer freed after the convolution: the call reads
// the adjoint where it is, and the fill, copy and image go.
// CHECK-LABEL: func.func @spread_live
// CHECK: %[[DY:.*]] = arith.select
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %[[DY]]
// CHECK: call @soaprt_conv2d_spread_f32
// CHECK-NOT: memref.alloc
func.func @spread_live(%dy0: memref<1x1x3x3xf32>, %w: memref<1x1x3x3xf32>, %out: memref<1x1x5x5xf32>, %c: i1) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<1x1x3x3xf32>
  linalg.copy ins(%dy0 : memref<1x1x3x3xf32>) outs(%a : memref<1x1x3x3xf32>)
  %b = memref.alloc() : memref<1x1x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<1x1x3x3xf32>)
  %dy = arith.select %c, %a, %b : memref<1x1x3x3xf32>
  %image = memref.alloc() : memref<1x1x7x7xf32>
  linalg.fill ins(%zero : f32) outs(%image : memref<1x1x7x7xf32>)
  %points = memref.subview %image[0, 0, 1, 1] [1, 1, 3, 3] [1, 1, 2, 2] : memref<1x1x7x7xf32> to memref<1x1x3x3xf32, strided<[49, 49, 14, 2], offset: 8>>
  memref.copy %dy, %points : memref<1x1x3x3xf32> to memref<1x1x3x3xf32, strided<[49, 49, 14, 2], offset: 8>>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x1x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%image, %w : memref<1x1x7x7xf32>, memref<1x1x3x3xf32>) outs(%out : memref<1x1x5x5xf32>)
  memref.dealloc %a : memref<1x1x3x3xf32>
  memref.dealloc %image : memref<1x1x7x7xf32>
  memref.dealloc %b : memref<1x1x3x3xf32>
  return
}

// -----

// A filter relaid (transposed) from a select of a buffer freed before the
// convolution: the call reads the relaid copy.
// CHECK-LABEL: func.func @relaid_freed
// CHECK: %[[FILTER:.*]] = memref.alloc() : memref<3x2x3x3xf32>
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[FILTER]]
// CHECK: memref.extract_aligned_pointer_as_index %[[FILTER]]
// CHECK: call @soaprt_conv2d_nchw_fchw_f32
#src = affine_map<(o, i, h, w) -> (i, o, h, w)>
#id = affine_map<(o, i, h, w) -> (o, i, h, w)>
func.func @relaid_freed(%x: memref<1x2x5x5xf32>, %w0: memref<2x3x3x3xf32>, %out: memref<1x3x3x3xf32>, %c: i1) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<2x3x3x3xf32>
  linalg.copy ins(%w0 : memref<2x3x3x3xf32>) outs(%a : memref<2x3x3x3xf32>)
  %b = memref.alloc() : memref<2x3x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<2x3x3x3xf32>)
  %w = arith.select %c, %a, %b : memref<2x3x3x3xf32>
  %filter = memref.alloc() : memref<3x2x3x3xf32>
  linalg.generic {indexing_maps = [#src, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : memref<2x3x3x3xf32>) outs(%filter : memref<3x2x3x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  memref.dealloc %a : memref<2x3x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x3x3x3xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %filter : memref<1x2x5x5xf32>, memref<3x2x3x3xf32>) outs(%out : memref<1x3x3x3xf32>)
  memref.dealloc %filter : memref<3x2x3x3xf32>
  memref.dealloc %b : memref<2x3x3x3xf32>
  return
}

// -----

// The same with the buffer freed after the convolution: the call reads
// the select through the transpose, and the copy goes.
// CHECK-LABEL: func.func @relaid_live
// CHECK: %[[W:.*]] = arith.select
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: call @soaprt_conv2d_nchw_fchw_f32
#src = affine_map<(o, i, h, w) -> (i, o, h, w)>
#id = affine_map<(o, i, h, w) -> (o, i, h, w)>
func.func @relaid_live(%x: memref<1x2x5x5xf32>, %w0: memref<2x3x3x3xf32>, %out: memref<1x3x3x3xf32>, %c: i1) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<2x3x3x3xf32>
  linalg.copy ins(%w0 : memref<2x3x3x3xf32>) outs(%a : memref<2x3x3x3xf32>)
  %b = memref.alloc() : memref<2x3x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<2x3x3x3xf32>)
  %w = arith.select %c, %a, %b : memref<2x3x3x3xf32>
  %filter = memref.alloc() : memref<3x2x3x3xf32>
  linalg.generic {indexing_maps = [#src, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : memref<2x3x3x3xf32>) outs(%filter : memref<3x2x3x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.fill ins(%zero : f32) outs(%out : memref<1x3x3x3xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %filter : memref<1x2x5x5xf32>, memref<3x2x3x3xf32>) outs(%out : memref<1x3x3x3xf32>)
  memref.dealloc %filter : memref<3x2x3x3xf32>
  memref.dealloc %a : memref<2x3x3x3xf32>
  memref.dealloc %b : memref<2x3x3x3xf32>
  return
}

// -----

// The output is zero-filled, then read through a select before the
// product: the fill stays, and the call accumulates into the zeros.
// CHECK-LABEL: func.func @fill_read_through_select
// CHECK: %[[C:.*]] = memref.alloc()
// CHECK: linalg.fill {{.*}} outs(%[[C]]
// CHECK: call @use
// CHECK: call @soaprt_matmul_f32
func.func private @use(memref<4x4xf32>)
func.func @fill_read_through_select(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %other: memref<4x4xf32>, %p: i1) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  %s = arith.select %p, %c, %other : memref<4x4xf32>
  func.call @use(%s) : (memref<4x4xf32>) -> ()
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  func.call @use(%c) : (memref<4x4xf32>) -> ()
  memref.dealloc %c : memref<4x4xf32>
  return
}
