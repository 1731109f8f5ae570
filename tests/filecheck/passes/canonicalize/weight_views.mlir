// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// FoldReshapeOfWeight and FoldTransposeOfWeight (passes/canonicalization.py):
// a weight const's value is reshape(transpose(file[weight], perm), result
// shape), file[weight] of shape `weight_shape`. A reshape of a single-use
// weight const is the same view with a new result shape; a transpose
// composes into `perm` only while the view does not reshape.

// CHECK-LABEL: func.func @reshape(
// CHECK-NEXT:  %r = mil.const weight "w" {weight_shape = array<i64: 64, 32>} : tensor<64x32x1x1xf16>
// CHECK-NEXT:  func.return %r : tensor<64x32x1x1xf16>
func.func @reshape() -> tensor<64x32x1x1xf16> {
  %w = mil.const weight "w" : tensor<64x32xf16>
  %r = mil.reshape %w {shape = array<i64: 64, 32, 1, 1>} : (tensor<64x32xf16>) -> tensor<64x32x1x1xf16>
  func.return %r : tensor<64x32x1x1xf16>
}

// A reshape back to the file's shape drops the view.
// CHECK-LABEL: func.func @reshape_back(
// CHECK-NEXT:  %r = mil.const weight "w" : tensor<64x32xf16>
// CHECK-NEXT:  func.return %r : tensor<64x32xf16>
func.func @reshape_back() -> tensor<64x32xf16> {
  %w = mil.const weight "w" {weight_shape = array<i64: 64, 32>} : tensor<2048xf16>
  %r = mil.reshape %w {shape = array<i64: 64, 32>} : (tensor<2048xf16>) -> tensor<64x32xf16>
  func.return %r : tensor<64x32xf16>
}

// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:  %t = mil.const weight "w" {weight_shape = array<i64: 64, 32>, perm = array<i64: 1, 0>} : tensor<32x64xf32>
// CHECK-NEXT:  func.return %t : tensor<32x64xf32>
func.func @transpose() -> tensor<32x64xf32> {
  %w = mil.const weight "w" : tensor<64x32xf32>
  %t = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  func.return %t : tensor<32x64xf32>
}

// Transpose then reshape (a linear weight [Cout, Cin] read as a transposed
// conv weight): one view with both.
// CHECK-LABEL: func.func @transpose_then_reshape(
// CHECK-NEXT:  %r = mil.const weight "w" {weight_shape = array<i64: 64, 32>, perm = array<i64: 1, 0>} : tensor<32x64x1x1xf32>
// CHECK-NEXT:  func.return %r : tensor<32x64x1x1xf32>
func.func @transpose_then_reshape() -> tensor<32x64x1x1xf32> {
  %w = mil.const weight "w" : tensor<64x32xf32>
  %t = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  %r = mil.reshape %t {shape = array<i64: 32, 64, 1, 1>} : (tensor<32x64xf32>) -> tensor<32x64x1x1xf32>
  func.return %r : tensor<32x64x1x1xf32>
}

// Two transposes of a pure-transpose view compose (and here cancel).
// CHECK-LABEL: func.func @transpose_twice(
// CHECK-NEXT:  %u = mil.const weight "w" : tensor<2x3x4xf32>
// CHECK-NEXT:  func.return %u : tensor<2x3x4xf32>
func.func @transpose_twice() -> tensor<2x3x4xf32> {
  %w = mil.const weight "w" {weight_shape = array<i64: 2, 3, 4>, perm = array<i64: 2, 0, 1>} : tensor<4x2x3xf32>
  %u = mil.transpose %w {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %u : tensor<2x3x4xf32>
}

// Negative: a transpose of a view that reshapes does not commute with it.
// CHECK-LABEL: func.func @reshape_then_transpose(
// CHECK-NEXT:  %r = mil.const weight "w" {weight_shape = array<i64: 6, 4>} : tensor<4x6xf32>
// CHECK-NEXT:  %t = mil.transpose %r {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
func.func @reshape_then_transpose() -> tensor<6x4xf32> {
  %w = mil.const weight "w" : tensor<6x4xf32>
  %r = mil.reshape %w {shape = array<i64: 4, 6>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %t = mil.transpose %r {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  func.return %t : tensor<6x4xf32>
}

// Negative: a weight const with two uses keeps its view, so the weight is
// not stored twice.
// CHECK-LABEL: func.func @shared_weight(
// CHECK-NEXT:  %w = mil.const weight "w" : tensor<4x6xf32>
// CHECK-NEXT:  %t = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:  func.return %w, %t : tensor<4x6xf32>, tensor<6x4xf32>
func.func @shared_weight() -> (tensor<4x6xf32>, tensor<6x4xf32>) {
  %w = mil.const weight "w" : tensor<4x6xf32>
  %t = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  func.return %w, %t : tensor<4x6xf32>, tensor<6x4xf32>
}
