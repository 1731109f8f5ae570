// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the reductions, softmax, argmax, cumsum, topk and argsort.

// CHECK: Operation does not verify: rlx.reduce_sum: property 'axes' value 3 is out of range [-3, 3) (rank 3)
func.func @reduce_sum_axis_range(%x: tensor<2x3x4xf32>) {
  %y = rlx.reduce_sum %x {axes = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// Axes 1 and -2 name the same axis of a rank-3 input.
// CHECK: Operation does not verify: rlx.reduce_mean: property 'axes' [1, -2] repeats an axis
func.func @reduce_mean_repeated_axis(%x: tensor<2x3x4xf32>) {
  %y = rlx.reduce_mean %x {axes = array<i64: 1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reduce_max: result type [2, 3] f32 does not match the inferred type [2, 3, 1] f32
func.func @reduce_max_keep_dims_result(%x: tensor<2x3x4xf32>) {
  %y = rlx.reduce_max %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reduce_min: operand 'input' must not be i1
func.func @reduce_min_bool(%x: tensor<2x3xi1>) {
  %y = rlx.reduce_min %x {axes = array<i64: 0>} : (tensor<2x3xi1>) -> tensor<3xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reduce_sum: axes must not be empty
func.func @reduce_sum_empty_axes(%x: tensor<2x3xf32>) {
  %y = rlx.reduce_sum %x {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// `axes` is required; `axis` is not one of its spellings.
// CHECK: Operation does not verify: property 'axes' expected in operation 'rlx.reduce_sum'
func.func @reduce_sum_missing_axes(%x: tensor<2x3xf32>) {
  %y = rlx.reduce_sum %x {axis = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reduce_max: operand 'input' has a dynamic shape tensor<?x3xf32>; only static shapes are supported
func.func @reduce_max_dynamic(%x: tensor<?x3xf32>) {
  %y = rlx.reduce_max %x {axes = array<i64: 1>} : (tensor<?x3xf32>) -> tensor<?xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax: property 'axis' value -3 is out of range [-2, 2) (rank 2)
func.func @softmax_axis_range(%x: tensor<2x8xf32>) {
  %y = rlx.softmax %x {axis = -3 : i64} : tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.softmax: operand 'input' must have a float element type (f16 or f32), got i32
func.func @softmax_integer(%x: tensor<2x8xi32>) {
  %y = rlx.softmax %x : tensor<2x8xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<2x8xf32> expected from variable 'T', but got tensor<2x1xf32>
func.func @softmax_result(%x: tensor<2x8xf32>) {
  %y = "rlx.softmax"(%x) : (tensor<2x8xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.argmax: property 'axis' value 2 is out of range [-2, 2) (rank 2)
func.func @argmax_axis(%x: tensor<3x5xf32>) {
  %i = rlx.argmax %x {axis = 2 : i64} : (tensor<3x5xf32>) -> tensor<3xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.cumsum: property 'axis' value -3 is out of range [-2, 2) for operand 'input' [3, 5]
func.func @cumsum_axis(%x: tensor<3x5xf32>) {
  %y = rlx.cumsum %x {axis = -3 : i64} : tensor<3x5xf32>
  func.return
}

// -----

// `axis` is required: torch.cumsum has no default dim.
// CHECK: Operation does not verify: property 'axis' expected in operation 'rlx.cumsum'
func.func @cumsum_missing_axis(%x: tensor<3x5xf32>) {
  %y = rlx.cumsum %x : tensor<3x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.cumsum: operand 'input' must be f16, f32 or i32, got i1
func.func @cumsum_bool(%x: tensor<3x5xi1>) {
  %y = rlx.cumsum %x {axis = 1 : i64} : tensor<3x5xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.cumsum: operand 'input' must be f16, f32 or i32, got i8
func.func @cumsum_i8(%x: tensor<3x5xi8>) {
  %y = rlx.cumsum %x {axis = 1 : i64} : tensor<3x5xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.cumsum: operand 'input' must have rank ≥ 1
func.func @cumsum_scalar(%x: tensor<f32>) {
  %y = rlx.cumsum %x {axis = 0 : i64} : tensor<f32>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<3x5xf32> expected from variable 'T', but got tensor<3x5xf16>
func.func @cumsum_result(%x: tensor<3x5xf32>) {
  %y = "rlx.cumsum"(%x) <{axis = 0 : i64}> : (tensor<3x5xf32>) -> tensor<3x5xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.topk: property 'k' value 5 is out of range [1, 4] for axis 2 of operand 'input' [2, 3, 4]
func.func @topk_too_many(%x: tensor<2x3x4xf32>) {
  %y:2 = rlx.topk %x {k = 5 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x5xf32>, tensor<2x3x5xi32>)
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.topk: operand 'input' must be f16, f32 or i32, got i1
func.func @topk_bool(%x: tensor<3x5xi1>) {
  %y:2 = rlx.topk %x {k = 1 : i64} : (tensor<3x5xi1>) -> (tensor<3x1xi1>, tensor<3x1xi32>)
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.topk: result #1 type [3, 2] f32 does not match the inferred type [3, 2] i32
func.func @topk_float_indices(%x: tensor<3x5xf32>) {
  %y:2 = rlx.topk %x {k = 2 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>)
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.argsort: property 'axis' value 2 is out of range [-2, 2) for operand 'input' [3, 5]
func.func @argsort_axis_range(%x: tensor<3x5xf32>) {
  %y = rlx.argsort %x {axis = 2 : i64} : (tensor<3x5xf32>) -> tensor<3x5xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.argsort: operand 'input' must be f16, f32 or i32, got i1
func.func @argsort_bool(%x: tensor<3x5xi1>) {
  %y = rlx.argsort %x : (tensor<3x5xi1>) -> tensor<3x5xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.argsort: result type [3, 5] f32 does not match the inferred type [3, 5] i32
func.func @argsort_float_indices(%x: tensor<3x5xf32>) {
  %y = rlx.argsort %x : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return
}
