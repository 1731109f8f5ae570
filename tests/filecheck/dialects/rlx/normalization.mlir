// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The normalizations over the last axis: rms_norm and layer_norm.

// CHECK-LABEL: func.func @rms_norm(
// GENERIC-LABEL: "func.func"() <{sym_name = "rms_norm"
func.func @rms_norm(%x: tensor<2x5x64xf32>, %g: tensor<64xf32>, %h: tensor<1x64xf16>, %gh: tensor<64xf16>) {
  // CHECK-NEXT: %y = rlx.rms_norm %x, %g {eps = 1.000000e-06 : f32} : (tensor<2x5x64xf32>, tensor<64xf32>) -> tensor<2x5x64xf32>
  // GENERIC: %y = "rlx.rms_norm"(%x, %g) <{eps = 1.000000e-06 : f32}> : (tensor<2x5x64xf32>, tensor<64xf32>) -> tensor<2x5x64xf32>
  %y = rlx.rms_norm %x, %g {eps = 1.000000e-06 : f32} : (tensor<2x5x64xf32>, tensor<64xf32>) -> tensor<2x5x64xf32>
  // CHECK-NEXT: %yh = rlx.rms_norm %h, %gh {eps = 1.000000e-05 : f32} : (tensor<1x64xf16>, tensor<64xf16>) -> tensor<1x64xf16>
  // GENERIC-NEXT: %yh = "rlx.rms_norm"(%h, %gh) <{eps = 1.000000e-05 : f32}> : (tensor<1x64xf16>, tensor<64xf16>) -> tensor<1x64xf16>
  %yh = rlx.rms_norm %h, %gh {eps = 1.000000e-05 : f32} : (tensor<1x64xf16>, tensor<64xf16>) -> tensor<1x64xf16>
  func.return
}

// CHECK-LABEL: func.func @layer_norm(
// GENERIC-LABEL: "func.func"() <{sym_name = "layer_norm"
func.func @layer_norm(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // CHECK-NEXT: %y = rlx.layer_norm %x, %g, %b {eps = 1.000000e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // GENERIC: %y = "rlx.layer_norm"(%x, %g, %b) <{eps = 1.000000e-05 : f32}> : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y = rlx.layer_norm %x, %g, %b {eps = 1.000000e-05 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return
}

// RMSNorm over axis 2 with a gamma per head [1, H, D, 1].
// CHECK-LABEL: func.func @rms_norm_axis(
// GENERIC-LABEL: "func.func"() <{sym_name = "rms_norm_axis"
func.func @rms_norm_axis(%x: tensor<1x2x8x3xf32>, %g: tensor<1x2x8x1xf32>) {
  // CHECK-NEXT: %y = rlx.rms_norm %x, %g {eps = 1.000000e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x3xf32>
  // GENERIC: %y = "rlx.rms_norm"(%x, %g) <{eps = 1.000000e-06 : f32, axis = 2 : i64}> : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x3xf32>
  %y = rlx.rms_norm %x, %g {eps = 1.000000e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x3xf32>
  func.return
}
