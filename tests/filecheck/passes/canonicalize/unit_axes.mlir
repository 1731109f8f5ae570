// RUN: xdsl-opt %s -p canonicalize | filecheck %s

// MergeUnitReshapesIntoTranspose and SinkLayoutThroughSlice
// (passes/canonicalization.py): a reshape that only adds or drops axes of
// size 1 after a transpose of a reshape merges with them (into a transpose,
// and a reshape where the first one does more than add or drop such axes),
// and a slice of a transpose or of such a reshape moves above it.

// The layout changes mil-ane-layout puts around a rank-3 transpose of an
// ANE-form value: [1, C, 1, S] -> [1, C, S] -> [1, S, C] -> [1, S, 1, C]
// is one rank-4 transpose (an MLP-mixer's token mixing).
// CHECK-LABEL: func.func @around_transpose(
// CHECK-NEXT:    %b = mil.transpose %x {perm = array<i64: 0, 3, 2, 1>} : (tensor<1x8x1x6xf16>) -> tensor<1x6x1x8xf16>
// CHECK-NEXT:    func.return %b : tensor<1x6x1x8xf16>
func.func @around_transpose(%x: tensor<1x8x1x6xf16>) -> tensor<1x6x1x8xf16> {
  %a = mil.reshape %x {shape = array<i64: 1, 8, 6>} : (tensor<1x8x1x6xf16>) -> tensor<1x8x6xf16>
  %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x6xf16>) -> tensor<1x6x8xf16>
  %b = mil.reshape %t {shape = array<i64: 1, 6, 1, 8>} : (tensor<1x6x8xf16>) -> tensor<1x6x1x8xf16>
  func.return %b : tensor<1x6x1x8xf16>
}

// Negative: a reshape that keeps the rank (moving an axis of size 1) is
// left alone.
// CHECK-LABEL: func.func @same_rank(
// CHECK-NEXT:    %t = mil.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<4x1x6xf32>) -> tensor<6x1x4xf32>
// CHECK-NEXT:    %b = mil.reshape %t {shape = array<i64: 1, 6, 4>} : (tensor<6x1x4xf32>) -> tensor<1x6x4xf32>
// CHECK-NEXT:    func.return %b : tensor<1x6x4xf32>
func.func @same_rank(%x: tensor<4x1x6xf32>) -> tensor<1x6x4xf32> {
  %t = mil.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<4x1x6xf32>) -> tensor<6x1x4xf32>
  %b = mil.reshape %t {shape = array<i64: 1, 6, 4>} : (tensor<6x1x4xf32>) -> tensor<1x6x4xf32>
  func.return %b : tensor<1x6x4xf32>
}

// A head split before the transpose: the split's reshape takes the unit
// axis in (one reshape and one transpose instead of two reshapes and a
// transpose).
// CHECK-LABEL: func.func @after_split(
// CHECK-NEXT:    %b = mil.reshape %x {shape = array<i64: 1, 3, 4, 5>} : (tensor<1x12x1x5xf32>) -> tensor<1x3x4x5xf32>
// CHECK-NEXT:    %b_1 = mil.transpose %b {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x4xf32>
// CHECK-NEXT:    func.return %b_1 : tensor<1x3x5x4xf32>
func.func @after_split(%x: tensor<1x12x1x5xf32>) -> tensor<1x3x5x4xf32> {
  %a = mil.reshape %x {shape = array<i64: 3, 4, 5>} : (tensor<1x12x1x5xf32>) -> tensor<3x4x5xf32>
  %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<3x4x5xf32>) -> tensor<3x5x4xf32>
  %b = mil.reshape %t {shape = array<i64: 1, 3, 5, 4>} : (tensor<3x5x4xf32>) -> tensor<1x3x5x4xf32>
  func.return %b : tensor<1x3x5x4xf32>
}

// A transpose that only moves axes of size 1 between two such reshapes
// cancels.
// CHECK-LABEL: func.func @units_only(
// CHECK-NEXT:    func.return %x : tensor<1x8x1x1xf32>
func.func @units_only(%x: tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32> {
  %a = mil.reshape %x {shape = array<i64: 1, 8, 1>} : (tensor<1x8x1x1xf32>) -> tensor<1x8x1xf32>
  %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x1xf32>) -> tensor<1x1x8xf32>
  %b = mil.reshape %t {shape = array<i64: 1, 8, 1, 1>} : (tensor<1x1x8xf32>) -> tensor<1x8x1x1xf32>
  func.return %b : tensor<1x8x1x1xf32>
}

