// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// DropEmptyConcatOperands (passes/canonicalization.py): an operand of size
// 0 along the axis adds nothing, and Core ML has no empty tensors; the
// empty const it leaves unused is erased.

// CHECK-LABEL: func.func @one_left(
// CHECK-NEXT:  func.return %y : tensor<2x4xf32>
func.func @one_left(%y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = mil.const dense<> : tensor<2x0xf32>
  %c = mil.concat %e, %y {axis = 1 : i64} : (tensor<2x0xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %c : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @two_left(
// CHECK-NEXT:  %c = mil.concat %x, %y {axis = -1 : i64} : (tensor<2x3xf16>, tensor<2x4xf16>) -> tensor<2x7xf16>
// CHECK-NEXT:  func.return %c : tensor<2x7xf16>
func.func @two_left(%x: tensor<2x3xf16>, %y: tensor<2x4xf16>) -> tensor<2x7xf16> {
  %e = mil.const dense<> : tensor<2x0xf16>
  %c = mil.concat %e, %x, %e, %y {axis = -1 : i64, interleave = false} : (tensor<2x0xf16>, tensor<2x3xf16>, tensor<2x0xf16>, tensor<2x4xf16>) -> tensor<2x7xf16>
  func.return %c : tensor<2x7xf16>
}

// An empty result stays: nothing can stand for it.
// CHECK-LABEL: func.func @empty_result(
// CHECK-NEXT:  %c = mil.concat %x, %x {axis = 1 : i64} : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x6xf32>
// CHECK-NEXT:  func.return %c : tensor<0x6xf32>
func.func @empty_result(%x: tensor<0x3xf32>) -> tensor<0x6xf32> {
  %c = mil.concat %x, %x {axis = 1 : i64} : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x6xf32>
  func.return %c : tensor<0x6xf32>
}

// No empty operand: unchanged.
// CHECK-LABEL: func.func @none_empty(
// CHECK-NEXT:  %c = mil.concat %x, %y {axis = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
func.func @none_empty(%x: tensor<2x4xf32>, %y: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %c = mil.concat %x, %y {axis = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  func.return %c : tensor<5x4xf32>
}
