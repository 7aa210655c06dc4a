// RUN: soap-opt --soap-send-early --split-input-file %s | FileCheck %s

// Device 0 makes two blocks in one guard; the partitioner sends each to
// device 1 before the guard on device 1 that reads it, after device 0's own
// work in between. Each send moves up to right after the guard that makes
// what it sends, with the slice it sends; the receives stay. A send of an
// argument goes first; the second send of tag 5 stays after the first (the
// n-th send of a tag meets the n-th receive).
// CHECK-LABEL: func.func @early
// CHECK-NEXT:    soap.send %arg0 from [0] to [1] tag 5
// CHECK-NEXT:    %[[G:.*]]:2 = soap.on_devices [0]
// CHECK:         }
// CHECK-NEXT:    soap.send %[[G]]#0 from [0] to [1] tag 5
// CHECK-NEXT:    %[[S:.*]] = tensor.extract_slice %[[G]]#1
// CHECK-NEXT:    soap.send %[[S]] from [0] to [1] tag 2
// CHECK-NEXT:    soap.send %[[G]]#0 from [0] to [1] tag 1
// CHECK-NEXT:    soap.recv from [0] to [1] tag 1
// CHECK-NEXT:    soap.on_devices [1]
// CHECK:         soap.on_devices [0]
// CHECK:         soap.recv from [0] to [1] tag 2
// CHECK-NEXT:    soap.recv from [0] to [1] tag 5
// CHECK-NEXT:    soap.recv from [0] to [1] tag 5
func.func @early(%x: tensor<4xf32>, %y: tensor<8xf32>, %o: tensor<4xf32>, %o8: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g:2 = soap.on_devices [0] -> tensor<4xf32>, tensor<8xf32> {
    %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%y, %y : tensor<8xf32>, tensor<8xf32>) outs(%o8 : tensor<8xf32>) -> tensor<8xf32>
    soap.yield %r, %s : tensor<4xf32>, tensor<8xf32>
  }
  soap.send %g#0 from [0] to [1] tag 1 : tensor<4xf32>
  %r1 = soap.recv from [0] to [1] tag 1 : tensor<4xf32>
  %a = soap.on_devices [1] -> tensor<4xf32> {
    %r = linalg.add ins(%r1, %r1 : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %b = soap.on_devices [0] -> tensor<4xf32> {
    %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %slice = tensor.extract_slice %g#1[4] [4] [1] : tensor<8xf32> to tensor<4xf32>
  soap.send %slice from [0] to [1] tag 2 : tensor<4xf32>
  %r2 = soap.recv from [0] to [1] tag 2 : tensor<4xf32>
  soap.send %x from [0] to [1] tag 5 : tensor<4xf32>
  %r5 = soap.recv from [0] to [1] tag 5 : tensor<4xf32>
  soap.send %g#0 from [0] to [1] tag 5 : tensor<4xf32>
  %r6 = soap.recv from [0] to [1] tag 5 : tensor<4xf32>
  return %a, %r2, %r5, %r6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
