// RUN: xdsl-opt %s -p canonicalize | filecheck %s

// MIL's log, rsqrt and inverse add their epsilon to the operand, so adding a
// scalar const first folds into the epsilon: f(x + c, eps) = f(x, c + eps).

// CHECK-LABEL: func.func @rsqrt_of_sum
// CHECK-NEXT: %[[R:.*]] = mil.rsqrt %x {epsilon = 1.00000102e-06 : f32} : tensor<2x4xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<2x4xf32>
func.func @rsqrt_of_sum(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c = mil.const dense<1.0e-06> : tensor<f32>
  %0 = mil.add %x, %c : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = mil.rsqrt %0 {epsilon = 1.0e-12 : f32} : tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}

// The default epsilon (log: 1e-45) is kept in the sum; the const may be on
// either side.
// CHECK-LABEL: func.func @log_of_sum
// CHECK-NEXT: %[[L:.*]] = mil.log %x {epsilon = 5.000000e-01 : f32} : tensor<3xf32>
// CHECK-NEXT: func.return %[[L]] : tensor<3xf32>
func.func @log_of_sum(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = mil.const dense<0.5> : tensor<1xf32>
  %0 = mil.add %c, %x : (tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = mil.log %0 : tensor<3xf32>
  func.return %1 : tensor<3xf32>
}

// Not folded: the sum has another use, or the const is not a scalar, or the
// add broadcasts x.
// CHECK-LABEL: func.func @kept
// CHECK: mil.add
// CHECK: mil.rsqrt
// CHECK: mil.add
// CHECK: mil.inverse
// CHECK: mil.add
// CHECK: mil.log
func.func @kept(%x: tensor<2xf32>, %y: tensor<1xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %c = mil.const dense<1.0> : tensor<f32>
  %0 = mil.add %x, %c : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = mil.rsqrt %0 : tensor<2xf32>
  %v = mil.const dense<[1.0, 2.0]> : tensor<2xf32>
  %2 = mil.add %x, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = mil.inverse %2 : tensor<2xf32>
  %4 = mil.add %y, %v : (tensor<1xf32>, tensor<2xf32>) -> tensor<2xf32>
  %5 = mil.log %4 : tensor<2xf32>
  func.return %0, %1, %3, %5 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
