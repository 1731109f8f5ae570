// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, normalization family (passes/rlx_to_mil/normalization.py):
// rms_norm, layer_norm, rope and rope_backward in both pair styles.

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

// "half" pairs (i, i + D/2): slice the halves a, b; (a*cos - b*sin,
// a*sin + b*cos); concat. cos and sin [S, D/2] broadcast over [B, H].
// CHECK-LABEL: func.func @rope_half(
// CHECK-NEXT:  [[A:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 2>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_COS:%.+]] = mil.mul [[A]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_SIN:%.+]] = mil.mul [[B]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_SIN:%.+]] = mil.mul [[A]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_COS:%.+]] = mil.mul [[B]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_A:%.+]] = mil.sub [[A_COS]], [[B_SIN]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_B:%.+]] = mil.add [[A_SIN]], [[B_COS]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.concat [[NEW_A]], [[NEW_B]] {axis = -1 : i64, interleave = false} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_half(%x: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// "interleaved" pairs (2i, 2i + 1): view x as [B*H, S, D/2, 2], slice the
// even and odd lanes, rotate against cos, sin viewed as [S, D/2, 1], concat
// the lanes on the last axis and restore [B, H, S, D].
// CHECK-LABEL: func.func @rope_interleaved(
// CHECK-NEXT:  [[PAIRS:%.+]] = mil.reshape %x {shape = array<i64: 2, 3, 2, 2>} : (tensor<1x2x3x4xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[EVEN:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 1>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[COS:%.+]] = mil.reshape %cos {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[SIN:%.+]] = mil.reshape %sin {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[EVEN_COS:%.+]] = mil.mul [[EVEN]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_SIN:%.+]] = mil.mul [[ODD]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[EVEN_SIN:%.+]] = mil.mul [[EVEN]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_COS:%.+]] = mil.mul [[ODD]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_EVEN:%.+]] = mil.sub [[EVEN_COS]], [[ODD_SIN]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_ODD:%.+]] = mil.add [[EVEN_SIN]], [[ODD_COS]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[LANES:%.+]] = mil.concat [[NEW_EVEN]], [[NEW_ODD]] {axis = -1 : i64, interleave = false} : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LANES]] {shape = array<i64: 1, 2, 3, 4>} : (tensor<2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_interleaved(%x: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope %x, %cos, %sin {style = "interleaved"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// rope_backward rotates by -theta: (a, b) -> (a*cos + b*sin, b*cos - a*sin).
// CHECK-LABEL: func.func @rope_backward_half(
// CHECK-NEXT:  [[A:%.+]] = mil.slice_by_size %dy {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B:%.+]] = mil.slice_by_size %dy {begin = array<i64: 0, 0, 0, 2>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_COS:%.+]] = mil.mul [[A]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_SIN:%.+]] = mil.mul [[B]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_SIN:%.+]] = mil.mul [[A]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_COS:%.+]] = mil.mul [[B]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_A:%.+]] = mil.add [[A_COS]], [[B_SIN]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_B:%.+]] = mil.sub [[B_COS]], [[A_SIN]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.concat [[NEW_A]], [[NEW_B]] {axis = -1 : i64, interleave = false} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_backward_half(%dy: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope_backward %dy, %cos, %sin {style = "half"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// The interleaved lanes of rope_interleaved, rotated by -theta.
// CHECK-LABEL: func.func @rope_backward_interleaved(
// CHECK-NEXT:  [[PAIRS:%.+]] = mil.reshape %dy {shape = array<i64: 2, 3, 2, 2>} : (tensor<1x2x3x4xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[EVEN:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 1>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[COS:%.+]] = mil.reshape %cos {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[SIN:%.+]] = mil.reshape %sin {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[EVEN_COS:%.+]] = mil.mul [[EVEN]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_SIN:%.+]] = mil.mul [[ODD]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[EVEN_SIN:%.+]] = mil.mul [[EVEN]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_COS:%.+]] = mil.mul [[ODD]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_EVEN:%.+]] = mil.add [[EVEN_COS]], [[ODD_SIN]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_ODD:%.+]] = mil.sub [[ODD_COS]], [[EVEN_SIN]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[LANES:%.+]] = mil.concat [[NEW_EVEN]], [[NEW_ODD]] {axis = -1 : i64, interleave = false} : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LANES]] {shape = array<i64: 1, 2, 3, 4>} : (tensor<2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_backward_interleaved(%dy: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope_backward %dy, %cos, %sin {style = "interleaved"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}
