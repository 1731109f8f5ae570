// RUN: xdsl-opt %s --verify-diagnostics --parsing-diagnostics --split-input-file | filecheck %s

// Verifier errors of matmul and the shape ops.

// [4, 16] x [8, 32]: the contraction dimensions 16 and 8 differ.
// CHECK: Operation does not verify: rlx.matmul: contraction dimensions differ: operand 'lhs' [4, 16] and operand 'rhs' [8, 32] (after transposes [4, 16] x [8, 32])
func.func @matmul_contraction(%x: tensor<4x16xf32>, %w: tensor<8x32xf32>) {
  %y = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  func.return
}

// -----

// With transpose_rhs the weight must be [N, K]: [32, 16], not [16, 32].
// CHECK: Operation does not verify: rlx.matmul: contraction dimensions differ: operand 'lhs' [4, 16] and operand 'rhs' [16, 32] (after transposes [4, 16] x [32, 16])
func.func @matmul_transposed_rhs(%x: tensor<4x16xf32>, %w: tensor<16x32xf32>) {
  %y = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.matmul: contraction dimensions differ: operand 'lhs' [4, 16] and operand 'rhs' [16, 32] (after transposes [16, 4] x [16, 32])
func.func @matmul_transposed_lhs(%x: tensor<4x16xf32>, %w: tensor<16x32xf32>) {
  %y = rlx.matmul %x, %w {transpose_lhs = true} : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.matmul: operand 'lhs' must have rank >= 2, got shape [16]
func.func @matmul_rank1(%x: tensor<16xf32>, %w: tensor<16x32xf32>) {
  %y = rlx.matmul %x, %w : (tensor<16xf32>, tensor<16x32xf32>) -> tensor<32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.matmul: result type [4, 5] f32 does not match the inferred type [2, 4, 5] f32
func.func @matmul_result(%a: tensor<2x4x8xf32>, %b: tensor<8x5xf32>) {
  %y = rlx.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.matmul: operands 'lhs' (f16) and 'rhs' (f32) must have the same element type
func.func @matmul_element_types(%a: tensor<4x8xf16>, %b: tensor<8x5xf32>) {
  %y = rlx.matmul %a, %b : (tensor<4x8xf16>, tensor<8x5xf32>) -> tensor<4x5xf16>
  func.return
}

// -----

// Flags are BoolAttr.
// CHECK: rlx.matmul: property 'transpose_rhs' must be a bool (`true` or `false`), got 1 : i64
func.func @matmul_flag_not_bool(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) {
  %y = rlx.matmul %a, %b {transpose_rhs = 1 : i64} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reshape: cannot reshape operand 'input' [2, 3, 4] (24 elements) to [5, 5] (25 elements)
func.func @reshape_count(%x: tensor<2x3x4xf32>) {
  %y = rlx.reshape %x : tensor<2x3x4xf32> -> tensor<5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reshape: result element type f16 differs from the input's f32
func.func @reshape_element(%x: tensor<2x3xf32>) {
  %y = rlx.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.transpose: perm [0, 2, 2] is not a permutation of the axes of operand 'input' [2, 3, 4]
func.func @transpose_repeated(%x: tensor<2x3x4xf32>) {
  %y = rlx.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.transpose: perm [1, 0] is not a permutation of the axes of operand 'input' [2, 3, 4]
func.func @transpose_length(%x: tensor<2x3x4xf32>) {
  %y = rlx.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.transpose: result type [4, 3, 2] f32 does not match the inferred type [4, 2, 3] f32
func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  %y = rlx.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.transpose: property 'perm' must be an i64 array (`array<i64: 0, 1>`), got [1 : i64, 0 : i64]
func.func @transpose_perm_list(%x: tensor<2x3xf32>) {
  %y = "rlx.transpose"(%x) <{perm = [1, 0]}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// The slice [8, 12) does not fit in an axis of size 10.
// CHECK: Operation does not verify: rlx.narrow: slice [8, 12) is out of bounds for axis 1 of operand 'input' [2, 10]
func.func @narrow_out_of_bounds(%x: tensor<2x10xf32>) {
  %y = rlx.narrow %x {axis = 1 : i64, start = 8 : i64, length = 4 : i64} : (tensor<2x10xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.narrow: slice [-1, 0) is out of bounds for axis 1 of operand 'input' [2, 10]
func.func @narrow_negative_start(%x: tensor<2x10xf32>) {
  %y = rlx.narrow %x {axis = 1 : i64, start = -1 : i64, length = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.narrow: property 'axis' value -3 is out of range [-2, 2) (rank 2)
func.func @narrow_axis(%x: tensor<2x10xf32>) {
  %y = rlx.narrow %x {axis = -3 : i64, start = 0 : i64, length = 1 : i64} : (tensor<2x10xf32>) -> tensor<1x10xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.narrow: result type [2, 5] f32 does not match the inferred type [2, 3] f32
func.func @narrow_result(%x: tensor<2x10xf32>) {
  %y = rlx.narrow %x {axis = 1 : i64, start = 2 : i64, length = 3 : i64} : (tensor<2x10xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'length' expected in operation 'rlx.narrow'
func.func @narrow_missing_length(%x: tensor<2x10xf32>) {
  %y = rlx.narrow %x {axis = 1 : i64, start = 2 : i64} : (tensor<2x10xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// Concatenation along axis 1 needs equal sizes on axis 0.
// CHECK: Operation does not verify: rlx.concat: operand 'inputs#1' [4, 5] must match operand 'inputs#0' [2, 3] in all dimensions but the axis (axis 1)
func.func @concat_off_axis(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %y = rlx.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.concat: operand 'inputs#1' [2, 3, 1] must match operand 'inputs#0' [2, 3] in all dimensions but the axis (axis 0)
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  %y = rlx.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.concat: operands 'inputs#0' (f32) and 'inputs#1' (f16) must have the same element type
func.func @concat_element(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  %y = rlx.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.concat: property 'axis' value 2 is out of range [-2, 2) for operand 'inputs#0' [2, 3]
func.func @concat_axis(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %y = rlx.concat %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.concat: result type [2, 15] f32 does not match the inferred type [2, 8] f32
func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  %y = rlx.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x15xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.concat: expects at least one input
func.func @concat_no_inputs() {
  %y = "rlx.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.expand: operand 'input' [3, 4] does not broadcast to [2, 4]
func.func @expand_not_broadcastable(%x: tensor<3x4xf32>) {
  %y = rlx.expand %x : tensor<3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.expand: operand 'input' [1, 1, 4] does not broadcast to [3, 4]
func.func @expand_lower_rank(%x: tensor<1x1x4xf32>) {
  %y = rlx.expand %x : tensor<1x1x4xf32> -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.expand: result element type f32 differs from the input's i32
func.func @expand_element(%x: tensor<4xi32>) {
  %y = rlx.expand %x : tensor<4xi32> -> tensor<2x4xf32>
  func.return
}

// -----

// Token ids are i32.
// CHECK: Operation does not verify: rlx.gather: operand 'indices' must be i32, got i8
func.func @gather_i8_indices(%table: tensor<2048x64xf32>, %ids: tensor<4xi8>) {
  %y = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<2048x64xf32>, tensor<4xi8>) -> tensor<4x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.gather: operand 'indices' must be i32, got f32
func.func @gather_float_indices(%table: tensor<2048x64xf32>, %ids: tensor<4xf32>) {
  %y = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<2048x64xf32>, tensor<4xf32>) -> tensor<4x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.gather: result type [4, 2047] f32 does not match the inferred type [4, 2048] f32
func.func @gather_result(%table: tensor<32000x2048xf32>, %ids: tensor<4xi32>) {
  %y = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<32000x2048xf32>, tensor<4xi32>) -> tensor<4x2047xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.gather: property 'axis' value 2 is out of range [-2, 2) (rank 2)
func.func @gather_axis(%table: tensor<4x2048xf32>, %ids: tensor<3xi32>) {
  %y = rlx.gather %table, %ids {axis = 2 : i64} : (tensor<4x2048xf32>, tensor<3xi32>) -> tensor<4x2048x3xf32>
  func.return
}
