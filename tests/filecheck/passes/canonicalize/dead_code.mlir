// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// Dead op removal: mil ops are Pure, so xDSL's canonicalize erases those
// whose results are unused, transitively, weight consts included.

// CHECK-LABEL: func.func @unused_chain(
// CHECK-NEXT:  func.return %x : tensor<2x3xf32>
func.func @unused_chain(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = mil.const weight "w" : tensor<3x4xf32>
  %m = mil.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %r = mil.relu %m : tensor<2x4xf32>
  %s = mil.softmax %r {axis = -1 : i64} : tensor<2x4xf32>
  func.return %x : tensor<2x3xf32>
}

// A split stays while one of its results is used; the exp of the other goes.
// CHECK-LABEL: func.func @partly_used(
// CHECK-NEXT:  %p, %p_1 = mil.split %x
// CHECK-NEXT:  func.return %p_1 : tensor<2x1xf32>
func.func @partly_used(%x: tensor<2x2xf32>) -> tensor<2x1xf32> {
  %p:2 = mil.split %x {axis = 1 : i64, num_splits = 2 : i64} : (tensor<2x2xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>)
  %e = mil.exp %p#0 : tensor<2x1xf32>
  func.return %p#1 : tensor<2x1xf32>
}
