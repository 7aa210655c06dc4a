// Gradients of every kind of op the autodiff differentiates agree with
// central finite differences in float64 (soap-gradcheck retypes f32 to
// f64, appends the loss, and compares on random data).
// RUN: soap-gradcheck %s --func=elementwise --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=reductions --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=contractions --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=named_ops --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=conv --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=pooling --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=tiling_pools --loss=mse --result=all | FileCheck %s
// RUN: soap-gradcheck %s --func=data_movement --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=embedding --loss=softmax-xent | FileCheck %s
// RUN: soap-gradcheck %s --func=scalar_loss | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: all {{[0-9]+}} parameters ok

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#unit = affine_map<(d0, d1) -> (0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>

// Every arith/math op with a derivative, a broadcast operand (#col), a
// unit-dimension operand (#unit) and the output read back (%o).
func.func @elementwise(%a: tensor<3x4xf32> {soap.param, soap.name = "a"},
                       %b: tensor<4xf32> {soap.param, soap.name = "b"},
                       %c: tensor<1x4xf32> {soap.param, soap.name = "c"},
                       %s: tensor<f32> {soap.param, soap.name = "s"},
                       %init: tensor<3x4xf32> {soap.param, soap.name = "init"})
    -> tensor<3x4xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #col, #unit, #scalar2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %b, %c, %s : tensor<3x4xf32>, tensor<4xf32>, tensor<1x4xf32>, tensor<f32>)
      outs(%init : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %w: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %sum = arith.addf %x, %y : f32
    %diff = arith.subf %x, %z : f32
    %prod = arith.mulf %sum, %diff : f32
    %yy = arith.mulf %y, %y : f32
    %den = arith.addf %yy, %two : f32
    %quot = arith.divf %prod, %den : f32
    %neg = arith.negf %quot : f32
    %exp = math.exp %neg : f32
    %log = math.log %den : f32
    %tanh = math.tanh %x : f32
    %rsqrt = math.rsqrt %den : f32
    %sqrt = math.sqrt %den : f32
    %max = arith.maximumf %x, %z : f32
    %min = arith.minimumf %y, %w : f32
    %abs = math.absf %x : f32
    %erf = math.erf %z : f32
    %pow = math.powf %den, %w : f32
    %gt = arith.cmpf ogt, %x, %y : f32
    %sel = arith.select %gt, %prod, %yy : f32
    %t0 = arith.addf %exp, %log : f32
    %t1 = arith.addf %t0, %tanh : f32
    %t2 = arith.addf %t1, %rsqrt : f32
    %t3 = arith.addf %t2, %sqrt : f32
    %t4 = arith.addf %t3, %max : f32
    %t5 = arith.addf %t4, %min : f32
    %t6 = arith.addf %t5, %abs : f32
    %t7 = arith.addf %t6, %erf : f32
    %t8 = arith.addf %t7, %pow : f32
    %t9 = arith.addf %t8, %sel : f32
    %t10 = arith.mulf %t9, %o : f32
    linalg.yield %t10 : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// A numerically stable softmax over rows (max and sum reductions) and a
// reduction over the leading dimension.
func.func @reductions(%a: tensor<3x5xf32> {soap.param, soap.name = "a"})
    -> tensor<3x5xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %max = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x5xf32>) outs(%m0 : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %o : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a, %max : tensor<3x5xf32>, tensor<3xf32>) outs(%s0 : tensor<3xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    %s = arith.addf %o, %e : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %e5 = tensor.empty() : tensor<5xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<5xf32>) -> tensor<5xf32>
  %colsum = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<3x5xf32>) outs(%c0 : tensor<5xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %e35 = tensor.empty() : tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row, #row, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %max, %sum, %colsum : tensor<3x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<5xf32>)
      outs(%e35 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %m: f32, %s: f32, %c: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %s : f32
    %q = arith.mulf %p, %c : f32
    linalg.yield %q : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}

// matmul and batch_matmul keep named ops in their gradients.
func.func @contractions(%x: tensor<2x3x4xf32> {soap.param, soap.name = "x"},
                        %y: tensor<2x4x5xf32> {soap.param, soap.name = "y"},
                        %w: tensor<5x3xf32> {soap.param, soap.name = "w"})
    -> tensor<6x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bmm = linalg.batch_matmul ins(%x, %y : tensor<2x3x4xf32>, tensor<2x4x5xf32>)
                             outs(%f : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %flat = tensor.collapse_shape %bmm [[0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
  %e2 = tensor.empty() : tensor<6x3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<6x3xf32>) -> tensor<6x3xf32>
  %mm = linalg.matmul ins(%flat, %w : tensor<6x5xf32>, tensor<5x3xf32>)
                      outs(%f2 : tensor<6x3xf32>) -> tensor<6x3xf32>
  return %mm : tensor<6x3xf32>
}

// Structured ops without a rule of their own are generalized.
func.func @named_ops(%a: tensor<4x3xf32> {soap.param, soap.name = "a"},
                     %v: tensor<4xf32> {soap.param, soap.name = "v"},
                     %b: tensor<3xf32> {soap.param, soap.name = "b"})
    -> tensor<3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<3x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x3xf32>) outs(%et : tensor<3x4xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %mv = linalg.matvec ins(%t, %v : tensor<3x4xf32>, tensor<4xf32>) outs(%f3 : tensor<3xf32>) -> tensor<3xf32>
  %eb = tensor.empty() : tensor<3x3xf32>
  %bc = linalg.broadcast ins(%mv : tensor<3xf32>) outs(%eb : tensor<3x3xf32>) dimensions = [1]
  %red = linalg.reduce ins(%t : tensor<3x4xf32>) outs(%f3 : tensor<3xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %r = linalg.generic {indexing_maps = [#id2, #col, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bc, %red, %b : tensor<3x3xf32>, tensor<3xf32>, tensor<3xf32>) outs(%eb : tensor<3x3xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<3x3xf32>
  return %r : tensor<3x3xf32>
}

// Strided, dilated convolution whose window leaves the last input row
// unread, and a 1x1 convolution.
func.func @conv(%x: tensor<2x3x10x9xf32> {soap.param, soap.name = "x"},
                %w: tensor<4x3x3x3xf32> {soap.param, soap.name = "w"},
                %w1: tensor<2x4x1x1xf32> {soap.param, soap.name = "w1"})
    -> tensor<2x2x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x3x10x9xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %e1 = tensor.empty() : tensor<2x2x3x3xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%c, %w1 : tensor<2x4x3x3xf32>, tensor<2x4x1x1xf32>) outs(%f1 : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  return %c1 : tensor<2x2x3x3xf32>
}

// Max pooling (overlapping windows) and sum pooling (stride and dilation).
func.func @pooling(%x: tensor<2x2x7x7xf32> {soap.param, soap.name = "x"})
    -> tensor<2x2x3x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %win = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x2x3x3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %max = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win : tensor<2x2x7x7xf32>, tensor<3x3xf32>) outs(%m0 : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %win2 = tensor.empty() : tensor<2x2xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %sum = linalg.pooling_nchw_sum {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win2 : tensor<2x2x7x7xf32>, tensor<2x2xf32>) outs(%s0 : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%max, %sum : tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) outs(%e : tensor<2x2x3x3xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<2x2x3x3xf32>
  return %r : tensor<2x2x3x3xf32>
}

// Sum pooling whose windows tile the input (their gradient is a broadcast
// of the adjoint, not a spread convolution): a global pooling with stride 1
// (MobileNetV3's squeeze-excitation, as torch-mlir writes it) and 2 x 2
// windows with stride 2 over a 7 x 7 input, whose last row and column no
// window reads.
func.func @tiling_pools(%x: tensor<2x3x7x7xf32> {soap.param, soap.name = "x"})
    -> (tensor<2x3x1x1xf32>, tensor<2x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %whole = tensor.empty() : tensor<7x7xf32>
  %e1 = tensor.empty() : tensor<2x3x1x1xf32>
  %g0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x3x1x1xf32>) -> tensor<2x3x1x1xf32>
  %global = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %whole : tensor<2x3x7x7xf32>, tensor<7x7xf32>) outs(%g0 : tensor<2x3x1x1xf32>) -> tensor<2x3x1x1xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %e3 = tensor.empty() : tensor<2x3x3x3xf32>
  %t0 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %tiles = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win : tensor<2x3x7x7xf32>, tensor<2x2xf32>) outs(%t0 : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  return %global, %tiles : tensor<2x3x1x1xf32>, tensor<2x3x3x3xf32>
}

// pad, strided and rank-reducing slices, insert_slice, reshapes, concat,
// cast.
func.func @data_movement(%x: tensor<2x3x4xf32> {soap.param, soap.name = "x"},
                         %d: tensor<4x6xf32> {soap.param, soap.name = "d"})
    -> tensor<8x6xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 2] high[1, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<2x3x4xf32> to tensor<3x4x7xf32>
  %s = tensor.extract_slice %p[1, 0, 1] [1, 2, 3] [1, 2, 2] : tensor<3x4x7xf32> to tensor<2x3xf32>
  %ins = tensor.insert_slice %s into %d[1, 2] [2, 3] [2, 1] : tensor<2x3xf32> into tensor<4x6xf32>
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %exp = tensor.expand_shape %flat [[0], [1, 2]] output_shape [6, 2, 2] : tensor<6x4xf32> into tensor<6x2x2xf32>
  %back = tensor.collapse_shape %exp [[0, 1], [2]] : tensor<6x2x2xf32> into tensor<12x2xf32>
  %top = tensor.extract_slice %back[0, 0] [4, 2] [3, 1] : tensor<12x2xf32> to tensor<4x2xf32>
  %dyn = tensor.cast %top : tensor<4x2xf32> to tensor<?x2xf32>
  %stat = tensor.cast %dyn : tensor<?x2xf32> to tensor<4x2xf32>
  %wide = tensor.concat dim(1) %stat, %stat, %stat : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %r = tensor.concat dim(0) %ins, %wide : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return %r : tensor<8x6xf32>
}

