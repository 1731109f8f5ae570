// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of matmul, linear and conv.

// CHECK: Operation does not verify: mil.matmul: contraction dimensions differ: operand 'x' [2, 3] and operand 'y' [4, 5] (after transposes [2, 3] x [4, 5])
func.func @matmul_contraction(%x: tensor<2x3xf32>, %y: tensor<4x5xf32>) {
  %r = mil.matmul %x, %y : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// The transposes apply before the contraction check.
// CHECK: Operation does not verify: mil.matmul: contraction dimensions differ: operand 'x' [2, 3] and operand 'y' [3, 5] (after transposes [2, 3] x [5, 3])
func.func @matmul_transpose(%x: tensor<2x3xf32>, %y: tensor<3x5xf32>) {
  %r = mil.matmul %x, %y {transpose_y = true} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.matmul: batch dimensions [2] of operand 'x' [2, 4, 3] and [5] of operand 'y' [5, 3, 4] do not broadcast
func.func @matmul_batch(%x: tensor<2x4x3xf32>, %y: tensor<5x3x4xf32>) {
  %r = mil.matmul %x, %y : (tensor<2x4x3xf32>, tensor<5x3x4xf32>) -> tensor<5x4x4xf32>
  func.return
}

// -----

// coremltools cannot type a rank-1 y.
// CHECK: Operation does not verify: mil.matmul: operand 'y' must have rank >= 2, got shape [3]
func.func @matmul_vector_y(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %r = mil.matmul %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// coremltools mistypes a rank-1 x against a batched y.
// CHECK: Operation does not verify: mil.matmul: operand 'x' [3] must have rank >= 2, or rank 1 against a rank-2 'y' (got [2, 3, 4])
func.func @matmul_vector_x(%x: tensor<3xf32>, %y: tensor<2x3x4xf32>) {
  %r = mil.matmul %x, %y : (tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.matmul: transpose_x is not allowed with a rank-1 operand 'x'
func.func @matmul_transpose_vector(%x: tensor<3xf32>, %y: tensor<3x4xf32>) {
  %r = mil.matmul %x, %y {transpose_x = true} : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.matmul: operands 'x' (f16) and 'y' (f32) must have the same element type
func.func @matmul_dtypes(%x: tensor<2x3xf16>, %y: tensor<3x4xf32>) {
  %r = mil.matmul %x, %y : (tensor<2x3xf16>, tensor<3x4xf32>) -> tensor<2x4xf16>
  func.return
}

// -----

// MIL's linear needs a const weight; weights passed as inputs use matmul.
// CHECK: Operation does not verify: mil.linear: operand 'weight' must be a compile-time constant (computed from mil.const ops only), as MIL requires
func.func @linear_runtime_weight(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  %r = mil.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.linear: last dimension of operand 'x' [2, 8] does not match operand 'weight' [4, 6] (D_in 6)
func.func @linear_d_in() {
  %x = mil.const dense<1.0> : tensor<2x8xf32>
  %w = mil.const dense<1.0> : tensor<4x6xf32>
  %r = mil.linear %x, %w : (tensor<2x8xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.linear: operand 'bias' [8] must have shape [4] (D_out of weight [4, 8])
func.func @linear_bias(%x: tensor<2x8xf32>) {
  %w = mil.const dense<1.0> : tensor<4x8xf32>
  %b = mil.const dense<1.0> : tensor<8xf32>
  %r = mil.linear %x, %w, bias %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// linear's x has rank 1 to 3.
// CHECK: Operation does not verify: mil.linear: operand 'x' must have rank 1 to 3, got shape [1, 2, 3, 8]
func.func @linear_rank(%x: tensor<1x2x3x8xf32>) {
  %w = mil.const dense<1.0> : tensor<4x8xf32>
  %r = mil.linear %x, %w : (tensor<1x2x3x8xf32>, tensor<4x8xf32>) -> tensor<1x2x3x4xf32>
  func.return
}

// -----

// weight is [C_out, C_in/groups, kH, kW].
// CHECK: Operation does not verify: mil.conv: operand 'weight' [16, 4, 1, 1] must be [C_out, C_in/groups, ...] with C_in/groups = 8 (operand 'x' [1, 8, 4, 4], groups 1)
func.func @conv_channels(%x: tensor<1x8x4x4xf32>, %w: tensor<16x4x1x1xf32>) {
  %r = mil.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: C_in 8 of operand 'x' [1, 8, 4, 4] and C_out 6 of operand 'weight' [6, 2, 1, 1] must be divisible by groups 4
func.func @conv_groups(%x: tensor<1x8x4x4xf32>, %w: tensor<6x2x1x1xf32>) {
  %r = mil.conv %x, %w {groups = 4 : i64} : (tensor<1x8x4x4xf32>, tensor<6x2x1x1xf32>) -> tensor<1x6x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: property 'pad_type' is "full", expected one of "valid", "same", "same_lower", "custom"
func.func @conv_pad_type(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  %r = mil.conv %x, %w {pad_type = "full"} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: property 'pad' [1, 1, 1, 1] requires pad_type "custom"
func.func @conv_pad_without_custom(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x3x3xf32>) {
  %r = mil.conv %x, %w {pad = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: property 'strides' [2] must have 2 entries for 2 spatial axes
func.func @conv_strides(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  %r = mil.conv %x, %w {strides = array<i64: 2>} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x2x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: kernel [3, 3] (dilations [1, 1]) does not fit the padded input of operand 'x' [1, 8, 2, 2]
func.func @conv_kernel_too_large(%x: tensor<1x8x2x2xf32>, %w: tensor<16x8x3x3xf32>) {
  %r = mil.conv %x, %w : (tensor<1x8x2x2xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x1x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: operand 'x' must be [N, C_in, *spatial] with 1 to 3 spatial axes, got shape [8, 16]
func.func @conv_rank(%x: tensor<8x16xf32>, %w: tensor<4x8xf32>) {
  %r = mil.conv %x, %w : (tensor<8x16xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

// Dilated convolution needs a const weight.
// CHECK: Operation does not verify: mil.conv: operand 'weight' must be a compile-time constant when dilations are > 1
func.func @conv_dilated_runtime_weight(%x: tensor<1x8x9x9xf32>, %w: tensor<16x8x3x3xf32>) {
  %r = mil.conv %x, %w {dilations = array<i64: 2, 2>} : (tensor<1x8x9x9xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: operand 'bias' [8] must have shape [16] (C_out of weight [16, 8, 1, 1])
func.func @conv_bias(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %b: tensor<8xf32>) {
  %r = mil.conv %x, %w, bias %b : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<8xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.conv: operand 'x' has element type i32, expected one of f16, f32
func.func @conv_int(%x: tensor<1x8x4x4xi32>, %w: tensor<16x8x1x1xi32>) {
  %r = mil.conv %x, %w : (tensor<1x8x4x4xi32>, tensor<16x8x1x1xi32>) -> tensor<1x16x4x4xi32>
  func.return
}
