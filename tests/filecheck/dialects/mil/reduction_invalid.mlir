// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the reductions, softmax, layer_norm, cumsum, topk and
// argsort.

// CHECK: Operation does not verify: mil.reduce_sum: property 'axes' value 2 is out of range [-2, 2) for operand 'x' [2, 3]
func.func @reduce_axis(%x: tensor<2x3xf32>) {
  %r = mil.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_max: property 'axes' [1, -1] repeats an axis of operand 'x' [2, 3]
func.func @reduce_repeat(%x: tensor<2x3xf32>) {
  %r = mil.reduce_max %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// An absent axes list already means all axes.
// CHECK: Operation does not verify: mil.reduce_mean: property 'axes' must not be empty (omit it for all)
func.func @reduce_empty_axes(%x: tensor<2x3xf32>) {
  %r = mil.reduce_mean %x {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_min: operand 'x' has element type i1, expected one of f16, f32, i32
func.func @reduce_bool(%x: tensor<2x3xi1>) {
  %r = mil.reduce_min %x : (tensor<2x3xi1>) -> tensor<i1>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_sum: result type [2] f32 does not match the inferred type [2, 1] f32
func.func @reduce_keep_dims(%x: tensor<2x3xf32>) {
  %r = mil.reduce_sum %x {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.softmax: property 'axis' value -3 is out of range [-2, 2) for operand 'x' [2, 3]
func.func @softmax_axis(%x: tensor<2x3xf32>) {
  %r = mil.softmax %x {axis = -3 : i64} : tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.softmax: operand 'x' has element type i32, expected one of f16, f32
func.func @softmax_int(%x: tensor<2x3xi32>) {
  %r = mil.softmax %x : tensor<2x3xi32>
  func.return
}

// -----

// gamma has the shape of x on the normalized axes.
// CHECK: Operation does not verify: mil.layer_norm: operand 'gamma' [4] must have shape [3, 4] (operand 'x' [2, 3, 4] on axes [1, 2])
func.func @layer_norm_gamma_shape(%x: tensor<2x3x4xf32>) {
  %g = mil.const dense<1.0> : tensor<4xf32>
  %r = mil.layer_norm %x, gamma %g {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

// MIL's layer_norm needs const gamma and beta.
// CHECK: Operation does not verify: mil.layer_norm: operand 'gamma' must be a compile-time constant (computed from mil.const ops only), as MIL requires
func.func @layer_norm_runtime_gamma(%x: tensor<2x4xf32>, %g: tensor<4xf32>) {
  %r = mil.layer_norm %x, gamma %g {axes = array<i64: 1>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.layer_norm: operands 'gamma' (f32) and 'beta' (f16) must have the same element type
func.func @layer_norm_param_types(%x: tensor<2x4xf32>) {
  %g = mil.const dense<1.0> : tensor<4xf32>
  %b = mil.const dense<0.0> : tensor<4xf16>
  %r = mil.layer_norm %x, gamma %g, beta %b {axes = array<i64: 1>} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf16>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.layer_norm: operand 'x' has element type i32, expected one of f16, f32
func.func @layer_norm_int(%x: tensor<2x4xi32>) {
  %r = mil.layer_norm %x : (tensor<2x4xi32>) -> tensor<2x4xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: Expected operandSegmentSizes property in mil.layer_norm operation.
func.func @layer_norm_segments(%x: tensor<2x4xf32>) {
  %g = mil.const dense<1.0> : tensor<4xf32>
  %r = "mil.layer_norm"(%x, %g) <{axes = array<i64: 1>}> : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// coremltools' cumsum takes axes in [-1, rank - 1]: -1 but no other negative one.
// CHECK: Operation does not verify: mil.cumsum: property 'axis' value -2 is out of range [-1, 1] for operand 'x' [2, 3] (MIL takes no negative axis but -1)
func.func @cumsum_negative_axis(%x: tensor<2x3xf32>) {
  %r = mil.cumsum %x {axis = -2 : i64} : tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.cumsum: property 'axis' value 2 is out of range [-1, 1] for operand 'x' [2, 3]
func.func @cumsum_axis(%x: tensor<2x3xf32>) {
  %r = mil.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.cumsum: operand 'x' has element type i1, expected one of f16, f32, i32
func.func @cumsum_bool(%x: tensor<2x3xi1>) {
  %r = mil.cumsum %x {axis = 1 : i64} : tensor<2x3xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.cumsum: operand 'x' must have rank ≥ 1
func.func @cumsum_scalar(%x: tensor<f32>) {
  %r = mil.cumsum %x {axis = -1 : i64} : tensor<f32>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<2x3xi32> expected from variable 'T', but got tensor<2x3xf32>
func.func @cumsum_result(%x: tensor<2x3xi32>) {
  %r = "mil.cumsum"(%x) : (tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.topk: property 'k' value 5 is out of range [1, 4] for axis 1 of operand 'x' [3, 4]
func.func @topk_too_many(%x: tensor<3x4xf32>) {
  %r:2 = mil.topk %x {k = 5 : i64} : (tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xi32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.topk: property 'return_indices' false is not supported
func.func @topk_values_alone(%x: tensor<3x4xf32>) {
  %r:2 = mil.topk %x {return_indices = false} : (tensor<3x4xf32>) -> (tensor<3x1xf32>, tensor<3x1xi32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.topk: operand 'x' has element type i1, expected one of f16, f32, i32
func.func @topk_bool(%x: tensor<3x4xi1>) {
  %r:2 = mil.topk %x : (tensor<3x4xi1>) -> (tensor<3x1xi1>, tensor<3x1xi32>)
  func.return
}

// -----

// CHECK: Operation does not verify: mil.argsort: operand 'x' has element type i1, expected one of f16, f32, i32
func.func @argsort_bool(%x: tensor<3x4xi1>) {
  %r = mil.argsort %x : (tensor<3x4xi1>) -> tensor<3x4xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.argsort: property 'axis' value -3 is out of range [-2, 2) for operand 'x' [3, 4]
func.func @argsort_axis_range(%x: tensor<3x4xf32>) {
  %r = mil.argsort %x {axis = -3 : i64} : (tensor<3x4xf32>) -> tensor<3x4xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.argsort: result type [3, 4] f16 does not match the inferred type [3, 4] i32
func.func @argsort_value_result(%x: tensor<3x4xf16>) {
  %r = mil.argsort %x : (tensor<3x4xf16>) -> tensor<3x4xf16>
  func.return
}
