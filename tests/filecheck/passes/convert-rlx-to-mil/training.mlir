// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, training family (passes/rlx_to_mil/training.py):
// rms_norm gradients and activation gradients. rope_backward and
// attention_backward belong to the attention family (attention.mlir).

// NO-RLX-NOT: rlx.

// With r = rsqrt(mean(x^2) + eps), n = x * r and g = gamma * dy:
// dx = r * (g - n * mean(n * g)) (no r^2, which overflows fp16).
// CHECK-LABEL: func.func @rms_norm_backward_input(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<2x3xf32>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[R:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-06 : f32} : tensor<2x1xf32>
// CHECK-NEXT:  [[N:%.+]] = mil.mul %x, [[R]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[G:%.+]] = mil.mul %g, %dy : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[NG:%.+]] = mil.mul [[N]], [[G]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[MEAN_NG:%.+]] = mil.reduce_mean [[NG]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[CORRECTION:%.+]] = mil.mul [[N]], [[MEAN_NG]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DIFF:%.+]] = mil.sub [[G]], [[CORRECTION]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[R]], [[DIFF]] : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @rms_norm_backward_input(%x: tensor<2x3xf32>, %g: tensor<3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.000000e-06 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// A rank-1 input: the row statistics are [1].
// CHECK-LABEL: func.func @rms_norm_backward_input_rank1(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<3xf32>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: -1>, keep_dims = true} : (tensor<3xf32>) -> tensor<1xf32>
// CHECK-NEXT:  [[R:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-06 : f32} : tensor<1xf32>
// CHECK-NEXT:  [[N:%.+]] = mil.mul %x, [[R]] : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
// CHECK-NEXT:  [[G:%.+]] = mil.mul %g, %dy : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:  [[NG:%.+]] = mil.mul [[N]], [[G]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:  [[MEAN_NG:%.+]] = mil.reduce_mean [[NG]] {axes = array<i64: -1>, keep_dims = true} : (tensor<3xf32>) -> tensor<1xf32>
// CHECK-NEXT:  [[CORRECTION:%.+]] = mil.mul [[N]], [[MEAN_NG]] : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
// CHECK-NEXT:  [[DIFF:%.+]] = mil.sub [[G]], [[CORRECTION]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[R]], [[DIFF]] : (tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<3xf32>
func.func @rms_norm_backward_input_rank1(%x: tensor<3xf32>, %g: tensor<3xf32>, %dy: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.000000e-06 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// dgamma = sum over all leading axes of dy * x * rsqrt(mean(x^2) + eps).
// CHECK-LABEL: func.func @rms_norm_backward_gamma(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<2x2x3xf32>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x2x3xf32>) -> tensor<2x2x1xf32>
// CHECK-NEXT:  [[R:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-06 : f32} : tensor<2x2x1xf32>
// CHECK-NEXT:  [[NORMALIZED:%.+]] = mil.mul %x, [[R]] : (tensor<2x2x3xf32>, tensor<2x2x1xf32>) -> tensor<2x2x3xf32>
// CHECK-NEXT:  [[CONTRIBUTION:%.+]] = mil.mul [[NORMALIZED]], %dy : (tensor<2x2x3xf32>, tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reduce_sum [[CONTRIBUTION]] {axes = array<i64: 0, 1>, keep_dims = false} : (tensor<2x2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<3xf32>
func.func @rms_norm_backward_gamma(%x: tensor<2x2x3xf32>, %dy: tensor<2x2x3xf32>) -> tensor<3xf32> {
  %y = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.000000e-06 : f32} : (tensor<2x2x3xf32>, tensor<2x2x3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// A rank-1 input has no leading axis: no reduce_sum.
// CHECK-LABEL: func.func @rms_norm_backward_gamma_rank1(
// CHECK-NEXT:  [[SQUARE:%.+]] = mil.square %x : tensor<3xf32>
// CHECK-NEXT:  [[MEAN_SQUARE:%.+]] = mil.reduce_mean [[SQUARE]] {axes = array<i64: -1>, keep_dims = true} : (tensor<3xf32>) -> tensor<1xf32>
// CHECK-NEXT:  [[R:%.+]] = mil.rsqrt [[MEAN_SQUARE]] {epsilon = 1.000000e-06 : f32} : tensor<1xf32>
// CHECK-NEXT:  [[NORMALIZED:%.+]] = mil.mul %x, [[R]] : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[NORMALIZED]], %dy : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<3xf32>
func.func @rms_norm_backward_gamma_rank1(%x: tensor<3xf32>, %dy: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.000000e-06 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// relu: dx = (x > 0 ? dy : 0).
// CHECK-LABEL: func.func @activation_backward_relu(
// CHECK-NEXT:  [[ZERO:%.+]] = mil.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[POSITIVE:%.+]] = mil.greater %x, [[ZERO]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
// CHECK-NEXT:  [[ZERO_DY:%.+]] = mil.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[Y:%.+]] = mil.select [[POSITIVE]], %dy, [[ZERO_DY]] : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @activation_backward_relu(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.activation_backward %x, %dy {kind = "relu"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// The zero consts follow the element type.
// CHECK-LABEL: func.func @activation_backward_relu_f16(
// CHECK-NEXT:  [[ZERO:%.+]] = mil.const dense<0.000000e+00> : tensor<f16>
// CHECK-NEXT:  [[POSITIVE:%.+]] = mil.greater %x, [[ZERO]] : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xi1>
// CHECK-NEXT:  [[ZERO_DY:%.+]] = mil.const dense<0.000000e+00> : tensor<f16>
// CHECK-NEXT:  [[Y:%.+]] = mil.select [[POSITIVE]], %dy, [[ZERO_DY]] : (tensor<2x3xi1>, tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf16>
func.func @activation_backward_relu_f16(%x: tensor<2x3xf16>, %dy: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = rlx.activation_backward %x, %dy {kind = "relu"} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// silu: dx = s * (1 + x * (1 - s)) * dy, s = sigmoid(x).
// CHECK-LABEL: func.func @activation_backward_silu(
// CHECK-NEXT:  [[S:%.+]] = mil.sigmoid %x : tensor<2x3xf32>
// CHECK-NEXT:  [[ONE:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[ONE2:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[ONE_MINUS_S:%.+]] = mil.sub [[ONE2]], [[S]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[X_ONE_MINUS_S:%.+]] = mil.mul %x, [[ONE_MINUS_S]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[INNER:%.+]] = mil.add [[ONE]], [[X_ONE_MINUS_S]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DERIVATIVE:%.+]] = mil.mul [[S]], [[INNER]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DERIVATIVE]], %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @activation_backward_silu(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.activation_backward %x, %dy {kind = "silu"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// gelu: dx = (Phi(x) + x * phi(x)) * dy, Phi(x) = (1 + erf(x / sqrt(2))) / 2,
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi): 1/sqrt(2) = 0.707106769,
// 1/sqrt(2 pi) = 0.398942292.
// CHECK-LABEL: func.func @activation_backward_gelu(
// CHECK-NEXT:  [[INV_SQRT2:%.+]] = mil.const dense<0.707106769> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul %x, [[INV_SQRT2]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[HALF:%.+]] = mil.const dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:  [[ONE:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[ERF:%.+]] = mil.erf [[SCALED]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ONE_PLUS_ERF:%.+]] = mil.add [[ONE]], [[ERF]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[CDF:%.+]] = mil.mul [[HALF]], [[ONE_PLUS_ERF]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[X2:%.+]] = mil.square %x : tensor<2x3xf32>
// CHECK-NEXT:  [[MINUS_HALF:%.+]] = mil.const dense<-5.000000e-01> : tensor<f32>
// CHECK-NEXT:  [[EXPONENT:%.+]] = mil.mul [[X2]], [[MINUS_HALF]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[GAUSS:%.+]] = mil.exp [[EXPONENT]] : tensor<2x3xf32>
// CHECK-NEXT:  [[INV_SQRT_2PI:%.+]] = mil.const dense<0.398942292> : tensor<f32>
// CHECK-NEXT:  [[PDF:%.+]] = mil.mul [[GAUSS]], [[INV_SQRT_2PI]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[X_PDF:%.+]] = mil.mul %x, [[PDF]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DERIVATIVE:%.+]] = mil.add [[CDF]], [[X_PDF]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DERIVATIVE]], %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @activation_backward_gelu(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.activation_backward %x, %dy {kind = "gelu"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// gelu_tanh: y = x/2 * (1 + t), t = tanh(u), u = sqrt(2/pi) * (x + a x^3),
// a = 0.044715: dx = ((1 + t)/2 + x/2 * (1 - t^2) * sqrt(2/pi) * (1 + 3a x^2)) * dy;
// sqrt(2/pi) = 0.797884583, 3a = 0.134145.
// CHECK-LABEL: func.func @activation_backward_gelu_tanh(
// CHECK-NEXT:  [[X2:%.+]] = mil.square %x : tensor<2x3xf32>
// CHECK-NEXT:  [[ONE:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[A:%.+]] = mil.const dense<4.471500e-02> : tensor<f32>
// CHECK-NEXT:  [[A_X2:%.+]] = mil.mul [[X2]], [[A]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[ONE_A_X2:%.+]] = mil.add [[ONE]], [[A_X2]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[X_ONE_A_X2:%.+]] = mil.mul %x, [[ONE_A_X2]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[SQRT_2_PI:%.+]] = mil.const dense<0.797884583> : tensor<f32>
// CHECK-NEXT:  [[U:%.+]] = mil.mul [[X_ONE_A_X2]], [[SQRT_2_PI]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[T:%.+]] = mil.tanh [[U]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ONE2:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[A3:%.+]] = mil.const dense<1.341450e-01> : tensor<f32>
// CHECK-NEXT:  [[A3_X2:%.+]] = mil.mul [[X2]], [[A3]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[ONE_A3_X2:%.+]] = mil.add [[ONE2]], [[A3_X2]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[SQRT_2_PI2:%.+]] = mil.const dense<0.797884583> : tensor<f32>
// CHECK-NEXT:  [[DU:%.+]] = mil.mul [[ONE_A3_X2]], [[SQRT_2_PI2]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[ONE3:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[T2:%.+]] = mil.square [[T]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SECH2:%.+]] = mil.sub [[ONE3]], [[T2]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[HALF:%.+]] = mil.const dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:  [[ONE4:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[ONE_PLUS_T:%.+]] = mil.add [[ONE4]], [[T]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[LEFT:%.+]] = mil.mul [[HALF]], [[ONE_PLUS_T]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[HALF2:%.+]] = mil.const dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:  [[HALF_X:%.+]] = mil.mul %x, [[HALF2]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[HALF_X_SECH2:%.+]] = mil.mul [[HALF_X]], [[SECH2]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[RIGHT:%.+]] = mil.mul [[HALF_X_SECH2]], [[DU]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DERIVATIVE:%.+]] = mil.add [[LEFT]], [[RIGHT]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DERIVATIVE]], %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @activation_backward_gelu_tanh(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.activation_backward %x, %dy {kind = "gelu_tanh"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// sigmoid: dx = s * (1 - s) * dy.
// CHECK-LABEL: func.func @activation_backward_sigmoid(
// CHECK-NEXT:  [[S:%.+]] = mil.sigmoid %x : tensor<2x3xf32>
// CHECK-NEXT:  [[ONE:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[ONE_MINUS_S:%.+]] = mil.sub [[ONE]], [[S]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DERIVATIVE:%.+]] = mil.mul [[S]], [[ONE_MINUS_S]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DERIVATIVE]], %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @activation_backward_sigmoid(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.activation_backward %x, %dy {kind = "sigmoid"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// tanh: dx = (1 - tanh(x)^2) * dy.
// CHECK-LABEL: func.func @activation_backward_tanh(
// CHECK-NEXT:  [[ONE:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[TANH:%.+]] = mil.tanh %x : tensor<2x3xf32>
// CHECK-NEXT:  [[TANH2:%.+]] = mil.square [[TANH]] : tensor<2x3xf32>
// CHECK-NEXT:  [[DERIVATIVE:%.+]] = mil.sub [[ONE]], [[TANH2]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DERIVATIVE]], %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @activation_backward_tanh(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.activation_backward %x, %dy {kind = "tanh"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// axis = 2 with gamma_shape [1, H, D, 1]: the mean is over axis 2, and
// dgamma keeps a gradient per head, summed over the sequence only.
// CHECK-LABEL: func.func @rms_norm_backward_axis(
// CHECK:       [[MEAN_NG:%.+]] = mil.reduce_mean {{%.+}} {axes = array<i64: 2>, keep_dims = true} : (tensor<1x2x8x3xf32>) -> tensor<1x2x1x3xf32>
// CHECK:       %dx = mil.mul {{%.+}}, {{%.+}} : (tensor<1x2x1x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x3xf32>
// CHECK:       [[CONTRIBUTION:%.+]] = mil.mul {{%.+}}, %dy : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x3xf32>
// CHECK-NEXT:  %dg = mil.reduce_sum [[CONTRIBUTION]] {axes = array<i64: 3>, keep_dims = true} : (tensor<1x2x8x3xf32>) -> tensor<1x2x8x1xf32>
func.func @rms_norm_backward_axis(%x: tensor<1x2x8x3xf32>, %g: tensor<1x2x8x1xf32>, %dy: tensor<1x2x8x3xf32>) -> (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>) {
  %dx = rlx.rms_norm_backward_input %x, %g, %dy {eps = 1.0e-06 : f32, axis = 2 : i64} : (tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x3xf32>
  %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.0e-06 : f32, axis = 2 : i64, gamma_shape = array<i64: 1, 2, 8, 1>} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x8x1xf32>
  func.return %dx, %dg : tensor<1x2x8x3xf32>, tensor<1x2x8x1xf32>
}
