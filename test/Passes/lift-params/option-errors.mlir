// Wrong option values name the option and what it accepts.
// RUN: not soap-opt %s --soap-lift-params="params=0,4" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not soap-opt %s --soap-lift-params="params=1-x" 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: not soap-opt %s --soap-lift-params="batch-norm=eval" 2>&1 | FileCheck %s --check-prefix=BN
// RUN: not soap-opt %s --soap-lift-params="elided-integers=ones" 2>&1 | FileCheck %s --check-prefix=INT
// RANGE: error: soap-lift-params: params=4: @f has 2 arguments (0 to 1)
// LIST: error: soap-lift-params: params: '1-x' is not an argument index or a range such as 2-5
// BN: error: soap-lift-params: batch-norm must be train or frozen, not 'eval'
// RUN: not soap-opt %s --soap-lift-params="init=random" 2>&1 | FileCheck %s --check-prefix=INIT
// INT: error: soap-lift-params: elided-integers must be error, iota or zeros, not 'ones'
// INIT: error: soap-lift-params: init must be export or seed, not 'random'
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
