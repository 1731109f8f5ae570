// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, normalization family (passes/rlx_to_mil/normalization.py):
// rms_norm and layer_norm.

// NO-RLX-NOT: rlx.

// y = x * rsqrt(mean(x^2, last axis) + eps) * gamma: the eps is MIL rsqrt's
// epsilon, which rsqrt adds under the root.
// CHECK-LABEL: func.func @rms_norm(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<2x3xf32>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[RMS:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-06 : f32} : tensor<2x1xf32>
// CHECK-NEXT:  [[NORMALIZED:%.+]] = mil.mul %x, [[RMS]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[NORMALIZED]], %g : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @rms_norm(%x: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = rlx.rms_norm %x, %g {eps = 1.000000e-06 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @rms_norm_f16(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<1x2x3xf16>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: -1>, keep_dims = true} : (tensor<1x2x3xf16>) -> tensor<1x2x1xf16>
// CHECK-NEXT:  [[RMS:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-05 : f32} : tensor<1x2x1xf16>
// CHECK-NEXT:  [[NORMALIZED:%.+]] = mil.mul %x, [[RMS]] : (tensor<1x2x3xf16>, tensor<1x2x1xf16>) -> tensor<1x2x3xf16>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[NORMALIZED]], %g : (tensor<1x2x3xf16>, tensor<3xf16>) -> tensor<1x2x3xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3xf16>
func.func @rms_norm_f16(%x: tensor<1x2x3xf16>, %g: tensor<3xf16>) -> tensor<1x2x3xf16> {
  %y = rlx.rms_norm %x, %g {eps = 1.000000e-05 : f32} : (tensor<1x2x3xf16>, tensor<3xf16>) -> tensor<1x2x3xf16>
  func.return %y : tensor<1x2x3xf16>
}

// axis = 2: over the D of [1, H, D, S] heads (QK-norm), with a gamma
// [1, H, D, 1] per head.
// CHECK-LABEL: func.func @rms_norm_axis(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<1x2x8x3xf32>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: 2>, keep_dims = true} : (tensor<1x2x8x3xf32>) -> tensor<1x2x1x3xf32>
// CHECK-NEXT:  [[RMS:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-06 : f32} : tensor<1x2x1x3xf32>
// CHECK-NEXT:  [[NORMALIZED:%.+]] = mil.mul %x, [[RMS]] : (tensor<1x2x8x3xf32>, tensor<1x2x1x3xf32>) -> tensor<1x2x8x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[NORMALIZED]], %g : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x8x3xf32>
func.func @rms_norm_axis(%x: tensor<1x2x8x3xf32>, %g: tensor<1x2x8x1xf32>) -> tensor<1x2x8x3xf32> {
  %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x3xf32>
  func.return %y : tensor<1x2x8x3xf32>
}

// layer_norm -> MIL layer_norm over axes [-1] with gamma, beta and epsilon.
// MIL requires gamma and beta to be consts: weights (rlx.param) here.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-NEXT:  [[GAMMA:%.+]] = mil.const weight "ln.weight" : tensor<3xf32>
// CHECK-NEXT:  [[BETA:%.+]] = mil.const weight "ln.bias" : tensor<3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.layer_norm %x, gamma [[GAMMA]], beta [[BETA]] {axes = array<i64: -1>, epsilon = 1.000000e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @layer_norm(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %g = rlx.param "ln.weight" : tensor<3xf32>
  %b = rlx.param "ln.bias" : tensor<3xf32>
  %y = rlx.layer_norm %x, %g, %b {eps = 1.000000e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// ... or literals (rlx.constant).
// CHECK-LABEL: func.func @layer_norm_constant(
// CHECK-NEXT:  [[GAMMA:%.+]] = mil.const dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:  [[BETA:%.+]] = mil.const dense<5.000000e-01> : tensor<3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.layer_norm %x, gamma [[GAMMA]], beta [[BETA]] {axes = array<i64: -1>, epsilon = 1.000000e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @layer_norm_constant(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %g = rlx.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = rlx.constant dense<0.5> : tensor<3xf32>
  %y = rlx.layer_norm %x, %g, %b {eps = 1.000000e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
