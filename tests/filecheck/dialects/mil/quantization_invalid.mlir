// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of quantize, dequantize and constexpr_affine_dequantize.

// Of MIL's int8 and uint8 only int8 has an element type here.
// CHECK: Operation does not verify: mil.quantize: property 'output_dtype' is "uint8", expected one of "int8"
func.func @quantize_uint8(%x: tensor<4xf32>) {
  %s = mil.const dense<0.1> : tensor<f32>
  %r = mil.quantize %x, %s {output_dtype = "uint8"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi8>
  func.return
}

// -----

// quantize's scale has the input's dtype.
// CHECK: Operation does not verify: mil.quantize: operands 'input' (f16) and 'scale' (f32) must have the same element type
func.func @quantize_scale_type(%x: tensor<4xf16>) {
  %s = mil.const dense<0.1> : tensor<f32>
  %r = mil.quantize %x, %s {output_dtype = "int8"} : (tensor<4xf16>, tensor<f32>) -> tensor<4xi8>
  func.return
}

// -----

// Vector scales are per channel along axis.
// CHECK: Operation does not verify: mil.quantize: property 'axis' is required with operand 'scale' [4] (per-channel parameters)
func.func @quantize_vector_without_axis(%x: tensor<4x8xf32>) {
  %s = mil.const dense<0.1> : tensor<4xf32>
  %r = mil.quantize %x, %s {output_dtype = "int8"} : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.quantize: property 'axis' is only allowed with vector (per-channel) operand 'scale', got []
func.func @quantize_scalar_with_axis(%x: tensor<4x8xf32>) {
  %s = mil.const dense<0.1> : tensor<f32>
  %r = mil.quantize %x, %s {axis = 0 : i64, output_dtype = "int8"} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.quantize: operand 'scale' [4] must be a scalar or have shape [8] (axis 1 of operand 'input' [4, 8])
func.func @quantize_vector_size(%x: tensor<4x8xf32>) {
  %s = mil.const dense<0.1> : tensor<4xf32>
  %r = mil.quantize %x, %s {axis = 1 : i64, output_dtype = "int8"} : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.quantize: operand 'zero_point' has element type i32, expected one of i8
func.func @quantize_zero_point_type(%x: tensor<4xf32>) {
  %s = mil.const dense<0.1> : tensor<f32>
  %z = mil.const dense<0> : tensor<i32>
  %r = mil.quantize %x, zero_point %z, %s {output_dtype = "int8"} : (tensor<4xf32>, tensor<i32>, tensor<f32>) -> tensor<4xi8>
  func.return
}

// -----

// MIL's scale and zero_point are consts.
// CHECK: Operation does not verify: mil.quantize: operand 'scale' must be a compile-time constant (computed from mil.const ops only), as MIL requires
func.func @quantize_runtime_scale(%x: tensor<4xf32>, %s: tensor<f32>) {
  %r = mil.quantize %x, %s {output_dtype = "int8"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.dequantize: operand 'input' has element type f16, expected one of i8
func.func @dequantize_input_type(%x: tensor<4xf16>) {
  %s = mil.const dense<0.1> : tensor<f16>
  %r = mil.dequantize %x, %s : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  func.return
}

// -----

// scale and zero_point are both scalars or both vectors.
// CHECK: Operation does not verify: mil.dequantize: operands 'scale' [4] and 'zero_point' [] must both be scalars or both be vectors
func.func @dequantize_mixed_ranks(%x: tensor<4x8xi8>) {
  %s = mil.const dense<0.1> : tensor<4xf16>
  %z = mil.const dense<0> : tensor<i8>
  %r = mil.dequantize %x, zero_point %z, %s {axis = 0 : i64} : (tensor<4x8xi8>, tensor<i8>, tensor<4xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// The result has the scale's dtype.
// CHECK: Operation does not verify: mil.dequantize: result type [4] f32 does not match the inferred type [4] f16
func.func @dequantize_result(%x: tensor<4xi8>) {
  %s = mil.const dense<0.1> : tensor<f16>
  %r = mil.dequantize %x, %s : (tensor<4xi8>, tensor<f16>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.constexpr_affine_dequantize: operand 'zero_point' has element type i32, expected one of i8, f32
func.func @constexpr_zero_point_type() {
  %d = mil.const dense<1> : tensor<4x8xi8>
  %z = mil.const dense<0> : tensor<i32>
  %s = mil.const dense<0.1> : tensor<f16>
  %r = mil.constexpr_affine_dequantize %d, %z, %s {axis = 0 : i64} : (tensor<4x8xi8>, tensor<i32>, tensor<f16>) -> tensor<4x8xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.constexpr_affine_dequantize: property 'axis' value 2 is out of range [-2, 2) for operand 'quantized_data' [4, 8]
func.func @constexpr_axis() {
  %d = mil.const dense<1> : tensor<4x8xi8>
  %z = mil.const dense<0> : tensor<i8>
  %s = mil.const dense<0.1> : tensor<f16>
  %r = mil.constexpr_affine_dequantize %d, %z, %s {axis = 2 : i64} : (tensor<4x8xi8>, tensor<i8>, tensor<f16>) -> tensor<4x8xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.constexpr_affine_dequantize: operand 'scale' [8] must be a scalar or have shape [4] (axis 0 of operand 'quantized_data' [4, 8])
func.func @constexpr_vector_size() {
  %d = mil.const dense<1> : tensor<4x8xi8>
  %z = mil.const dense<0> : tensor<i8>
  %s = mil.const dense<0.1> : tensor<8xf16>
  %r = mil.constexpr_affine_dequantize %d, %z, %s {axis = 0 : i64} : (tensor<4x8xi8>, tensor<i8>, tensor<8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Every input of a constexpr op is a const.
// CHECK: Operation does not verify: mil.constexpr_affine_dequantize: operand 'quantized_data' must be a compile-time constant (computed from mil.const ops only), as MIL requires
func.func @constexpr_runtime_data(%d: tensor<4x8xi8>) {
  %z = mil.const dense<0> : tensor<i8>
  %s = mil.const dense<0.1> : tensor<f16>
  %r = mil.constexpr_affine_dequantize %d, %z, %s {axis = 0 : i64} : (tensor<4x8xi8>, tensor<i8>, tensor<f16>) -> tensor<4x8xf16>
  func.return
}
