// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The rms_norm and activation gradients.

// CHECK-LABEL: func.func @rms_norm_backward(
// GENERIC-LABEL: "func.func"() <{sym_name = "rms_norm_backward"
func.func @rms_norm_backward(%x: tensor<2x5x64xf32>, %g: tensor<64xf32>, %dy: tensor<2x5x64xf32>) {
  // CHECK-NEXT: %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.000000e-06 : f32} : (tensor<2x5x64xf32>, tensor<64xf32>, tensor<2x5x64xf32>) -> tensor<2x5x64xf32>
  // GENERIC: %dx = "rlx.rms_norm_backward_input"(%x, %g, %dy) <{eps = 1.000000e-06 : f32}> : (tensor<2x5x64xf32>, tensor<64xf32>, tensor<2x5x64xf32>) -> tensor<2x5x64xf32>
  %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.000000e-06 : f32} : (tensor<2x5x64xf32>, tensor<64xf32>, tensor<2x5x64xf32>) -> tensor<2x5x64xf32>
  // CHECK-NEXT: %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.000000e-06 : f32} : (tensor<2x5x64xf32>, tensor<2x5x64xf32>) -> tensor<64xf32>
  // GENERIC-NEXT: %dg = "rlx.rms_norm_backward_gamma"(%x, %dy) <{eps = 1.000000e-06 : f32}> : (tensor<2x5x64xf32>, tensor<2x5x64xf32>) -> tensor<64xf32>
  %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.000000e-06 : f32} : (tensor<2x5x64xf32>, tensor<2x5x64xf32>) -> tensor<64xf32>
  func.return
}

// CHECK-LABEL: func.func @activation_backward(
// GENERIC-LABEL: "func.func"() <{sym_name = "activation_backward"
func.func @activation_backward(%x: tensor<4x32xf32>, %dy: tensor<4x32xf32>, %h: tensor<2x8xf16>, %dh: tensor<2x8xf16>) {
  // CHECK-NEXT: %relu = rlx.activation_backward %x, %dy {kind = "relu"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // GENERIC: %relu = "rlx.activation_backward"(%x, %dy) <{kind = "relu"}> : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %relu = rlx.activation_backward %x, %dy {kind = "relu"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %silu = rlx.activation_backward %x, %dy {kind = "silu"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %silu = "rlx.activation_backward"(%x, %dy) <{kind = "silu"}> : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %silu = rlx.activation_backward %x, %dy {kind = "silu"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %gelu = rlx.activation_backward %x, %dy {kind = "gelu"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %gelu = "rlx.activation_backward"(%x, %dy) <{kind = "gelu"}> : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %gelu = rlx.activation_backward %x, %dy {kind = "gelu"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %gelu_tanh = rlx.activation_backward %x, %dy {kind = "gelu_tanh"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %gelu_tanh = "rlx.activation_backward"(%x, %dy) <{kind = "gelu_tanh"}> : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %gelu_tanh = rlx.activation_backward %x, %dy {kind = "gelu_tanh"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %sigmoid = rlx.activation_backward %x, %dy {kind = "sigmoid"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %sigmoid = "rlx.activation_backward"(%x, %dy) <{kind = "sigmoid"}> : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %sigmoid = rlx.activation_backward %x, %dy {kind = "sigmoid"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %tanh = rlx.activation_backward %h, %dh {kind = "tanh"} : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  // GENERIC-NEXT: %tanh = "rlx.activation_backward"(%h, %dh) <{kind = "tanh"}> : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  %tanh = rlx.activation_backward %h, %dh {kind = "tanh"} : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  func.return
}

// The RMSNorm gradients over axis 2; gamma_shape gives the per-head gradient.
// CHECK-LABEL: func.func @rms_norm_backward_axis(
// GENERIC-LABEL: "func.func"() <{sym_name = "rms_norm_backward_axis"
func.func @rms_norm_backward_axis(%x: tensor<1x2x8x3xf32>, %g: tensor<1x2x8x1xf32>, %dy: tensor<1x2x8x3xf32>) {
  // CHECK-NEXT: %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.000000e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x3xf32>
  // GENERIC: %dx = "rlx.rms_norm_backward_input"(%x, %g, %dy) <{eps = 1.000000e-06 : f32, axis = 2 : i64}> : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x3xf32>
  %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.000000e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x3xf32>
  // CHECK-NEXT: %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.000000e-06 : f32, axis = 2 : i64, gamma_shape = array<i64: 1, 2, 8, 1>} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x1xf32>
  // GENERIC-NEXT: %dg = "rlx.rms_norm_backward_gamma"(%x, %dy) <{eps = 1.000000e-06 : f32, axis = 2 : i64, gamma_shape = array<i64: 1, 2, 8, 1>}> : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x1xf32>
  %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.000000e-06 : f32, axis = 2 : i64, gamma_shape = array<i64: 1, 2, 8, 1>} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x1xf32>
  func.return
}
