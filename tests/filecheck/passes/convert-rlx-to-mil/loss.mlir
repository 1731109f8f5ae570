// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, loss family (passes/rlx_to_mil/loss.py): softmax
// cross-entropy and its backward. The label's logit is picked with
// one_hot + reduce_sum, so the op count does not depend on the class count C.

// NO-RLX-NOT: rlx.

// loss = logsumexp(x) - sum(x * onehot(label)), with the max-shifted
// logsumexp(x) = log(sum(exp(x - m))) + m, m = max(x); [N, 1] -> [N].
// CHECK-LABEL: func.func @softmax_cross_entropy(
// CHECK-NEXT:  [[MAX:%.+]] = mil.reduce_max %logits {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[SHIFTED:%.+]] = mil.sub %logits, [[MAX]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[EXP:%.+]] = mil.exp [[SHIFTED]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SUM_EXP:%.+]] = mil.reduce_sum [[EXP]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[SUM_EXP]] {epsilon = 1.401300e-45 : f32} : tensor<2x1xf32>
// CHECK-NEXT:  [[LOGSUMEXP:%.+]] = mil.add [[LOG]], [[MAX]] : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot %labels {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f32, off_value = 0.000000e+00 : f32} : (tensor<2xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.mul %logits, [[ONE_HOT]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[PICKED:%.+]] = mil.reduce_sum [[MASKED]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[LOSS:%.+]] = mil.sub [[LOGSUMEXP]], [[PICKED]] : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LOSS]] {shape = array<i64: 2>} : (tensor<2x1xf32>) -> tensor<2xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2xf32>
func.func @softmax_cross_entropy(%logits: tensor<2x3xf32>, %labels: tensor<2xi32>) -> tensor<2xf32> {
  %y = rlx.softmax_cross_entropy %logits, %labels : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// Labels held as floats are cast to int32 for MIL's one_hot.
// CHECK-LABEL: func.func @softmax_cross_entropy_float_labels(
// CHECK-NEXT:  [[MAX:%.+]] = mil.reduce_max %logits {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[SHIFTED:%.+]] = mil.sub %logits, [[MAX]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[EXP:%.+]] = mil.exp [[SHIFTED]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SUM_EXP:%.+]] = mil.reduce_sum [[EXP]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[SUM_EXP]] {epsilon = 1.401300e-45 : f32} : tensor<2x1xf32>
// CHECK-NEXT:  [[LOGSUMEXP:%.+]] = mil.add [[LOG]], [[MAX]] : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[LABELS:%.+]] = mil.cast %labels {dtype = "int32"} : (tensor<2xf32>) -> tensor<2xi32>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot [[LABELS]] {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f32, off_value = 0.000000e+00 : f32} : (tensor<2xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.mul %logits, [[ONE_HOT]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[PICKED:%.+]] = mil.reduce_sum [[MASKED]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[LOSS:%.+]] = mil.sub [[LOGSUMEXP]], [[PICKED]] : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LOSS]] {shape = array<i64: 2>} : (tensor<2x1xf32>) -> tensor<2xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2xf32>
func.func @softmax_cross_entropy_float_labels(%logits: tensor<2x3xf32>, %labels: tensor<2xf32>) -> tensor<2xf32> {
  %y = rlx.softmax_cross_entropy %logits, %labels : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// f16 logits: the one-hot is f16 (on_value and off_value too).
// CHECK-LABEL: func.func @softmax_cross_entropy_f16(
// CHECK-NEXT:  [[MAX:%.+]] = mil.reduce_max %logits {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[SHIFTED:%.+]] = mil.sub %logits, [[MAX]] : (tensor<2x3xf16>, tensor<2x1xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  [[EXP:%.+]] = mil.exp [[SHIFTED]] : tensor<2x3xf16>
// CHECK-NEXT:  [[SUM_EXP:%.+]] = mil.reduce_sum [[EXP]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[SUM_EXP]] {epsilon = 1.401300e-45 : f32} : tensor<2x1xf16>
// CHECK-NEXT:  [[LOGSUMEXP:%.+]] = mil.add [[LOG]], [[MAX]] : (tensor<2x1xf16>, tensor<2x1xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LABELS:%.+]] = mil.cast %labels {dtype = "int32"} : (tensor<2xf16>) -> tensor<2xi32>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot [[LABELS]] {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16} : (tensor<2xi32>) -> tensor<2x3xf16>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.mul %logits, [[ONE_HOT]] : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  [[PICKED:%.+]] = mil.reduce_sum [[MASKED]] {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LOSS:%.+]] = mil.sub [[LOGSUMEXP]], [[PICKED]] : (tensor<2x1xf16>, tensor<2x1xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LOSS]] {shape = array<i64: 2>} : (tensor<2x1xf16>) -> tensor<2xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<2xf16>
func.func @softmax_cross_entropy_f16(%logits: tensor<2x3xf16>, %labels: tensor<2xf16>) -> tensor<2xf16> {
  %y = rlx.softmax_cross_entropy %logits, %labels : (tensor<2x3xf16>, tensor<2xf16>) -> tensor<2xf16>
  func.return %y : tensor<2xf16>
}

// d_logits = (softmax(x) - onehot(label)) * d_loss[:, None].
// CHECK-LABEL: func.func @softmax_cross_entropy_backward(
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax %logits {axis = -1 : i64} : tensor<2x3xf32>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot %labels {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f32, off_value = 0.000000e+00 : f32} : (tensor<2xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DELTA:%.+]] = mil.sub [[PROBS]], [[ONE_HOT]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[D_LOSS:%.+]] = mil.reshape %d {shape = array<i64: 2, 1>} : (tensor<2xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DELTA]], [[D_LOSS]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @softmax_cross_entropy_backward(%logits: tensor<2x3xf32>, %labels: tensor<2xi32>, %d: tensor<2xf32>) -> tensor<2x3xf32> {
  %y = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<2x3xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @softmax_cross_entropy_backward_float_labels(
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax %logits {axis = -1 : i64} : tensor<2x3xf32>
// CHECK-NEXT:  [[LABELS:%.+]] = mil.cast %labels {dtype = "int32"} : (tensor<2xf32>) -> tensor<2xi32>
// CHECK-NEXT:  [[ONE_HOT:%.+]] = mil.one_hot [[LABELS]] {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f32, off_value = 0.000000e+00 : f32} : (tensor<2xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[DELTA:%.+]] = mil.sub [[PROBS]], [[ONE_HOT]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[D_LOSS:%.+]] = mil.reshape %d {shape = array<i64: 2, 1>} : (tensor<2xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[DELTA]], [[D_LOSS]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @softmax_cross_entropy_backward_float_labels(%logits: tensor<2x3xf32>, %labels: tensor<2xf32>, %d: tensor<2xf32>) -> tensor<2x3xf32> {
  %y = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
