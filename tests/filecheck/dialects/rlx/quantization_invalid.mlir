// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of rlx.quantize and rlx.dequantize.

// CHECK: Operation does not verify: rlx.quantize: zero_point 128 is outside the int8 range
func.func @quantize_zero_point_high(%x: tensor<4x32xf32>) {
  %q = rlx.quantize %x {scale = 1.0e-01 : f32, zero_point = 128 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.quantize: zero_point -129 is outside the int8 range
func.func @quantize_zero_point_low(%x: tensor<4x32xf32>) {
  %q = rlx.quantize %x {scale = 1.0e-01 : f32, zero_point = -129 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.quantize: scale 0.0 must be a positive finite number
func.func @quantize_scale_zero(%x: tensor<4x32xf32>) {
  %q = rlx.quantize %x {scale = 0.0 : f32, zero_point = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.quantize: scale -0.5 must be a positive finite number
func.func @quantize_scale_negative(%x: tensor<4x32xf32>) {
  %q = rlx.quantize %x {scale = -5.0e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'zero_point' expected in operation 'rlx.quantize'
func.func @quantize_missing_zero_point(%x: tensor<4x32xf32>) {
  %q = rlx.quantize %x {scale = 5.0e-01 : f32} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.quantize: operand 'input' must have a float element type (f16 or f32), got i32
func.func @quantize_integer_input(%x: tensor<4x32xi32>) {
  %q = rlx.quantize %x {scale = 5.0e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xi32>) -> tensor<4x32xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.quantize: result type [4, 32] i32 does not match the inferred type [4, 32] i8
func.func @quantize_result(%x: tensor<4x32xf32>) {
  %q = rlx.quantize %x {scale = 5.0e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi32>
  func.return
}

// -----

// dequantize reads int8 data.
// CHECK: Operation does not verify: rlx.dequantize: operand 'input' must be i8, got i32
func.func @dequantize_i32_input(%q: tensor<4x32xi32>) {
  %x = rlx.dequantize %q {scale = 5.0e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xi32>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.dequantize: operand 'input' must be i8, got f16
func.func @dequantize_float_input(%q: tensor<4x32xf16>) {
  %x = rlx.dequantize %q {scale = 5.0e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xf16>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.dequantize: result type tensor<128xf32> must be an f16 or f32 tensor of shape [4, 32]
func.func @dequantize_result_shape(%q: tensor<4x32xi8>) {
  %x = rlx.dequantize %q {scale = 5.0e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xi8>) -> tensor<128xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.dequantize: zero_point 200 is outside the int8 range
func.func @dequantize_zero_point(%q: tensor<4x32xi8>) {
  %x = rlx.dequantize %q {scale = 5.0e-01 : f32, zero_point = 200 : i64} : (tensor<4x32xi8>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.dequantize: scale -1.0 must be a positive finite number
func.func @dequantize_scale(%q: tensor<4x32xi8>) {
  %x = rlx.dequantize %q {scale = -1.0 : f32, zero_point = 0 : i64} : (tensor<4x32xi8>) -> tensor<4x32xf16>
  func.return
}
