// A step whose results share values: a frozen parameter returned as its own
// argument, and two parameters updated to the same tensor. Upstream's
// buffer-results-to-out-params crashed on the repeated result; each such
// result now gets a buffer of its own (prepareEntry), and the program runs.
//
// loss = sum(u - v) + sum(w); u and v both become (u + v) / 2 and w stays,
// so from step 2 on the loss is sum(w), the same every step.
// RUN: soap-opt %s --soap-lower-cpu | soap-translate --soap-to-executable -o %t.exe
// RUN: %t.exe --steps 3 --seed 3 > %t.out
// RUN: python3 -c "import re,sys; l=[float(x) for x in re.findall(r'^step=\d+ loss=(\S+)', open(sys.argv[1]).read(), re.M)]; print(len(l), l[0] != l[1], l[1] == l[2])" %t.out | FileCheck %s
// CHECK: 3 True True

#map = affine_map<(d0, d1) -> (d0, d1)>
#sum = affine_map<(d0, d1) -> ()>
func.func @train_step(
    %w: tensor<4x8xf32> {soap.role = "param", soap.name = "w", soap.init = "fan-in"},
    %u: tensor<4x8xf32> {soap.role = "param", soap.name = "u", soap.init = "fan-in"},
    %v: tensor<4x8xf32> {soap.role = "param", soap.name = "v", soap.init = "fan-in"})
    -> (tensor<f32> {soap.role = "loss"},
        tensor<4x8xf32> {soap.role = "param", soap.name = "w"},
        tensor<4x8xf32> {soap.role = "param", soap.name = "u"},
        tensor<4x8xf32> {soap.role = "param", soap.name = "v"}) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#map, #map, #map, #sum],
                          iterator_types = ["reduction", "reduction"]}
      ins(%u, %v, %w : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
      outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %s = arith.addf %d, %c : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %mean = linalg.generic {indexing_maps = [#map, #map, #map],
                          iterator_types = ["parallel", "parallel"]}
      ins(%u, %v : tensor<4x8xf32>, tensor<4x8xf32>)
      outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.mulf %s, %half : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %loss, %w, %mean, %mean
      : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
