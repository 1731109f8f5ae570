// RUN: xdsl-opt %s --verify-diagnostics --parsing-diagnostics --split-input-file | filecheck %s

// Property spelling and property types, and messages that say whether the
// offending type belongs to an operand, a result or a property.

// A misspelled optional property is an error, not a silent default.
// CHECK: Operation does not verify: rlx.matmul: unknown property 'transpose_b' (its properties are transpose_lhs, transpose_rhs)
func.func @misspelled_transpose(%x: tensor<2x4x8xf32>) {
  %0 = rlx.matmul %x, %x {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reduce_sum: unknown property 'keepdims' (its properties are axes, keep_dims)
func.func @misspelled_keep_dims(%x: tensor<2x4xf32>) {
  %0 = rlx.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.param: unknown property 'eps' (its properties are name)
func.func @param_extra() {
  %w = rlx.param "w" {eps = 1.0 : f32} : tensor<2xf32>
  func.return
}

// -----

// Lists are array<i64>, not float arrays truncated to integers.
// CHECK: Operation does not verify: rlx.transpose: property 'perm' must be an i64 array (`array<i64: 0, 1>`), got array<f32: 1.500000e+00, 2.000000e-01>
func.func @float_perm(%x: tensor<2x4xf32>) {
  %0 = "rlx.transpose"(%x) <{perm = array<f32: 1.5, 0.2>}> : (tensor<2x4xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

// The short syntax checks required properties while parsing: the same message.
// CHECK: rlx.rms_norm: property 'eps' must be an f32 float (`1.0e-05 : f32`), got 1.000000e-06 : f64
func.func @f64_eps(%x: tensor<2x4xf32>, %g: tensor<4xf32>) {
  %0 = rlx.rms_norm %x, %g {eps = 1.0e-06 : f64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// An optional property of the wrong kind in the short syntax, too.
// CHECK: rlx.reduce_sum: property 'keep_dims' must be a bool (`true` or `false`), got 1.000000e+00 : f32
func.func @float_keep_dims(%x: tensor<2x4xf32>) {
  %0 = rlx.reduce_sum %x {axes = array<i64: 1>, keep_dims = 1.0 : f32} : (tensor<2x4xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.narrow: property 'start' must be an i64 integer (`-1 : i64`), got 1.000000e+00 : f32
func.func @generic_float_start(%x: tensor<2x4xf32>) {
  %0 = "rlx.narrow"(%x) <{axis = 1 : i64, start = 1.0 : f32, length = 2 : i64}> : (tensor<2x4xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.constant: property 'value' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1)
func.func @f64_constant() {
  %c = rlx.constant dense<1.0> : tensor<2xf64>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.param: result type has a dynamic shape tensor<?xf32>; only static shapes are supported
func.func @dynamic_param() {
  %w = rlx.param "w" : tensor<?xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'bias' [1, 1, 5, 5] does not broadcast to the scores [1, 4, 5, 7]
func.func @bias_shape(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x7x16xf32>, %b: tensor<1x1x5x5xf32>) {
  %0 = rlx.attention %q, %k, %k, %b {mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x7x16xf32>, tensor<1x4x7x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.matmul: batch dimensions [2] of operand 'lhs' [2, 4, 8] and [3] of operand 'rhs' [3, 8, 5] do not broadcast
func.func @batch(%x: tensor<2x4x8xf32>, %y: tensor<3x8x5xf32>) {
  %0 = rlx.matmul %x, %y : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.narrow: length 0 must be at least 1
func.func @empty_narrow(%x: tensor<2x4xf32>) {
  %0 = rlx.narrow %x {axis = 0 : i64, start = 0 : i64, length = 0 : i64} : (tensor<2x4xf32>) -> tensor<0x4xf32>
  func.return
}
