// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Softmax cross-entropy (i32 and float labels) and its gradient.

// CHECK-LABEL: func.func @cross_entropy(
// GENERIC-LABEL: "func.func"() <{sym_name = "cross_entropy"
func.func @cross_entropy(%logits: tensor<6x32000xf32>, %labels: tensor<6xi32>, %flabels: tensor<6xf32>, %hl: tensor<4x10xf16>, %hy: tensor<4xf16>) {
  // CHECK-NEXT: %loss = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x32000xf32>, tensor<6xi32>) -> tensor<6xf32>
  // GENERIC: %loss = "rlx.softmax_cross_entropy"(%logits, %labels) : (tensor<6x32000xf32>, tensor<6xi32>) -> tensor<6xf32>
  %loss = rlx.softmax_cross_entropy %logits, %labels : (tensor<6x32000xf32>, tensor<6xi32>) -> tensor<6xf32>
  // CHECK-NEXT: %floss = rlx.softmax_cross_entropy %logits, %flabels : (tensor<6x32000xf32>, tensor<6xf32>) -> tensor<6xf32>
  // GENERIC-NEXT: %floss = "rlx.softmax_cross_entropy"(%logits, %flabels) : (tensor<6x32000xf32>, tensor<6xf32>) -> tensor<6xf32>
  %floss = rlx.softmax_cross_entropy %logits, %flabels : (tensor<6x32000xf32>, tensor<6xf32>) -> tensor<6xf32>
  // CHECK-NEXT: %hloss = rlx.softmax_cross_entropy %hl, %hy : (tensor<4x10xf16>, tensor<4xf16>) -> tensor<4xf16>
  // GENERIC-NEXT: %hloss = "rlx.softmax_cross_entropy"(%hl, %hy) : (tensor<4x10xf16>, tensor<4xf16>) -> tensor<4xf16>
  %hloss = rlx.softmax_cross_entropy %hl, %hy : (tensor<4x10xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// CHECK-LABEL: func.func @cross_entropy_backward(
// GENERIC-LABEL: "func.func"() <{sym_name = "cross_entropy_backward"
func.func @cross_entropy_backward(%logits: tensor<6x100xf32>, %labels: tensor<6xi32>, %flabels: tensor<6xf32>, %d: tensor<6xf32>) {
  // CHECK-NEXT: %grad = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<6x100xf32>, tensor<6xi32>, tensor<6xf32>) -> tensor<6x100xf32>
  // GENERIC: %grad = "rlx.softmax_cross_entropy_backward"(%logits, %labels, %d) : (tensor<6x100xf32>, tensor<6xi32>, tensor<6xf32>) -> tensor<6x100xf32>
  %grad = rlx.softmax_cross_entropy_backward %logits, %labels, %d : (tensor<6x100xf32>, tensor<6xi32>, tensor<6xf32>) -> tensor<6x100xf32>
  // CHECK-NEXT: %fgrad = rlx.softmax_cross_entropy_backward %logits, %flabels, %d : (tensor<6x100xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6x100xf32>
  // GENERIC-NEXT: %fgrad = "rlx.softmax_cross_entropy_backward"(%logits, %flabels, %d) : (tensor<6x100xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6x100xf32>
  %fgrad = rlx.softmax_cross_entropy_backward %logits, %flabels, %d : (tensor<6x100xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6x100xf32>
  func.return
}
