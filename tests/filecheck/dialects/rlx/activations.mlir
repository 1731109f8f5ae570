// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The vision activations: hardswish, hardsigmoid, leaky_relu and elu (alpha
// absent means 0.01 / 1.0) and clamp with both, one or equal bounds.

// CHECK-LABEL: func.func @activations(
// GENERIC-LABEL: "func.func"() <{sym_name = "activations"
func.func @activations(%x: tensor<2x8xf32>, %h: tensor<1x4x2x2xf16>) {
  // CHECK-NEXT: %hardswish = rlx.hardswish %x : tensor<2x8xf32>
  // GENERIC: %hardswish = "rlx.hardswish"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %hardswish = rlx.hardswish %x : tensor<2x8xf32>
  // CHECK-NEXT: %hardsigmoid = rlx.hardsigmoid %h : tensor<1x4x2x2xf16>
  // GENERIC: %hardsigmoid = "rlx.hardsigmoid"(%h) : (tensor<1x4x2x2xf16>) -> tensor<1x4x2x2xf16>
  %hardsigmoid = rlx.hardsigmoid %h : tensor<1x4x2x2xf16>
  // CHECK-NEXT: %leaky = rlx.leaky_relu %x : tensor<2x8xf32>
  // GENERIC: %leaky = "rlx.leaky_relu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %leaky = rlx.leaky_relu %x : tensor<2x8xf32>
  // CHECK-NEXT: %leaky_slope = rlx.leaky_relu %h {alpha = 2.000000e-01 : f32} : tensor<1x4x2x2xf16>
  // GENERIC: %leaky_slope = "rlx.leaky_relu"(%h) <{alpha = 2.000000e-01 : f32}> : (tensor<1x4x2x2xf16>) -> tensor<1x4x2x2xf16>
  %leaky_slope = rlx.leaky_relu %h {alpha = 2.000000e-01 : f32} : tensor<1x4x2x2xf16>
  // CHECK-NEXT: %elu = rlx.elu %x : tensor<2x8xf32>
  // GENERIC: %elu = "rlx.elu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %elu = rlx.elu %x : tensor<2x8xf32>
  // CHECK-NEXT: %elu_alpha = rlx.elu %x {alpha = 5.000000e-01 : f32} : tensor<2x8xf32>
  // GENERIC: %elu_alpha = "rlx.elu"(%x) <{alpha = 5.000000e-01 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %elu_alpha = rlx.elu %x {alpha = 5.000000e-01 : f32} : tensor<2x8xf32>
  func.return
}

// CHECK-LABEL: func.func @clamp(
// GENERIC-LABEL: "func.func"() <{sym_name = "clamp"
func.func @clamp(%x: tensor<2x8xf32>, %h: tensor<1x4x2x2xf16>) {
  // CHECK-NEXT: %relu6 = rlx.clamp %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x8xf32>
  // GENERIC: %relu6 = "rlx.clamp"(%x) <{min = 0.000000e+00 : f32, max = 6.000000e+00 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %relu6 = rlx.clamp %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: %low = rlx.clamp %h {min = -1.000000e+00 : f32} : tensor<1x4x2x2xf16>
  // GENERIC: %low = "rlx.clamp"(%h) <{min = -1.000000e+00 : f32}> : (tensor<1x4x2x2xf16>) -> tensor<1x4x2x2xf16>
  %low = rlx.clamp %h {min = -1.000000e+00 : f32} : tensor<1x4x2x2xf16>
  // CHECK-NEXT: %high = rlx.clamp %x {max = 2.500000e-01 : f32} : tensor<2x8xf32>
  // GENERIC: %high = "rlx.clamp"(%x) <{max = 2.500000e-01 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %high = rlx.clamp %x {max = 2.500000e-01 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: %point = rlx.clamp %x {min = 1.000000e+00 : f32, max = 1.000000e+00 : f32} : tensor<2x8xf32>
  // GENERIC: %point = "rlx.clamp"(%x) <{min = 1.000000e+00 : f32, max = 1.000000e+00 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %point = rlx.clamp %x {min = 1.000000e+00 : f32, max = 1.000000e+00 : f32} : tensor<2x8xf32>
  func.return
}
