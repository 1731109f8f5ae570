// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, linear algebra and shape family
// (passes/rlx_to_mil/shape.py): matmul, reshape, transpose, narrow, concat,
// expand and gather.

// NO-RLX-NOT: rlx.

// matmul -> MIL matmul; absent transposes become explicit false flags.
// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT:  [[MATMUL:%.+]] = mil.matmul %a, %b {transpose_x = false, transpose_y = false} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  func.return [[MATMUL]] : tensor<2x4xf32>
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = rlx.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// transpose_rhs -> transpose_y.
// CHECK-LABEL: func.func @matmul_transpose_rhs(
// CHECK-NEXT:  [[MATMUL:%.+]] = mil.matmul %a, %b {transpose_x = false, transpose_y = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  func.return [[MATMUL]] : tensor<2x4xf32>
func.func @matmul_transpose_rhs(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %y = rlx.matmul %a, %b {transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// transpose_lhs -> transpose_x.
// CHECK-LABEL: func.func @matmul_transpose_lhs(
// CHECK-NEXT:  [[MATMUL:%.+]] = mil.matmul %a, %b {transpose_x = true, transpose_y = false} : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  func.return [[MATMUL]] : tensor<2x4xf32>
func.func @matmul_transpose_lhs(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = rlx.matmul %a, %b {transpose_lhs = true} : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_both(
// CHECK-NEXT:  [[MATMUL:%.+]] = mil.matmul %a, %b {transpose_x = true, transpose_y = true} : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  func.return [[MATMUL]] : tensor<2x4xf32>
func.func @matmul_transpose_both(%a: tensor<3x2xf32>, %b: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %y = rlx.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// Batch axes broadcast in MIL's matmul as in rlx's: no tile is emitted.
// CHECK-LABEL: func.func @matmul_batched(
// CHECK-NEXT:  [[MATMUL:%.+]] = mil.matmul %a, %b {transpose_x = false, transpose_y = false} : (tensor<2x1x2x3xf16>, tensor<3x3x4xf16>) -> tensor<2x3x2x4xf16>
// CHECK-NEXT:  func.return [[MATMUL]] : tensor<2x3x2x4xf16>
func.func @matmul_batched(%a: tensor<2x1x2x3xf16>, %b: tensor<3x3x4xf16>) -> tensor<2x3x2x4xf16> {
  %y = rlx.matmul %a, %b : (tensor<2x1x2x3xf16>, tensor<3x3x4xf16>) -> tensor<2x3x2x4xf16>
  func.return %y : tensor<2x3x2x4xf16>
}

// reshape -> MIL reshape with the result shape as its `shape`.
// CHECK-LABEL: func.func @reshape(
// CHECK-NEXT:  [[RESHAPE:%.+]] = mil.reshape %x {shape = array<i64: 3, 1, 2>} : (tensor<2x3xf32>) -> tensor<3x1x2xf32>
// CHECK-NEXT:  func.return [[RESHAPE]] : tensor<3x1x2xf32>
func.func @reshape(%x: tensor<2x3xf32>) -> tensor<3x1x2xf32> {
  %y = rlx.reshape %x : tensor<2x3xf32> -> tensor<3x1x2xf32>
  func.return %y : tensor<3x1x2xf32>
}

// transpose(perm) -> MIL transpose(perm).
// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:  [[TRANSPOSE:%.+]] = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:  func.return [[TRANSPOSE]] : tensor<4x2x3xf32>
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %y = rlx.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %y : tensor<4x2x3xf32>
}

// narrow -> slice_by_size: begin `start` / size `length` on the axis,
// begin 0 / size -1 (to the end) elsewhere.
// CHECK-LABEL: func.func @narrow(
// CHECK-NEXT:  [[SLICE_BY_SIZE:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 1, 0>, size = array<i64: -1, 2, -1>} : (tensor<2x5x3xf32>) -> tensor<2x2x3xf32>
// CHECK-NEXT:  func.return [[SLICE_BY_SIZE]] : tensor<2x2x3xf32>
func.func @narrow(%x: tensor<2x5x3xf32>) -> tensor<2x2x3xf32> {
  %y = rlx.narrow %x {axis = 1 : i64, start = 1 : i64, length = 2 : i64} : (tensor<2x5x3xf32>) -> tensor<2x2x3xf32>
  func.return %y : tensor<2x2x3xf32>
}

// A negative axis counts from the end: -1 is axis 2 here.
// CHECK-LABEL: func.func @narrow_negative_axis(
// CHECK-NEXT:  [[SLICE_BY_SIZE:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 1>, size = array<i64: -1, -1, 2>} : (tensor<2x5x3xf32>) -> tensor<2x5x2xf32>
// CHECK-NEXT:  func.return [[SLICE_BY_SIZE]] : tensor<2x5x2xf32>
func.func @narrow_negative_axis(%x: tensor<2x5x3xf32>) -> tensor<2x5x2xf32> {
  %y = rlx.narrow %x {axis = -1 : i64, start = 1 : i64, length = 2 : i64} : (tensor<2x5x3xf32>) -> tensor<2x5x2xf32>
  func.return %y : tensor<2x5x2xf32>
}

// A concat of one input is that input: no mil op.
// CHECK-LABEL: func.func @concat_one_input(
// CHECK-NEXT:  func.return %x : tensor<2x3xf32>
func.func @concat_one_input(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.concat %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// concat of several -> MIL concat(values, axis) with interleave = false.
// CHECK-LABEL: func.func @concat(
// CHECK-NEXT:  [[CONCAT:%.+]] = mil.concat %a, %b, %c {axis = -1 : i64, interleave = false} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:  func.return [[CONCAT]] : tensor<2x6xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x2xf32>) -> tensor<2x6xf32> {
  %y = rlx.concat %a, %b, %c {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// expand at the same rank: tile each size-1 axis up to its target size.
// CHECK-LABEL: func.func @expand_same_rank(
// CHECK-NEXT:  [[TILE:%.+]] = mil.tile %x {reps = array<i64: 2, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[TILE]] : tensor<2x3xf32>
func.func @expand_same_rank(%x: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.expand %x : tensor<1x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// A rank-extending expand first reshapes to the target rank with leading 1s.
// CHECK-LABEL: func.func @expand_rank(
// CHECK-NEXT:  [[RESHAPE:%.+]] = mil.reshape %x {shape = array<i64: 1, 1, 3>} : (tensor<3xf32>) -> tensor<1x1x3xf32>
// CHECK-NEXT:  [[TILE:%.+]] = mil.tile [[RESHAPE]] {reps = array<i64: 4, 2, 1>} : (tensor<1x1x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:  func.return [[TILE]] : tensor<4x2x3xf32>
func.func @expand_rank(%x: tensor<3xf32>) -> tensor<4x2x3xf32> {
  %y = rlx.expand %x : tensor<3xf32> -> tensor<4x2x3xf32>
  func.return %y : tensor<4x2x3xf32>
}

// Only leading 1s added: the reshape alone, no tile.
// CHECK-LABEL: func.func @expand_rank_only(
// CHECK-NEXT:  [[RESHAPE:%.+]] = mil.reshape %x {shape = array<i64: 1, 2, 3>} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
// CHECK-NEXT:  func.return [[RESHAPE]] : tensor<1x2x3xf32>
func.func @expand_rank_only(%x: tensor<2x3xf32>) -> tensor<1x2x3xf32> {
  %y = rlx.expand %x : tensor<2x3xf32> -> tensor<1x2x3xf32>
  func.return %y : tensor<1x2x3xf32>
}

// A rank-0 input is reshaped to [1, 1], then tiled.
// CHECK-LABEL: func.func @expand_scalar(
// CHECK-NEXT:  [[RESHAPE:%.+]] = mil.reshape %x {shape = array<i64: 1, 1>} : (tensor<f16>) -> tensor<1x1xf16>
// CHECK-NEXT:  [[TILE:%.+]] = mil.tile [[RESHAPE]] {reps = array<i64: 2, 3>} : (tensor<1x1xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[TILE]] : tensor<2x3xf16>
func.func @expand_scalar(%x: tensor<f16>) -> tensor<2x3xf16> {
  %y = rlx.expand %x : tensor<f16> -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// An expand to its own shape is the input: no mil op.
// CHECK-LABEL: func.func @expand_identity(
// CHECK-NEXT:  func.return %x : tensor<2x3xf32>
func.func @expand_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.expand %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// gather(table, indices, axis) -> MIL gather(x, indices, axis).
// CHECK-LABEL: func.func @gather(
// CHECK-NEXT:  [[GATHER:%.+]] = mil.gather %table, %ids {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[GATHER]] : tensor<2x3xf32>
func.func @gather(%table: tensor<5x3xf32>, %ids: tensor<2xi32>) -> tensor<2x3xf32> {
  %y = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gather_negative_axis(
// CHECK-NEXT:  [[GATHER:%.+]] = mil.gather %x, %ids {axis = -1 : i64} : (tensor<2x5xf16>, tensor<3xi32>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[GATHER]] : tensor<2x3xf16>
func.func @gather_negative_axis(%x: tensor<2x5xf16>, %ids: tensor<3xi32>) -> tensor<2x3xf16> {
  %y = rlx.gather %x, %ids {axis = -1 : i64} : (tensor<2x5xf16>, tensor<3xi32>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}
