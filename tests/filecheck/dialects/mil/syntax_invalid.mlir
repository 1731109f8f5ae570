// RUN: xdsl-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Parse errors of the short syntax: ops with optional MIL inputs write
// required inputs positionally and optional ones tagged with their MIL name,
// in MIL's input order.

// CHECK: mil.linear: unexpected operand 'gamma'; operands are x, weight, bias in this order, optional ones written `name %value`
func.func @linear_tag(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  %r = mil.linear %x, %w, gamma %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// An optional input needs its tag.
// CHECK: mil.conv: unexpected operand; operands are x, weight, bias in this order, optional ones written `name %value`
func.func @conv_untagged_bias(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %b: tensor<16xf32>) {
  %r = mil.conv %x, %w, %b : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// beta comes after gamma.
// CHECK: mil.layer_norm: unexpected operand 'gamma'; operands are x, gamma, beta in this order, optional ones written `name %value`
func.func @layer_norm_order(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %r = mil.layer_norm %x, beta %g, gamma %g : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return
}

// -----

// CHECK: mil.quantize: missing operand 'scale'
func.func @quantize_missing_scale(%x: tensor<4xf32>, %zp: tensor<i8>) {
  %r = mil.quantize %x, zero_point %zp {output_dtype = "int8"} : (tensor<4xf32>, tensor<i8>) -> tensor<4xi8>
  func.return
}

// -----

// CHECK: mil.const weight expects a tensor type
func.func @const_weight_type() {
  %w = mil.const weight "w" : f32
  func.return
}

// -----

// CHECK: mil.const expects a dense elements value or `weight "name"`
func.func @const_value() {
  %w = mil.const 1.0 : f32
  func.return
}

// -----

// The short syntax checks required properties as it parses; a property of
// the wrong kind is a parse error naming the op.
// CHECK: mil.transpose: Expected attribute i64 but got i8
func.func @transpose_i8_perm_short(%x: tensor<2x3xf32>) {
  %r = mil.transpose %x {perm = array<i8: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
