// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s

// conv_transpose: pad types, strides, groups, dilations, a bias.

// CHECK-LABEL: func.func @conv_transpose(
func.func @conv_transpose(%x: tensor<1x4x7x6xf32>, %w: tensor<4x3x3x2xf32>, %b: tensor<3xf32>, %s: tensor<2x6x5xf16>, %ws: tensor<6x2x3xf16>) {
  // CHECK-NEXT: %valid = mil.conv_transpose %x, %w : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>) -> tensor<1x3x9x7xf32>
  %valid = mil.conv_transpose %x, %w : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>) -> tensor<1x3x9x7xf32>
  // CHECK-NEXT: %custom = mil.conv_transpose %x, %w, bias %b {pad = array<i64: 1, 0, 0, 2>, pad_type = "custom", strides = array<i64: 2, 3>} : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>, tensor<3xf32>) -> tensor<1x3x14x15xf32>
  %custom = mil.conv_transpose %x, %w, bias %b {pad = array<i64: 1, 0, 0, 2>, pad_type = "custom", strides = array<i64: 2, 3>} : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>, tensor<3xf32>) -> tensor<1x3x14x15xf32>
  // CHECK-NEXT: %same = mil.conv_transpose %s, %ws {pad_type = "same", strides = array<i64: 2>, dilations = array<i64: 2>, groups = 3 : i64} : (tensor<2x6x5xf16>, tensor<6x2x3xf16>) -> tensor<2x6x10xf16>
  %same = mil.conv_transpose %s, %ws {pad_type = "same", strides = array<i64: 2>, dilations = array<i64: 2>, groups = 3 : i64} : (tensor<2x6x5xf16>, tensor<6x2x3xf16>) -> tensor<2x6x10xf16>
  func.return
}
