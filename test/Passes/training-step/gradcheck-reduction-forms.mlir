// Reductions in the forms producers emit, bodies with scf.if and
// arith.select, and gathers (tensor.extract of a table at computed
// indices) have gradients that agree with central finite differences.
// RUN: soap-gradcheck %s --func=sums --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=products --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=max_argmax --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=select_min --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=branches --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=gather --loss=mse | FileCheck %s
// RUN: soap-gradcheck %s --func=gather_sum --loss=mse | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: all {{[0-9]+}} parameters ok

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// acc - f(x), f(x) + acc, and (acc + a) - b, each into a parameter init.
func.func @sums(%x: tensor<3x4xf32> {soap.param, soap.name = "x"},
                %y: tensor<3x4xf32> {soap.param, soap.name = "y"},
                %init: tensor<3xf32> {soap.param, soap.name = "init"}) -> tensor<3xf32> {
  %minus = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    %s = arith.subf %o, %e : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %plus = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<3x4xf32>) outs(%minus : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    %s = arith.addf %t, %o : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %chain = linalg.generic {indexing_maps = [#id2, #id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %y : tensor<3x4xf32>, tensor<3x4xf32>) outs(%plus : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    %t = math.tanh %b : f32
    %d = arith.subf %s, %t : f32
    linalg.yield %d : f32
  } -> tensor<3xf32>
  return %chain : tensor<3xf32>
}

// A product reduction of values away from zero.
func.func @products(%x: tensor<3x4xf32> {soap.param, soap.name = "x"}) -> tensor<3xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %i = linalg.fill ins(%one : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%i : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %v = arith.addf %a, %two : f32
    %p = arith.mulf %v, %o : f32
    linalg.yield %p : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// torch-mlir's max + argmax: the i64 result is dead; the max (written
// max(in, out), the input first) is used.
func.func @max_argmax(%x: tensor<3x5xf32> {soap.param, soap.name = "x"}) -> tensor<3x5xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %ei = tensor.empty() : tensor<3xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%ei : tensor<3xi64>) -> tensor<3xi64>
  %r:2 = linalg.generic {indexing_maps = [#id2, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x5xf32>) outs(%m0, %i0 : tensor<3xf32>, tensor<3xi64>) {
  ^bb0(%a: f32, %o: f32, %oi: i64):
    %idx = linalg.index 1 : index
    %i = arith.index_cast %idx : index to i64
    %m = arith.maximumf %a, %o : f32
    %gt = arith.cmpf ogt, %a, %o : f32
    %s = arith.select %gt, %i, %oi : i64
    linalg.yield %m, %s : f32, i64
  } -> (tensor<3xf32>, tensor<3xi64>)
  %e2 = tensor.empty() : tensor<3x5xf32>
  %sub = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r#0 : tensor<3x5xf32>, tensor<3xf32>) outs(%e2 : tensor<3x5xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<3x5xf32>
  return %sub : tensor<3x5xf32>
}

// A min reduction written as compare and select (out on the left).
func.func @select_min(%x: tensor<3x5xf32> {soap.param, soap.name = "x"}) -> tensor<3xf32> {
  %inf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<3xf32>
  %m0 = linalg.fill ins(%inf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x5xf32>) outs(%m0 : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %lt = arith.cmpf olt, %o, %sq : f32
    %s = arith.select %lt, %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// scf.if in a body: each element takes log(x) where x > 0.5, else x * y
// (the branch not taken must not contribute, not even log's 1/x).
func.func @branches(%x: tensor<3x4xf32> {soap.param, soap.name = "x"},
                    %y: tensor<4xf32> {soap.param, soap.name = "y"}) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d1)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<3x4xf32>, tensor<4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %gt = arith.cmpf ogt, %a, %half : f32
    %v = scf.if %gt -> f32 {
      %l = math.log %a : f32
      scf.yield %l : f32
    } else {
      %p = arith.mulf %a, %b : f32
      %q = arith.mulf %p, %b : f32
      scf.yield %q : f32
    }
    %w = arith.mulf %v, %b : f32
    linalg.yield %w : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// An embedding lookup as torch-mlir writes it: the table is read with
// tensor.extract at ids[b, s] (asserts on the index included), scaled.
func.func @gather(%table: tensor<6x3xf32> {soap.param, soap.name = "table"},
                  %ids: tensor<2x4xi64> {soap.name = "ids", soap.range = 6 : i64}) -> tensor<2x4x3xf32> {
  %c6 = arith.constant 6 : index
  %e = tensor.empty() : tensor<2x4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x4xi64>) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %h = linalg.index 2 : index
    %ok = arith.cmpi slt, %i, %c6 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %table[%i, %h] : tensor<6x3xf32>
    %two = arith.constant 2.0 : f32
    %s = arith.mulf %v, %two : f32
    linalg.yield %s : f32
  } -> tensor<2x4x3xf32>
  return %r : tensor<2x4x3xf32>
}

// A gather inside a reduction that also reads a plain parameter:
// out[b, h] += table[ids[b, s], h] * w[s].
func.func @gather_sum(%table: tensor<5x3xf32> {soap.param, soap.name = "table"},
                      %w: tensor<4xf32> {soap.param, soap.name = "w"},
                      %ids: tensor<2x4xi64> {soap.name = "ids", soap.range = 5 : i64}) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, h, s) -> (b, s)>, affine_map<(b, h, s) -> (s)>, affine_map<(b, h, s) -> (b, h)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ids, %w : tensor<2x4xi64>, tensor<4xf32>) outs(%f : tensor<2x3xf32>) {
  ^bb0(%id: i64, %ws: f32, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %h = linalg.index 1 : index
    %v = tensor.extract %table[%i, %h] : tensor<5x3xf32>
    %p = arith.mulf %v, %ws : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