// One-hot embedding lookup (linalg.index, cmpi, select on integer ids),
// logits for the appended softmax cross-entropy.
func.func @embedding(%table: tensor<5x3xf32> {soap.param, soap.name = "table"},
                     %ids: tensor<4xi64> {soap.name = "ids", soap.range = 5 : i64})
    -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(t, c, v) -> (t)>, affine_map<(t, c, v) -> (v, c)>, affine_map<(t, c, v) -> (t, c)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ids, %table : tensor<4xi64>, tensor<5x3xf32>) outs(%f : tensor<4x3xf32>) {
  ^bb0(%id: i64, %x: f32, %o: f32):
    %v = linalg.index 2 : index
    %i = arith.index_cast %id : i64 to index
    %hit = arith.cmpi eq, %v, %i : index
    %s = arith.select %hit, %x, %zero : f32
    %a = arith.addf %o, %s : f32
    linalg.yield %a : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// A function that returns its own scalar loss (loss=none), with a
// parameter the loss does not use (zero gradient).
func.func @scalar_loss(%a: tensor<6xf32> {soap.param, soap.name = "a"},
                       %unused: tensor<2xf32> {soap.param, soap.name = "unused"})
    -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id1, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%a : tensor<6xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %sq = arith.mulf %x, %x : f32
    %t = math.tanh %sq : f32
    %s = arith.addf %o, %t : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
