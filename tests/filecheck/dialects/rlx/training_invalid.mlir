// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the rms_norm and activation gradients.

// CHECK: Operation does not verify: rlx.rms_norm_backward_input: operand 'gamma' [5] must be [64] for operand 'input' [2, 5, 64]
func.func @rms_norm_backward_input_gamma(%x: tensor<2x5x64xf32>, %g: tensor<5xf32>, %dy: tensor<2x5x64xf32>) {
  %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.0e-06 : f32} : (tensor<2x5x64xf32>, tensor<5xf32>, tensor<2x5x64xf32>) -> tensor<2x5x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rms_norm_backward_input: operand 'd_out' [2, 64] must have the shape of operand 'input' [2, 5, 64]
func.func @rms_norm_backward_input_d_out(%x: tensor<2x5x64xf32>, %g: tensor<64xf32>, %dy: tensor<2x64xf32>) {
  %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.0e-06 : f32} : (tensor<2x5x64xf32>, tensor<64xf32>, tensor<2x64xf32>) -> tensor<2x5x64xf32>
  func.return
}

// -----

// The gamma gradient has gamma's shape [D].
// CHECK: Operation does not verify: rlx.rms_norm_backward_gamma: result type [2, 5, 64] f32 does not match the inferred type [64] f32
func.func @rms_norm_backward_gamma_result(%x: tensor<2x5x64xf32>, %dy: tensor<2x5x64xf32>) {
  %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.0e-06 : f32} : (tensor<2x5x64xf32>, tensor<2x5x64xf32>) -> tensor<2x5x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rms_norm_backward_gamma: operand 'd_out' [2, 5, 32] must have the shape of operand 'input' [2, 5, 64]
func.func @rms_norm_backward_gamma_d_out(%x: tensor<2x5x64xf32>, %dy: tensor<2x5x32xf32>) {
  %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.0e-06 : f32} : (tensor<2x5x64xf32>, tensor<2x5x32xf32>) -> tensor<64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.activation_backward: property 'kind' is "softmax", expected one of "relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh"
func.func @activation_backward_bad_kind(%x: tensor<4x32xf32>, %dy: tensor<4x32xf32>) {
  %dx = rlx.activation_backward %x, %dy {kind = "softmax"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.activation_backward: operand 'd_out' [32] must have the shape of operand 'input' [4, 32]
func.func @activation_backward_d_out(%x: tensor<4x32xf32>, %dy: tensor<32xf32>) {
  %dx = rlx.activation_backward %x, %dy {kind = "silu"} : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.activation_backward: operand 'input' must have a float element type (f16 or f32), got i32
func.func @activation_backward_integer(%x: tensor<4xi32>, %dy: tensor<4xi32>) {
  %dx = rlx.activation_backward %x, %dy {kind = "relu"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.activation_backward: result type [4, 32] f32 does not match the inferred type [4, 32] f16
func.func @activation_backward_result(%x: tensor<4x32xf16>, %dy: tensor<4x32xf16>) {
  %dx = rlx.activation_backward %x, %dy {kind = "gelu"} : (tensor<4x32xf16>, tensor<4x32xf16>) -> tensor<4x32xf32>
  func.return
}

// -----

// Over an axis other than the last, the gradient's shape must be given.
// CHECK: Operation does not verify: rlx.rms_norm_backward_gamma: property 'gamma_shape' is needed for axis 2, which is not the last of operand 'input' [1, 2, 8, 3]
func.func @gamma_shape_needed(%x: tensor<1x2x8x3xf32>, %dy: tensor<1x2x8x3xf32>) {
  %y = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.0e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<8xf32>
  func.return
}


// -----

// gamma_shape follows gamma's rule.
// CHECK: Operation does not verify: rlx.rms_norm_backward_gamma: property 'gamma_shape' [1, 2, 4, 1] must have rank 4, 8 on axis 2 and 1 or the input's size elsewhere, for operand 'input' [1, 2, 8, 3]
func.func @gamma_shape_bad(%x: tensor<1x2x8x3xf32>, %dy: tensor<1x2x8x3xf32>) {
  %y = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.0e-06 : f32, axis = 2 : i64, gamma_shape = array<i64: 1, 2, 4, 1>} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x4x1xf32>
  func.return
}

