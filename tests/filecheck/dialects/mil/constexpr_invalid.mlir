// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of constexpr_blockwise_shift_scale and constexpr_lut_to_dense
// (MIL's rules in coremltools' iOS18 compression.py).

// A scale dimension that does not divide the data's.
// CHECK: Operation does not verify: mil.constexpr_blockwise_shift_scale: operand 'scale' [8, 5]: dimension 1 (5) does not divide that of operand 'data' [8, 32] (32)
func.func @blocks_do_not_divide() {
  %d = mil.const weight "d" : tensor<8x32xi4>
  %s = mil.const weight "s" : tensor<8x5xf16>
  %r = mil.constexpr_blockwise_shift_scale %d, %s : (tensor<8x32xi4>, tensor<8x5xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

// int32 data is not one of MIL's SrcT.
// CHECK: Operation does not verify: mil.constexpr_blockwise_shift_scale: operand 'data' has element type i32, expected one of i4, ui4, i8, ui8, f16, f32
func.func @int32_data() {
  %d = mil.const dense<1> : tensor<8x32xi32>
  %s = mil.const dense<0.5> : tensor<8x1xf16>
  %r = mil.constexpr_blockwise_shift_scale %d, %s : (tensor<8x32xi32>, tensor<8x1xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

// The offset has the scale's shape.
// CHECK: Operation does not verify: mil.constexpr_blockwise_shift_scale: operand 'offset' [8] must have the shape of operand 'scale' [8, 1]
func.func @offset_shape() {
  %d = mil.const dense<1> : tensor<8x32xi8>
  %s = mil.const dense<0.5> : tensor<8x1xf16>
  %o = mil.const dense<0> : tensor<8xi8>
  %r = mil.constexpr_blockwise_shift_scale %d, %s, offset %o : (tensor<8x32xi8>, tensor<8x1xf16>, tensor<8xi8>) -> tensor<8x32xf16>
  func.return
}

// -----

// A runtime value is no compile-time constant.
// CHECK: Operation does not verify: mil.constexpr_blockwise_shift_scale: operand 'scale' must be a compile-time constant (computed from mil.const ops only), as MIL requires
func.func @runtime_scale(%s: tensor<8x1xf16>) {
  %d = mil.const dense<1> : tensor<8x32xi8>
  %r = mil.constexpr_blockwise_shift_scale %d, %s : (tensor<8x32xi8>, tensor<8x1xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

// The palette size is 2^nbits of the indices.
// CHECK: Operation does not verify: mil.constexpr_lut_to_dense: operand 'lut' [1, 1, 1, 1, 64, 1] has 64 entries per palette; uint4 indices need 16
func.func @palette_size() {
  %i = mil.const weight "i" : tensor<16x8x1x1xui4>
  %l = mil.const weight "l" : tensor<1x1x1x1x64x1xf16>
  %r = mil.constexpr_lut_to_dense %i, %l : (tensor<16x8x1x1xui4>, tensor<1x1x1x1x64x1xf16>) -> tensor<16x8x1x1xf16>
  func.return
}

// -----

// The LUT has the indices' rank plus two.
// CHECK: Operation does not verify: mil.constexpr_lut_to_dense: operand 'lut' [1, 16, 1] must have rank 4 (that of operand 'indices' [16, 8] plus palette and vector dimensions)
func.func @lut_rank() {
  %i = mil.const weight "i" : tensor<16x8xui4>
  %l = mil.const weight "l" : tensor<1x16x1xf16>
  %r = mil.constexpr_lut_to_dense %i, %l : (tensor<16x8xui4>, tensor<1x16x1xf16>) -> tensor<16x8xf16>
  func.return
}

// -----

// Signed indices are not MIL's IndicesT.
// CHECK: Operation does not verify: mil.constexpr_lut_to_dense: operand 'indices' has element type i4, expected one of ui1, ui2, ui3, ui4, ui6, ui8
func.func @signed_indices() {
  %i = mil.const weight "i" : tensor<16x8xi4>
  %l = mil.const weight "l" : tensor<1x1x16x1xf16>
  %r = mil.constexpr_lut_to_dense %i, %l : (tensor<16x8xi4>, tensor<1x1x16x1xf16>) -> tensor<16x8xf16>
  func.return
}

// -----

// A vector LUT needs its axis.
// CHECK: Operation does not verify: mil.constexpr_lut_to_dense: property 'vector_axis' is required with vector size 3 (operand 'lut' [1, 1, 4, 3])
func.func @vector_without_axis() {
  %i = mil.const weight "i" : tensor<4x3xui2>
  %l = mil.const weight "l" : tensor<1x1x4x3xf16>
  %r = mil.constexpr_lut_to_dense %i, %l : (tensor<4x3xui2>, tensor<1x1x4x3xf16>) -> tensor<4x3xf16>
  func.return
}

// -----

// Compressed data is no tensor to compute on.
// CHECK: Operation does not verify: mil.add: operand 'x' has unsupported element type ui4
func.func @compute_on_storage() {
  %i = mil.const weight "i" : tensor<4xui4>
  %r = mil.add %i, %i : (tensor<4xui4>, tensor<4xui4>) -> tensor<4xui4>
  func.return
}
