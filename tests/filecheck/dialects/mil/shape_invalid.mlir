// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the shape ops.

// CHECK: Operation does not verify: mil.reshape: property 'shape' [5, 5] (= [5, 5]) has a different element count than operand 'x' [2, 3, 4]
func.func @reshape_count(%x: tensor<2x3x4xf32>) {
  %r = mil.reshape %x {shape = array<i64: 5, 5>} : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reshape: property 'shape' [-1, -1] may hold one -1 and no other negative entries
func.func @reshape_two_inferred(%x: tensor<2x3x4xf32>) {
  %r = mil.reshape %x {shape = array<i64: -1, -1>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  func.return
}

// -----

// The -1 must leave a whole number of elements.
// CHECK: Operation does not verify: mil.reshape: property 'shape' [5, -1] cannot hold the elements of operand 'x' [2, 3, 4]
func.func @reshape_inferred_fraction(%x: tensor<2x3x4xf32>) {
  %r = mil.reshape %x {shape = array<i64: 5, -1>} : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return
}

// -----

// iOS17 0s align from the right: [0, -1] keeps x's second-to-last axis.
// CHECK: Operation does not verify: mil.reshape: result type [2, 12] f32 does not match the inferred type [3, 8] f32
func.func @reshape_zero(%x: tensor<2x3x4xf32>) {
  %r = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.transpose: property 'perm' [0, 2, -1] repeats an axis of operand 'x' [2, 3, 4]
func.func @transpose_repeat(%x: tensor<2x3x4xf32>) {
  %r = mil.transpose %x {perm = array<i64: 0, 2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.transpose: property 'perm' [1, 0] must have one entry per axis of operand 'x' [2, 3, 4]
func.func @transpose_length(%x: tensor<2x3x4xf32>) {
  %r = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.slice_by_size: slice begin 70 size 16 on axis 3 is out of range for operand 'x' [1, 64, 1, 80]
func.func @slice_past_end(%x: tensor<1x64x1x80xf16>) {
  %r = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 70>, size = array<i64: 1, 64, 1, 16>} : (tensor<1x64x1x80xf16>) -> tensor<1x64x1x16xf16>
  func.return
}

// -----

// begin counts from the start; MIL's inference mistypes negative begins.
// CHECK: Operation does not verify: mil.slice_by_size: slice begin -2 size -1 on axis 0 is out of range for operand 'x' [8]
func.func @slice_negative_begin(%x: tensor<8xf32>) {
  %r = mil.slice_by_size %x {begin = array<i64: -2>, size = array<i64: -1>} : (tensor<8xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.slice_by_size: property 'begin' [0] must have one entry per axis of operand 'x' [2, 8]
func.func @slice_length(%x: tensor<2x8xf32>) {
  %r = mil.slice_by_size %x {begin = array<i64: 0>, size = array<i64: 2>} : (tensor<2x8xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.concat: operand 'values[1]' [3, 3] must match operand 'values[0]' [2, 3] in all dimensions but the axis (axis 1)
func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  %r = mil.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.concat: operand 'values[1]' [6] must match operand 'values[0]' [2, 3] in all dimensions but the axis (axis 0)
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<6xf32>) {
  %r = mil.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<8x3xf32>
  func.return
}

// -----

// Interleaving needs equal shapes.
// CHECK: Operation does not verify: mil.concat: operand 'values[1]' [4, 3] must match operand 'values[0]' [2, 3] in the shape (axis 0)
func.func @concat_interleave(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  %r = mil.concat %a, %b {axis = 0 : i64, interleave = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.concat: operands 'values[0]' (f32) and 'values[1]' (f16) must have the same element type
func.func @concat_dtypes(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  %r = mil.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.concat: property 'axis' value 2 is out of range [-2, 2) for operand 'values[0]' [2, 3]
func.func @concat_axis(%a: tensor<2x3xf32>) {
  %r = mil.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.concat: operand 'values' must not be empty
func.func @concat_empty() {
  %r = "mil.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.tile: property 'reps' [2, 0] must hold one positive entry per axis of operand 'x' [2, 3]
func.func @tile_reps(%x: tensor<2x3xf32>) {
  %r = mil.tile %x {reps = array<i64: 2, 0>} : (tensor<2x3xf32>) -> tensor<4x0xf32>
  func.return
}

// -----

// MIL's tile has no int8.
// CHECK: Operation does not verify: mil.tile: operand 'x' has element type i8, expected one of f16, f32, i32, i1
func.func @tile_int8(%x: tensor<2x3xi8>) {
  %r = mil.tile %x {reps = array<i64: 1, 2>} : (tensor<2x3xi8>) -> tensor<2x6xi8>
  func.return
}

// -----

// Axes index the result, rank(x) + len(axes).
// CHECK: Operation does not verify: mil.expand_dims: property 'axes' value 3 is out of range [-3, 3) for operand 'x' [2, 3]
func.func @expand_dims_axis(%x: tensor<2x3xf32>) {
  %r = mil.expand_dims %x {axes = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.squeeze: operand 'x' must have rank >= 1, got []
func.func @squeeze_scalar(%x: tensor<f32>) {
  %r = mil.squeeze %x : (tensor<f32>) -> tensor<f32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.squeeze: property 'axes' value 2 is out of range [-2, 2) for operand 'x' [1, 4]
func.func @squeeze_axis(%x: tensor<1x4xf32>) {
  %r = mil.squeeze %x {axes = array<i64: 2>} : (tensor<1x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.split: num_splits 2 does not divide axis 1 of operand 'x' [2, 5]
func.func @split_uneven(%x: tensor<2x5xf32>) {
  %r:2 = mil.split %x {axis = 1 : i64, num_splits = 2 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.split: split_sizes [2, 2] must be positive and sum to axis 1 of operand 'x' [2, 5]
func.func @split_sizes(%x: tensor<2x5xf32>) {
  %r:2 = mil.split %x {axis = 1 : i64, split_sizes = array<i64: 2, 2>} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.split: one of the properties 'num_splits' and 'split_sizes' is required
func.func @split_neither(%x: tensor<2x4xf32>) {
  %r:2 = mil.split %x {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.split: num_splits 3 differs from the length of split_sizes [1, 3]
func.func @split_disagree(%x: tensor<2x4xf32>) {
  %r:2 = mil.split %x {axis = 1 : i64, num_splits = 3 : i64, split_sizes = array<i64: 1, 3>} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.split: expected 2 results, got 3
func.func @split_results(%x: tensor<2x4xf32>) {
  %r:3 = mil.split %x {axis = 1 : i64, num_splits = 2 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.pixel_shuffle: operand 'x' [1, 8, 3, 3] has 8 channels, not a multiple of upscale_factor² = 9
func.func @pixel_shuffle_channels(%x: tensor<1x8x3x3xf32>) {
  %r = mil.pixel_shuffle %x {upscale_factor = 3 : i64} : (tensor<1x8x3x3xf32>) -> tensor<1x0x9x9xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.pixel_unshuffle: operand 'x' must have rank 4 [N, C, H, W], got [4, 6, 4]
func.func @pixel_unshuffle_rank(%x: tensor<4x6x4xf32>) {
  %r = mil.pixel_unshuffle %x {downscale_factor = 2 : i64} : (tensor<4x6x4xf32>) -> tensor<16x3x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.pixel_unshuffle: operand 'x' has element type i32, expected one of f16, f32
func.func @pixel_unshuffle_int(%x: tensor<1x4x6x4xi32>) {
  %r = mil.pixel_unshuffle %x {downscale_factor = 2 : i64} : (tensor<1x4x6x4xi32>) -> tensor<1x16x3x2xi32>
  func.return
}
