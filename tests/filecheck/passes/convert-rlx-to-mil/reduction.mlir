// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, reduction family (passes/rlx_to_mil/reduction.py):
// the four reductions, softmax, cumsum, topk and argsort. argmax's reduce_argmax is checked
// in state.mlir, at the end of its kernel.

// NO-RLX-NOT: rlx.

// reduce_* -> the MIL reduction of that name; keep_dims defaults to false.
// CHECK-LABEL: func.func @reduce_sum(
// CHECK-NEXT:  [[REDUCE_SUM:%.+]] = mil.reduce_sum %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:  func.return [[REDUCE_SUM]] : tensor<2xf32>
func.func @reduce_sum(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %y = rlx.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK-LABEL: func.func @reduce_mean(
// CHECK-NEXT:  [[REDUCE_MEAN:%.+]] = mil.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  func.return [[REDUCE_MEAN]] : tensor<2x1xf32>
func.func @reduce_mean(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %y = rlx.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return %y : tensor<2x1xf32>
}

// CHECK-LABEL: func.func @reduce_max(
// CHECK-NEXT:  [[REDUCE_MAX:%.+]] = mil.reduce_max %x {axes = array<i64: 0, 2>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:  func.return [[REDUCE_MAX]] : tensor<3xf32>
func.func @reduce_max(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %y = rlx.reduce_max %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// CHECK-LABEL: func.func @reduce_min(
// CHECK-NEXT:  [[REDUCE_MIN:%.+]] = mil.reduce_min %x {axes = array<i64: 0>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:  func.return [[REDUCE_MIN]] : tensor<1x3xf32>
func.func @reduce_min(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %y = rlx.reduce_min %x {axes = array<i64: 0>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  func.return %y : tensor<1x3xf32>
}

// softmax -> MIL softmax; the axis defaults to -1.
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:  [[SOFTMAX:%.+]] = mil.softmax %x {axis = -1 : i64} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SOFTMAX]] : tensor<2x3xf32>
func.func @softmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.softmax %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @softmax_axis(
// CHECK-NEXT:  [[SOFTMAX:%.+]] = mil.softmax %x {axis = 0 : i64} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SOFTMAX]] : tensor<2x3xf32>
func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.softmax %x {axis = 0 : i64} : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// cumsum -> MIL cumsum on the axis made non-negative (MIL refuses negative
// axes but -1); exclusive and reverse are written only when set.
// CHECK-LABEL: func.func @cumsum(
// CHECK-NEXT:  [[CUMSUM:%.+]] = mil.cumsum %x {axis = 1 : i64} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[CUMSUM]] : tensor<2x3xf32>
func.func @cumsum(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.cumsum %x {axis = -1 : i64, exclusive = false} : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @cumsum_negative_axis(
// CHECK-NEXT:  [[CUMSUM:%.+]] = mil.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : tensor<2x3x4xf16>
// CHECK-NEXT:  func.return [[CUMSUM]] : tensor<2x3x4xf16>
func.func @cumsum_negative_axis(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  %y = rlx.cumsum %x {axis = -3 : i64, exclusive = true, reverse = true} : tensor<2x3x4xf16>
  func.return %y : tensor<2x3x4xf16>
}

// RoBERTa's position ids: cumsum of the i32 padding mask along the sequence.
// CHECK-LABEL: func.func @cumsum_i32(
// CHECK-NEXT:  [[CUMSUM:%.+]] = mil.cumsum %ids {axis = 1 : i64} : tensor<1x8xi32>
// CHECK-NEXT:  func.return [[CUMSUM]] : tensor<1x8xi32>
func.func @cumsum_i32(%ids: tensor<1x8xi32>) -> tensor<1x8xi32> {
  %y = rlx.cumsum %ids {axis = 1 : i64} : tensor<1x8xi32>
  func.return %y : tensor<1x8xi32>
}

// topk -> MIL topk (sorted, int32 indices: MIL's defaults); largest = false
// is ascending.
// CHECK-LABEL: func.func @topk(
// CHECK-NEXT:  [[TOP:%.+]], [[INDICES:%.+]] = mil.topk %x {k = 2 : i64, axis = -1 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
// CHECK-NEXT:  [[SORTED:%.+]], [[ORDER:%.+]] = mil.topk %x {k = 2 : i64, axis = 0 : i64, ascending = true} : (tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi32>)
// CHECK-NEXT:  func.return [[TOP]], [[INDICES]], [[ORDER]]
func.func @topk(%x: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>, tensor<2x5xi32>) {
  %top:2 = rlx.topk %x {k = 2 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  %sorted:2 = rlx.topk %x {k = 2 : i64, axis = 0 : i64, largest = false} : (tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi32>)
  func.return %top#0, %top#1, %sorted#1 : tensor<2x2xf32>, tensor<2x2xi32>, tensor<2x5xi32>
}

// argsort -> MIL argsort; MIL sorts descending unless `ascending`, rlx (as
// torch) ascending unless `descending`.
// CHECK-LABEL: func.func @argsort(
// CHECK-NEXT:  [[UP:%.+]] = mil.argsort %x {axis = -1 : i64, ascending = true} : (tensor<2x5xf32>) -> tensor<2x5xi32>
// CHECK-NEXT:  [[DOWN:%.+]] = mil.argsort %x {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xi32>
// CHECK-NEXT:  func.return [[UP]], [[DOWN]]
func.func @argsort(%x: tensor<2x5xf32>) -> (tensor<2x5xi32>, tensor<2x5xi32>) {
  %up = rlx.argsort %x : (tensor<2x5xf32>) -> tensor<2x5xi32>
  %down = rlx.argsort %x {axis = 0 : i64, descending = true} : (tensor<2x5xf32>) -> tensor<2x5xi32>
  func.return %up, %down : tensor<2x5xi32>, tensor<2x5xi32>
}
