// RUN: xdsl-opt %s -p convert-rlx-to-mil,mil-fp16 | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil,mil-fp16 | filecheck %s --check-prefix=NO-F32

// mil-fp16 after convert-rlx-to-mil: rlx programs come out fp16 end to end.

// NO-F32-NOT: xf32>

// Causal attention with more queries (3) than keys (2): the additive mask
// keeps -1e4, and the row that sees no key is zeroed by the row mask.
// CHECK-LABEL: func.func @attention_fully_masked_rows(%q: tensor<1x1x3x4xf16>, %k: tensor<1x1x2x4xf16>, %v: tensor<1x1x2x4xf16>) -> tensor<1x1x3x4xf16> {
// CHECK:       mil.const dense<{{\[\[\[\[}}-1.000000e+04, -1.000000e+04], [0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x2xf16>
// CHECK:       mil.softmax {{.*}} : tensor<1x1x3x2xf16>
// CHECK-NEXT:  mil.const dense<{{\[\[\[\[}}0.000000e+00], [1.000000e+00], [1.000000e+00]]]]> : tensor<1x1x3x1xf16>
func.func @attention_fully_masked_rows(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x3x4xf32> {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x1x3x4xf32>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x3x4xf32>
  func.return %y : tensor<1x1x3x4xf32>
}

// Softmax cross-entropy: the logsumexp is taken over the mean (log 5 =
// 1.6094 in fp16: 1.609380), the labels stay int32 and the one-hot is f16.
// CHECK-LABEL: func.func @softmax_cross_entropy(%logits: tensor<2x5xf16>, %labels: tensor<2xi32>) -> tensor<2xf16> {
// CHECK-NEXT:  [[MAX:%.+]] = mil.reduce_max %logits {axes = array<i64: -1>, keep_dims = true} : (tensor<2x5xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[SHIFTED:%.+]] = mil.sub %logits, [[MAX]] : (tensor<2x5xf16>, tensor<2x1xf16>) -> tensor<2x5xf16>
// CHECK-NEXT:  [[EXP:%.+]] = mil.exp [[SHIFTED]] : tensor<2x5xf16>
// CHECK-NEXT:  [[MEAN:%.+]] = mil.reduce_mean [[EXP]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x5xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[MEAN]] {epsilon = 1.000000e-07 : f32} : tensor<2x1xf16>
// CHECK-NEXT:  [[LOG_N:%.+]] = mil.const dense<1.609380e+00> : tensor<f16>
// CHECK-NEXT:  [[LOG_SUM:%.+]] = mil.add [[LOG]], [[LOG_N]] : (tensor<2x1xf16>, tensor<f16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LSE:%.+]] = mil.add [[LOG_SUM]], [[MAX]] : (tensor<2x1xf16>, tensor<2x1xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot %labels {one_hot_vector_size = 5 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16} : (tensor<2xi32>) -> tensor<2x5xf16>
// CHECK-NEXT:  [[PICKED_ALL:%.+]] = mil.mul %logits, [[ONE_HOT]] : (tensor<2x5xf16>, tensor<2x5xf16>) -> tensor<2x5xf16>
// CHECK-NEXT:  [[PICKED:%.+]] = mil.reduce_sum [[PICKED_ALL]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x5xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LOSS:%.+]] = mil.sub [[LSE]], [[PICKED]] : (tensor<2x1xf16>, tensor<2x1xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LOSS]] {shape = array<i64: 2>} : (tensor<2x1xf16>) -> tensor<2xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<2xf16>
func.func @softmax_cross_entropy(%logits: tensor<2x5xf32>, %labels: tensor<2xi32>) -> tensor<2xf32> {
  %y = rlx.softmax_cross_entropy %logits, %labels : (tensor<2x5xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// Its backward: softmax, one-hot and d_loss all in fp16.
// CHECK-LABEL: func.func @softmax_cross_entropy_backward(%logits: tensor<2x5xf16>, %labels: tensor<2xi32>, %d: tensor<2xf16>) -> tensor<2x5xf16> {
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax %logits {axis = -1 : i64} : tensor<2x5xf16>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot %labels {one_hot_vector_size = 5 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16} : (tensor<2xi32>) -> tensor<2x5xf16>
// CHECK-NEXT:  [[DELTA:%.+]] = mil.sub [[PROBS]], [[ONE_HOT]] : (tensor<2x5xf16>, tensor<2x5xf16>) -> tensor<2x5xf16>
// CHECK-NEXT:  [[D_LOSS:%.+]] = mil.reshape %d {shape = array<i64: 2, 1>} : (tensor<2xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DELTA]], [[D_LOSS]] : (tensor<2x5xf16>, tensor<2x1xf16>) -> tensor<2x5xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x5xf16>
func.func @softmax_cross_entropy_backward(%logits: tensor<2x5xf32>, %labels: tensor<2xi32>, %d: tensor<2xf32>) -> tensor<2x5xf32> {
  %y = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<2x5xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// RMSNorm keeps its epsilon of 1e-6; rlx.log's "no epsilon" becomes 1e-7.
// CHECK-LABEL: func.func @rms_norm_and_log(%x: tensor<2x3xf16>, %g: tensor<3xf16>) -> tensor<2x3xf16> {
// CHECK:       mil.rsqrt {{.*}} {epsilon = 1.000000e-06 : f32} : tensor<2x1xf16>
// CHECK:       mil.log {{.*}} {epsilon = 1.000000e-07 : f32} : tensor<2x3xf16>
func.func @rms_norm_and_log(%x: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
  %n = rlx.rms_norm %x, %g {eps = 1.000000e-06 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %y = rlx.log %n : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
