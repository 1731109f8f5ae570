// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The convolutions: conv and conv_transpose, 1-D and 2-D, bias optional.

// CHECK-LABEL: func.func @conv(
// GENERIC-LABEL: "func.func"() <{sym_name = "conv"
func.func @conv(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %s: tensor<2x3x16xf16>, %ws: tensor<5x3x3xf16>) {
  // CHECK-NEXT: %y = rlx.conv %x, %w bias %b {strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 2, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x10xf32>
  // GENERIC: %y = "rlx.conv"(%x, %w, %b) <{strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 2, 1>, groups = 2 : i64}> : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x10xf32>
  %y = rlx.conv %x, %w bias %b {strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 2, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x10xf32>
  // CHECK-NEXT: %y1 = rlx.conv %s, %ws {dilations = array<i64: 2>} : (tensor<2x3x16xf16>, tensor<5x3x3xf16>) -> tensor<2x5x12xf16>
  // GENERIC-NEXT: %y1 = "rlx.conv"(%s, %ws) <{dilations = array<i64: 2>}> : (tensor<2x3x16xf16>, tensor<5x3x3xf16>) -> tensor<2x5x12xf16>
  %y1 = rlx.conv %s, %ws {dilations = array<i64: 2>} : (tensor<2x3x16xf16>, tensor<5x3x3xf16>) -> tensor<2x5x12xf16>
  func.return
}

// CHECK-LABEL: func.func @conv_transpose(
// GENERIC-LABEL: "func.func"() <{sym_name = "conv_transpose"
func.func @conv_transpose(%x: tensor<1x4x9x9xf32>, %w: tensor<4x3x3x3xf32>, %s: tensor<1x4x7xf32>, %ws: tensor<4x2x4xf32>, %b: tensor<2xf32>) {
  // CHECK-NEXT: %up = rlx.conv_transpose %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x18x17xf32>
  // GENERIC: %up = "rlx.conv_transpose"(%x, %w) <{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>, groups = 2 : i64}> : (tensor<1x4x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x18x17xf32>
  %up = rlx.conv_transpose %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x18x17xf32>
  // CHECK-NEXT: %up1 = rlx.conv_transpose %s, %ws bias %b {strides = array<i64: 3>} : (tensor<1x4x7xf32>, tensor<4x2x4xf32>, tensor<2xf32>) -> tensor<1x2x22xf32>
  %up1 = rlx.conv_transpose %s, %ws bias %b {strides = array<i64: 3>} : (tensor<1x4x7xf32>, tensor<4x2x4xf32>, tensor<2xf32>) -> tensor<1x2x22xf32>
  func.return
}
