// RUN: xdsl-opt %s -p canonicalize | filecheck %s

// FoldTransposeOfWeight (passes/canonicalization.py) on weight views that
// reshape only by adding or dropping axes of size 1: such a reshape
// commutes with a transpose, so the transpose composes into the view.

// A positional table [S, C] read as [1, S, C] and transposed to [1, C, S]
// (then reshaped to ANE form) is one view of the file's tensor.
// CHECK-LABEL: func.func @unit_view(
// CHECK-NEXT:    %r = mil.const weight "pos" {weight_shape = array<i64: 6, 4>, perm = array<i64: 1, 0>} : tensor<1x4x1x6xf16>
// CHECK-NEXT:    func.return %r : tensor<1x4x1x6xf16>
func.func @unit_view() -> tensor<1x4x1x6xf16> {
  %w = mil.const weight "pos" {weight_shape = array<i64: 6, 4>} : tensor<1x6x4xf16>
  %t = mil.transpose %w {perm = array<i64: 0, 2, 1>} : (tensor<1x6x4xf16>) -> tensor<1x4x6xf16>
  %r = mil.reshape %t {shape = array<i64: 1, 4, 1, 6>} : (tensor<1x4x6xf16>) -> tensor<1x4x1x6xf16>
  func.return %r : tensor<1x4x1x6xf16>
}

// A transpose that keeps the order of the axes of size other than 1 needs
// no perm.
// CHECK-LABEL: func.func @unit_view_in_order(
// CHECK-NEXT:    %t = mil.const weight "w" {weight_shape = array<i64: 6, 4>} : tensor<6x1x4xf32>
// CHECK-NEXT:    func.return %t : tensor<6x1x4xf32>
func.func @unit_view_in_order() -> tensor<6x1x4xf32> {
  %w = mil.const weight "w" {weight_shape = array<i64: 6, 4>} : tensor<1x6x4xf32>
  %t = mil.transpose %w {perm = array<i64: 1, 0, 2>} : (tensor<1x6x4xf32>) -> tensor<6x1x4xf32>
  func.return %t : tensor<6x1x4xf32>
}

// A transposed view [4, 6] of a [6, 4] file read as [4, 1, 6]: transposing
// back gives the file's order.
// CHECK-LABEL: func.func @transposed_unit_view(
// CHECK-NEXT:    %t = mil.const weight "w" {weight_shape = array<i64: 6, 4>} : tensor<6x1x4xf32>
// CHECK-NEXT:    func.return %t : tensor<6x1x4xf32>
func.func @transposed_unit_view() -> tensor<6x1x4xf32> {
  %w = mil.const weight "w" {weight_shape = array<i64: 6, 4>, perm = array<i64: 1, 0>} : tensor<4x1x6xf32>
  %t = mil.transpose %w {perm = array<i64: 2, 1, 0>} : (tensor<4x1x6xf32>) -> tensor<6x1x4xf32>
  func.return %t : tensor<6x1x4xf32>
}
