// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of rms_norm and layer_norm.

// gamma is [D] for an input [..., D].
// CHECK: Operation does not verify: rlx.rms_norm: operand 'gamma' [32] must be [64] for operand 'input' [2, 5, 64]
func.func @rms_norm_gamma_shape(%x: tensor<2x5x64xf32>, %g: tensor<32xf32>) {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32} : (tensor<2x5x64xf32>, tensor<32xf32>) -> tensor<2x5x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rms_norm: operand 'gamma' [1, 64] must be [64] for operand 'input' [2, 64]
func.func @rms_norm_gamma_rank(%x: tensor<2x64xf32>, %g: tensor<1x64xf32>) {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32} : (tensor<2x64xf32>, tensor<1x64xf32>) -> tensor<2x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rms_norm: operands 'input' (f16) and 'gamma' (f32) must have the same element type
func.func @rms_norm_gamma_element(%x: tensor<2x64xf16>, %g: tensor<64xf32>) {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32} : (tensor<2x64xf16>, tensor<64xf32>) -> tensor<2x64xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'eps' expected in operation 'rlx.rms_norm'
func.func @rms_norm_missing_eps(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  %y = rlx.rms_norm %x, %g : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rms_norm: operand 'input' must have a float element type (f16 or f32), got i32
func.func @rms_norm_integer(%x: tensor<2x64xi32>, %g: tensor<64xi32>) {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32} : (tensor<2x64xi32>, tensor<64xi32>) -> tensor<2x64xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.layer_norm: operand 'beta' [4] must be [32] for operand 'input' [4, 32]
func.func @layer_norm_beta_shape(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<4xf32>) {
  %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<4xf32>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.layer_norm: operand 'gamma' [4] must be [32] for operand 'input' [4, 32]
func.func @layer_norm_gamma_shape(%x: tensor<4x32xf32>, %g: tensor<4xf32>, %b: tensor<32xf32>) {
  %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<4xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.layer_norm: result type [4, 32] f16 does not match the inferred type [4, 32] f32
func.func @layer_norm_result(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf16>
  func.return
}

// -----

// Over an axis other than the last, gamma has the input's rank (a gamma per head [1, H, D, 1]).
// CHECK: Operation does not verify: rlx.rms_norm: operand 'gamma' [8] must have rank 4, 8 on axis 2 and 1 or the input's size elsewhere, for operand 'input' [1, 2, 8, 3]
func.func @rms_norm_axis_gamma(%x: tensor<1x2x8x3xf32>, %g: tensor<8xf32>) {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<8xf32>) -> tensor<1x2x8x3xf32>
  func.return
}


// -----

// The axis must index the input.
// CHECK: Operation does not verify: rlx.rms_norm: property 'axis' value 4 is out of range [-4, 4) for operand 'input' [1, 2, 8, 3]
func.func @rms_norm_axis_range(%x: tensor<1x2x8x3xf32>, %g: tensor<3xf32>) {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32, axis = 4 : i64} : (tensor<1x2x8x3xf32>, tensor<3xf32>) -> tensor<1x2x8x3xf32>
  func.return
}