// Negative: a reshape that merges axes after the transpose stays.
// CHECK-LABEL: func.func @merging_reshape(
// CHECK-NEXT:    %t = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %b = mil.reshape %t {shape = array<i64: 4, 6>} : (tensor<4x2x3xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %b : tensor<4x6xf32>
func.func @merging_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %t = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %b = mil.reshape %t {shape = array<i64: 4, 6>} : (tensor<4x2x3xf32>) -> tensor<4x6xf32>
  func.return %b : tensor<4x6xf32>
}

// Negative: a transpose with another use stays, and so does its reshape.
// CHECK-LABEL: func.func @shared_transpose(
// CHECK-NEXT:    %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %b = mil.reshape %t {shape = array<i64: 1, 3, 2>} : (tensor<3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT:    func.return %t, %b : tensor<3x2xf32>, tensor<1x3x2xf32>
func.func @shared_transpose(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<1x3x2xf32>) {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = mil.reshape %t {shape = array<i64: 1, 3, 2>} : (tensor<3x2xf32>) -> tensor<1x3x2xf32>
  func.return %t, %b : tensor<3x2xf32>, tensor<1x3x2xf32>
}

// SinkLayoutThroughSlice: the first token of a sequence in ANE form, read
// through its logical view (a pooler's input), is one slice of the ANE form.
// CHECK-LABEL: func.func @first_token(
// CHECK-NEXT:    %s = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 8, 1, 1>} : (tensor<1x8x1x6xf16>) -> tensor<1x8x1x1xf16>
// CHECK-NEXT:    func.return %s : tensor<1x8x1x1xf16>
func.func @first_token(%x: tensor<1x8x1x6xf16>) -> tensor<1x8x1x1xf16> {
  %a = mil.reshape %x {shape = array<i64: 1, 8, 6>} : (tensor<1x8x1x6xf16>) -> tensor<1x8x6xf16>
  %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x6xf16>) -> tensor<1x6x8xf16>
  %s = mil.slice_by_size %t {begin = array<i64: 0, 0, 0>, size = array<i64: 1, 1, 8>} : (tensor<1x6x8xf16>) -> tensor<1x1x8xf16>
  %b = mil.reshape %s {shape = array<i64: 1, 8, 1, 1>} : (tensor<1x1x8xf16>) -> tensor<1x8x1x1xf16>
  func.return %b : tensor<1x8x1x1xf16>
}

// A slice of a transpose slices the transpose's input (its begin and size
// permuted; -1 still reads to the end) and transposes the slice.
// CHECK-LABEL: func.func @slice_of_transpose(
// CHECK-NEXT:    %s = mil.slice_by_size %x {begin = array<i64: 2, 1>, size = array<i64: -1, 2>} : (tensor<4x6xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %u = mil.relu %s : tensor<2x2xf32>
// CHECK-NEXT:    %u_1 = mil.transpose %u {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %c = mil.const dense<0.000000e+00> : tensor<2x1xf32>
// CHECK-NEXT:    %r = mil.concat %u_1, %c {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %r : tensor<2x3xf32>
func.func @slice_of_transpose(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %s = mil.slice_by_size %t {begin = array<i64: 1, 2>, size = array<i64: 2, -1>} : (tensor<6x4xf32>) -> tensor<2x2xf32>
  %u = mil.relu %s : tensor<2x2xf32>
  %c = mil.const dense<0.0> : tensor<2x1xf32>
  %r = mil.concat %u, %c {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// Negative: a transpose with another use is not moved.
// CHECK-LABEL: func.func @shared_slice_source(
// CHECK-NEXT:    %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %s = mil.slice_by_size %t {begin = array<i64: 0, 0>, size = array<i64: 2, 4>} : (tensor<6x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %t, %s : tensor<6x4xf32>, tensor<2x4xf32>
func.func @shared_slice_source(%x: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<2x4xf32>) {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %s = mil.slice_by_size %t {begin = array<i64: 0, 0>, size = array<i64: 2, 4>} : (tensor<6x4xf32>) -> tensor<2x4xf32>
  func.return %t, %s : tensor<6x4xf32>, tensor<2x4xf32>
}

// Negative: a slice of a reshape that merges axes stays where it is.
// CHECK-LABEL: func.func @slice_of_merge(
// CHECK-NEXT:    %r = mil.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %s = mil.slice_by_size %r {begin = array<i64: 0, 0>, size = array<i64: 6, 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
// CHECK-NEXT:    func.return %s : tensor<6x2xf32>
func.func @slice_of_merge(%x: tensor<2x3x4xf32>) -> tensor<6x2xf32> {
  %r = mil.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %s = mil.slice_by_size %r {begin = array<i64: 0, 0>, size = array<i64: 6, 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
  func.return %s : tensor<6x2xf32>
}
