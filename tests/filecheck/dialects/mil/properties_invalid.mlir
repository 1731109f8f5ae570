// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Property kinds: integers are `i64` IntegerAttr, lists `array<i64: ...>`,
// floats `f32` FloatAttr, flags BoolAttr, choices StringAttr. A property of
// another kind is an error naming the op and the property, not a value that
// verifies and prints as a MIL input of the wrong type.

// CHECK: Operation does not verify: mil.softmax: property 'axis' must be an i64 integer (`-1 : i64`), got true
func.func @softmax_bool_axis(%x: tensor<2x3xf32>) {
  %r = mil.softmax %x {axis = true} : tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.gather: property 'axis' must be an i64 integer (`-1 : i64`), got true
func.func @gather_bool_axis(%x: tensor<4x3xf32>, %i: tensor<2xi32>) {
  %r = mil.gather %x, %i {axis = true} : (tensor<4x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.quantize: property 'axis' must be an i64 integer (`-1 : i64`), got true
func.func @quantize_bool_axis(%x: tensor<4x3xf32>) {
  %s = mil.const dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %r = mil.quantize %x, scale %s {axis = true, output_dtype = "int8"} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.concat: property 'axis' must be an i64 integer (`-1 : i64`), got 0 : i32
func.func @concat_i32_axis(%x: tensor<2x3xf32>) {
  %r = "mil.concat"(%x, %x) <{axis = 0 : i32}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_sum: property 'axes' must be an i64 array (`array<i64: 0, 1>`), got array<f32: 1.000000e+00>
func.func @reduce_float_axes(%x: tensor<2x3xf32>) {
  %r = mil.reduce_sum %x {axes = array<f32: 1.0>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.transpose: property 'perm' must be an i64 array (`array<i64: 0, 1>`), got array<i8: 1, 0>
func.func @transpose_i8_perm(%x: tensor<2x3xf32>) {
  %r = "mil.transpose"(%x) <{perm = array<i8: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.layer_norm: property 'epsilon' must be an f32 float (`1.0e-05 : f32`), got 1.000000e-05 : f64
func.func @layer_norm_f64_epsilon(%x: tensor<2x3xf32>) {
  %r = mil.layer_norm %x {epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_max: property 'keep_dims' must be a bool (`true` or `false`), got 1 : i64
func.func @reduce_integer_keep_dims(%x: tensor<2x3xf32>) {
  %r = mil.reduce_max %x {axes = array<i64: 1>, keep_dims = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.cast: property 'dtype' must be a string (`"name"`), got 1 : i64
func.func @cast_integer_dtype(%x: tensor<2x3xf32>) {
  %r = "mil.cast"(%x) <{dtype = 1 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf16>
  func.return
}

