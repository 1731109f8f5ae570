// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of softmax_cross_entropy and its backward.

// labels are [N] for logits [N, C].
// CHECK: Operation does not verify: rlx.softmax_cross_entropy: operand 'labels' [5] must be [6] for operand 'logits' [6, 100]
func.func @cross_entropy_label_shape(%logits: tensor<6x100xf32>, %labels: tensor<5xi32>) {
  %l = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x100xf32>, tensor<5xi32>) -> tensor<6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy: operand 'labels' [6, 1] must be [6] for operand 'logits' [6, 100]
func.func @cross_entropy_label_rank(%logits: tensor<6x100xf32>, %labels: tensor<6x1xi32>) {
  %l = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x100xf32>, tensor<6x1xi32>) -> tensor<6xf32>
  func.return
}

// -----

// labels are i32, or a float type holding class indices; i8 is neither.
// CHECK: Operation does not verify: rlx.softmax_cross_entropy: operand 'labels' must be i32 or a float type holding class indices, got i8
func.func @cross_entropy_label_i8(%logits: tensor<6x100xf32>, %labels: tensor<6xi8>) {
  %l = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x100xf32>, tensor<6xi8>) -> tensor<6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy: operand 'logits' must have rank 2, got shape [2, 6, 100]
func.func @cross_entropy_logits_rank(%logits: tensor<2x6x100xf32>, %labels: tensor<6xi32>) {
  %l = rlx.softmax_cross_entropy %logits, %labels : (tensor<2x6x100xf32>, tensor<6xi32>) -> tensor<6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy: operand 'logits' must have a float element type (f16 or f32), got i32
func.func @cross_entropy_logits_integer(%logits: tensor<6x100xi32>, %labels: tensor<6xi32>) {
  %l = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x100xi32>, tensor<6xi32>) -> tensor<6xi32>
  func.return
}

// -----

// The loss is per row: [N], not a scalar.
// CHECK: Operation does not verify: rlx.softmax_cross_entropy: result type [] f32 does not match the inferred type [6] f32
func.func @cross_entropy_result(%logits: tensor<6x100xf32>, %labels: tensor<6xi32>) {
  %l = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x100xf32>, tensor<6xi32>) -> tensor<f32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy_backward: operand 'd_loss' [6, 100] must be [6] for operand 'logits' [6, 100]
func.func @cross_entropy_backward_d_loss(%logits: tensor<6x100xf32>, %labels: tensor<6xi32>, %d: tensor<6x100xf32>) {
  %g = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<6x100xf32>, tensor<6xi32>, tensor<6x100xf32>) -> tensor<6x100xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy_backward: operands 'logits' (f32) and 'd_loss' (f16) must have the same element type
func.func @cross_entropy_backward_d_loss_element(%logits: tensor<6x100xf32>, %labels: tensor<6xi32>, %d: tensor<6xf16>) {
  %g = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<6x100xf32>, tensor<6xi32>, tensor<6xf16>) -> tensor<6x100xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy_backward: operand 'labels' must be i32 or a float type holding class indices, got i8
func.func @cross_entropy_backward_label_i8(%logits: tensor<6x100xf32>, %labels: tensor<6xi8>, %d: tensor<6xf32>) {
  %g = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<6x100xf32>, tensor<6xi8>, tensor<6xf32>) -> tensor<6x100xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax_cross_entropy_backward: result type [6] f32 does not match the inferred type [6, 100] f32
func.func @cross_entropy_backward_result(%logits: tensor<6x100xf32>, %labels: tensor<6xi32>, %d: tensor<6xf32>) {
  %g = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<6x100xf32>, tensor<6xi32>, tensor<6xf32>) -> tensor<6xf32>
  func.return
}
