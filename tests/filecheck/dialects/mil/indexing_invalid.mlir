// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of gather, one_hot and band_part.

// CHECK: Operation does not verify: mil.gather: operand 'indices' has element type f32, expected one of i32, i16, ui16, i8
func.func @gather_float_indices(%x: tensor<10x4xf32>, %i: tensor<3xf32>) {
  %r = mil.gather %x, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// MIL's gather has no bool data.
// CHECK: Operation does not verify: mil.gather: operand 'x' has element type i1, expected one of f16, f32, i32, i8
func.func @gather_bool(%x: tensor<10xi1>, %i: tensor<3xi32>) {
  %r = mil.gather %x, %i : (tensor<10xi1>, tensor<3xi32>) -> tensor<3xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.gather: property 'axis' value 2 is out of range [-2, 2) for operand 'x' [10, 4]
func.func @gather_axis(%x: tensor<10x4xf32>, %i: tensor<3xi32>) {
  %r = mil.gather %x, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<10x4x3xf32>
  func.return
}

// -----

// Batch axes come before the gather axis and are shared by x and indices.
// CHECK: Operation does not verify: mil.gather: the first 1 (batch) dimensions of operand 'x' [2, 3, 4] and operand 'indices' [3, 5] differ
func.func @gather_batch_dims(%x: tensor<2x3x4xf32>, %i: tensor<3x5xi32>) {
  %r = mil.gather %x, %i {axis = 2 : i64, batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<3x5xi32>) -> tensor<2x3x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.gather: batch_dims 2 must lie in [0, 1]: at most axis 1 and the rank of operand 'indices' [2, 3, 5]
func.func @gather_batch_dims_after_axis(%x: tensor<2x3x4xf32>, %i: tensor<2x3x5xi32>) {
  %r = mil.gather %x, %i {axis = 1 : i64, batch_dims = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x5xi32>) -> tensor<2x3x5x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.gather: result type [3, 10] f32 does not match the inferred type [3, 4] f32
func.func @gather_result(%x: tensor<10x4xf32>, %i: tensor<3xi32>) {
  %r = mil.gather %x, %i : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x10xf32>
  func.return
}

// -----

// one_hot takes int32 indices.
// CHECK: Operation does not verify: mil.one_hot: operand 'indices' has element type i8, expected one of i32
func.func @one_hot_indices(%i: tensor<4xi8>) {
  %r = mil.one_hot %i {one_hot_vector_size = 3 : i64} : (tensor<4xi8>) -> tensor<4x3xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.one_hot: properties 'on_value' (f16) and 'off_value' (f32) must have the same type
func.func @one_hot_value_types(%i: tensor<4xi32>) {
  %r = mil.one_hot %i {one_hot_vector_size = 3 : i64, on_value = 1.0 : f16, off_value = 0.0 : f32} : (tensor<4xi32>) -> tensor<4x3xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.one_hot: property 'on_value' has type f64, expected one of f16, f32, i32, i1
func.func @one_hot_f64(%i: tensor<4xi32>) {
  %r = mil.one_hot %i {one_hot_vector_size = 3 : i64, on_value = 1.0 : f64} : (tensor<4xi32>) -> tensor<4x3xf64>
  func.return
}

// -----

// Without on_value and off_value the result is MIL's default int32.
// CHECK: Operation does not verify: mil.one_hot: result type [4, 3] f32 does not match the inferred type [4, 3] i32
func.func @one_hot_default_type(%i: tensor<4xi32>) {
  %r = mil.one_hot %i {one_hot_vector_size = 3 : i64} : (tensor<4xi32>) -> tensor<4x3xf32>
  func.return
}

// -----

// The new axis may go anywhere in the result, rank(indices) + 1.
// CHECK: Operation does not verify: mil.one_hot: property 'axis' value 2 is out of range [-2, 2) for operand 'indices' [4]
func.func @one_hot_axis(%i: tensor<4xi32>) {
  %r = mil.one_hot %i {one_hot_vector_size = 3 : i64, axis = 2 : i64} : (tensor<4xi32>) -> tensor<4x3xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.one_hot: one_hot_vector_size -1 must be >= 0
func.func @one_hot_size(%i: tensor<4xi32>) {
  %r = mil.one_hot %i {one_hot_vector_size = -1 : i64} : (tensor<4xi32>) -> tensor<4x3xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.band_part: operand 'x' must have rank >= 2, got shape [8]
func.func @band_part_rank(%x: tensor<8xf32>) {
  %r = mil.band_part %x {lower = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}
