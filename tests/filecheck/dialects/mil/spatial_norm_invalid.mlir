// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// MIL's rules for batch_norm and instance_norm.

// CHECK: Operation does not verify: mil.batch_norm: operand 'mean' must be a compile-time constant (computed from mil.const ops only), as MIL requires
func.func @runtime_mean(%x: tensor<1x4x5x5xf32>, %m: tensor<4xf32>) {
  %y = mil.batch_norm %x, %m, %m : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.batch_norm: operand 'variance' [3] must be [4] (C of operand 'x' [1, 4, 5, 5])
func.func @variance_shape(%x: tensor<1x4x5x5xf32>) {
  %m = mil.const dense<1.0> : tensor<4xf32>
  %v = mil.const dense<1.0> : tensor<3xf32>
  %y = mil.batch_norm %x, %m, %v : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x4x5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.instance_norm: operand 'x' must be [n, C, *D] of rank 3 to 4, got [1, 4, 2, 2, 2]
func.func @instance_rank(%x: tensor<1x4x2x2x2xf32>) {
  %y = mil.instance_norm %x : (tensor<1x4x2x2x2xf32>) -> tensor<1x4x2x2x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.instance_norm: operands 'gamma' (f32) and 'beta' (f16) must have the same element type
func.func @mixed_params(%x: tensor<1x4x2x2xf32>) {
  %g = mil.const dense<1.0> : tensor<4xf32>
  %b = mil.const dense<1.0> : tensor<4xf16>
  %y = mil.instance_norm %x, gamma %g, beta %b : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf16>) -> tensor<1x4x2x2xf32>
  func.return
}
