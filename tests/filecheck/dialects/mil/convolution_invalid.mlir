// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// CHECK: Operation does not verify: mil.conv_transpose: operand 'weight' [3, 3, 3, 3] must be [C_in, C_out/groups, ...] with C_in = 4 (operand 'x' [1, 4, 7, 7])
func.func @weight_channels(%x: tensor<1x4x7x7xf32>, %w: tensor<3x3x3x3xf32>) {
  %y = mil.conv_transpose %x, %w : (tensor<1x4x7x7xf32>, tensor<3x3x3x3xf32>) -> tensor<1x3x9x9xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv_transpose: property 'pad' [1, 1, 1, 1] requires pad_type "custom"
func.func @pad_without_custom(%x: tensor<1x4x7x7xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = mil.conv_transpose %x, %w {pad = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x7x7xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv_transpose: property 'output_shape' [1, 3, 10, 10] must be [1, 3, 9, 9], the shape the padding gives (MIL leaves another size's placement open)
func.func @output_shape(%x: tensor<1x4x7x7xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = mil.conv_transpose %x, %w {output_shape = array<i64: 1, 3, 10, 10>} : (tensor<1x4x7x7xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x10x10xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv_transpose: operand 'bias' [4] must have shape [6] (C_out of weight [4, 3, 3, 3], groups 2)
func.func @bias(%x: tensor<1x4x7x7xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) {
  %y = mil.conv_transpose %x, %w, bias %b {groups = 2 : i64} : (tensor<1x4x7x7xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x6x9x9xf32>
  func.return
}
