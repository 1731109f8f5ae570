// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of conv and conv_transpose.

// CHECK: Operation does not verify: rlx.conv: property 'groups' 4 must divide C_in 6 of operand 'input' [1, 6, 8, 8] and C_out 4 of operand 'weight' [4, 3, 3, 3]
func.func @conv_groups(%x: tensor<1x6x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = rlx.conv %x, %w {groups = 4 : i64} : (tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv: operand 'weight' [4, 2, 3, 3] must be [C_out, C_in/groups, ...] = [4, 3, ...] for operand 'input' [1, 6, 8, 8] and groups 2
func.func @conv_weight_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %y = rlx.conv %x, %w {groups = 2 : i64} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv: operand 'bias' [3] must be [4] (C_out of operand 'weight' [4, 3, 3, 3])
func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  %y = rlx.conv %x, %w bias %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv: property 'padding' [1, 1] must have 4 entries for 2 spatial axes
func.func @conv_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = rlx.conv %x, %w {padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv: kernel [3, 3] (dilations [2, 2]) does not fit the padded operand 'input' [1, 3, 4, 4]: spatial axis 0 would have size 0
func.func @conv_kernel_too_large(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = rlx.conv %x, %w {dilations = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv: result type [1, 4, 7, 7] f32 does not match the inferred type [1, 4, 6, 6] f32
func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = rlx.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv: operand 'input' [1, 3, 4, 4, 4] must be [N, C, W] or [N, C, H, W]
func.func @conv_3d(%x: tensor<1x3x4x4x4xf32>, %w: tensor<4x3x1x1x1xf32>) {
  %y = rlx.conv %x, %w : (tensor<1x3x4x4x4xf32>, tensor<4x3x1x1x1xf32>) -> tensor<1x4x4x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv_transpose: property 'output_padding' [2] must be smaller than the stride or the dilation on spatial axis 0 (stride 2, dilation 1)
func.func @conv_transpose_output_padding(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf32>) {
  %y = rlx.conv_transpose %x, %w {strides = array<i64: 2>, output_padding = array<i64: 2>} : (tensor<1x4x8xf32>, tensor<4x2x3xf32>) -> tensor<1x2x19xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.conv_transpose: operand 'weight' [3, 2, 3] must be [C_in, C_out/groups, ...] with C_in = 4 (operand 'input' [1, 4, 8])
func.func @conv_transpose_weight(%x: tensor<1x4x8xf32>, %w: tensor<3x2x3xf32>) {
  %y = rlx.conv_transpose %x, %w : (tensor<1x4x8xf32>, tensor<3x2x3xf32>) -> tensor<1x2x10xf32>
  func.return
}

