// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// SinkLayoutThroughElementwise (passes/canonicalization.py):
// f(L(a), L(b), s) = L(f(a, b, s)) when every operand of the elementwise op
// f with more than one element went through the same layout op L (one perm,
// or one source and target shape), the rest are one-element scalars that
// broadcast the same either side of L, and f is L's only user. L then meets
// the inverse layout op below it and cancels.

// A unary op between a transpose and its inverse.
// CHECK-LABEL: func.func @unary_cancels(
// CHECK-NEXT:  %r = mil.relu %x : tensor<2x3x4xf32>
// CHECK-NEXT:  func.return %r : tensor<2x3x4xf32>
func.func @unary_cancels(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %t = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %r = mil.relu %t : tensor<4x2x3xf32>
  %u = mil.transpose %r {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %u : tensor<2x3x4xf32>
}

// Properties of the moved op (epsilon) are kept.
// CHECK-LABEL: func.func @unary_with_property(
// CHECK-NEXT:  %r = mil.rsqrt %x {epsilon = 1.000000e-06 : f32} : tensor<2x3xf16>
// CHECK-NEXT:  func.return %r : tensor<2x3xf16>
func.func @unary_with_property(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf16>) -> tensor<3x2xf16>
  %r = mil.rsqrt %t {epsilon = 1.0e-6 : f32} : tensor<3x2xf16>
  %u = mil.transpose %r {perm = array<i64: 1, 0>} : (tensor<3x2xf16>) -> tensor<2x3xf16>
  func.return %u : tensor<2x3xf16>
}

// A chain of binary ops with same-perm transposed operands and a rank-0
// scalar const: all layout ops sink to the end and cancel. Operands of the
// same rank may broadcast against each other.
// CHECK-LABEL: func.func @binary_chain(
// CHECK-NEXT:  %s = mil.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  %a = mil.add %x, %y : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  %m = mil.mul %a, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  func.return %m : tensor<2x3x4xf32>
func.func @binary_chain(%x: tensor<2x3x4xf32>, %y: tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
  %t = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %v = mil.transpose %y {perm = array<i64: 2, 0, 1>} : (tensor<2x1x4xf32>) -> tensor<4x2x1xf32>
  %s = mil.const dense<2.0> : tensor<f32>
  %a = mil.add %t, %v : (tensor<4x2x3xf32>, tensor<4x2x1xf32>) -> tensor<4x2x3xf32>
  %m = mil.mul %a, %s : (tensor<4x2x3xf32>, tensor<f32>) -> tensor<4x2x3xf32>
  %u = mil.transpose %m {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %u : tensor<2x3x4xf32>
}

// Reshapes from one source shape to one target move the same way; a
// [1, 1] scalar const counts as a scalar (rank 2 fits either side).
// CHECK-LABEL: func.func @reshape_binary(
// CHECK-NEXT:  %s = mil.const dense<5.000000e-01> : tensor<1x1xf16>
// CHECK-NEXT:  %d = mil.sub %x, %y : (tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xf16>
// CHECK-NEXT:  %m = mil.maximum %d, %s : (tensor<1x8x1x4xf16>, tensor<1x1xf16>) -> tensor<1x8x1x4xf16>
// CHECK-NEXT:  func.return %m : tensor<1x8x1x4xf16>
func.func @reshape_binary(%x: tensor<1x8x1x4xf16>, %y: tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xf16> {
  %a = mil.reshape %x {shape = array<i64: 8, 4>} : (tensor<1x8x1x4xf16>) -> tensor<8x4xf16>
  %b = mil.reshape %y {shape = array<i64: 8, 4>} : (tensor<1x8x1x4xf16>) -> tensor<8x4xf16>
  %s = mil.const dense<0.5> : tensor<1x1xf16>
  %d = mil.sub %a, %b : (tensor<8x4xf16>, tensor<8x4xf16>) -> tensor<8x4xf16>
  %m = mil.maximum %d, %s : (tensor<8x4xf16>, tensor<1x1xf16>) -> tensor<8x4xf16>
  %r = mil.reshape %m {shape = array<i64: 1, 8, 1, 4>} : (tensor<8x4xf16>) -> tensor<1x8x1x4xf16>
  func.return %r : tensor<1x8x1x4xf16>
}

// Comparison, select and cast: the layout ops sink through all three.
// CHECK-LABEL: func.func @compare_select_cast(
// CHECK-NEXT:  %z = mil.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  %c = mil.greater %x, %z : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xi1>
// CHECK-NEXT:  %s = mil.select %c, %y, %w : (tensor<3x5xi1>, tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:  %h = mil.cast %s {dtype = "fp16"} : (tensor<3x5xf32>) -> tensor<3x5xf16>
// CHECK-NEXT:  func.return %h : tensor<3x5xf16>
func.func @compare_select_cast(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>, %w: tensor<3x5xf32>) -> tensor<3x5xf16> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %v = mil.transpose %y {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %u = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %z = mil.const dense<0.0> : tensor<f32>
  %c = mil.greater %t, %z : (tensor<5x3xf32>, tensor<f32>) -> tensor<5x3xi1>
  %s = mil.select %c, %v, %u : (tensor<5x3xi1>, tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  %h = mil.cast %s {dtype = "fp16"} : (tensor<5x3xf32>) -> tensor<5x3xf16>
  %back = mil.transpose %h {perm = array<i64: 1, 0>} : (tensor<5x3xf16>) -> tensor<3x5xf16>
  func.return %back : tensor<3x5xf16>
}

// Negative (conservative): a transpose read by two elementwise ops stays,
// although both would sink it; the single-use rule never duplicates it.
// CHECK-LABEL: func.func @shared_by_two_elementwise(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
// CHECK-NEXT:  %z = mil.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  %c = mil.greater %t, %z : (tensor<5x3xf32>, tensor<f32>) -> tensor<5x3xi1>
// CHECK-NEXT:  %s = mil.select %c, %t, %z : (tensor<5x3xi1>, tensor<5x3xf32>, tensor<f32>) -> tensor<5x3xf32>
func.func @shared_by_two_elementwise(%x: tensor<3x5xf32>) -> tensor<5x3xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %z = mil.const dense<0.0> : tensor<f32>
  %c = mil.greater %t, %z : (tensor<5x3xf32>, tensor<f32>) -> tensor<5x3xi1>
  %s = mil.select %c, %t, %z : (tensor<5x3xi1>, tensor<5x3xf32>, tensor<f32>) -> tensor<5x3xf32>
  func.return %s : tensor<5x3xf32>
}

// Without an inverse below, the transpose still moves down (to the end).
// CHECK-LABEL: func.func @moves_down(
// CHECK-NEXT:  %[[E:.+]] = mil.exp %x : tensor<2x3xf32>
// CHECK-NEXT:  %[[T:.+]] = mil.transpose %[[E]] {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  func.return %[[T]] : tensor<3x2xf32>
func.func @moves_down(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %e = mil.exp %t : tensor<3x2xf32>
  func.return %e : tensor<3x2xf32>
}

// Negative: the transpose has a second user, so moving it would duplicate it.
// CHECK-LABEL: func.func @two_uses(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  %e = mil.exp %t : tensor<3x2xf32>
// CHECK-NEXT:  %u = mil.transpose %e {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return %u, %t : tensor<2x3xf32>, tensor<3x2xf32>
func.func @two_uses(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %e = mil.exp %t : tensor<3x2xf32>
  %u = mil.transpose %e {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %u, %t : tensor<2x3xf32>, tensor<3x2xf32>
}

// Negative: a reshape with two users is not moved.
// CHECK-LABEL: func.func @reshape_two_uses(
// CHECK-NEXT:  %a = mil.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:  %n = mil.sigmoid %a : tensor<6xf32>
// CHECK-NEXT:  %m = mil.tanh %a : tensor<6xf32>
func.func @reshape_two_uses(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %a = mil.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %n = mil.sigmoid %a : tensor<6xf32>
  %m = mil.tanh %a : tensor<6xf32>
  func.return %n, %m : tensor<6xf32>, tensor<6xf32>
}

// The same layout value used twice by one op is still one use site.
// CHECK-LABEL: func.func @same_operand_twice(
// CHECK-NEXT:  %m = mil.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return %m : tensor<2x3xf32>
func.func @same_operand_twice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %m = mil.mul %t, %t : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %u = mil.transpose %m {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %u : tensor<2x3xf32>
}

// Negative: the operands went through different perms.
// CHECK-LABEL: func.func @different_perms(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
// CHECK-NEXT:  %v = mil.transpose %y {perm = array<i64: 0, 2, 1>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
// CHECK-NEXT:  %a = mil.add %t, %v : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
func.func @different_perms(%x: tensor<2x2x2xf32>, %y: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %v = mil.transpose %y {perm = array<i64: 0, 2, 1>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %a = mil.add %t, %v : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  func.return %a : tensor<2x2x2xf32>
}

// Negative: reshapes from different source shapes to one target.
// CHECK-LABEL: func.func @different_sources(
// CHECK-NEXT:  %a = mil.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:  %b = mil.reshape %y {shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT:  %s = mil.add %a, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
func.func @different_sources(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> tensor<6xf32> {
  %a = mil.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %b = mil.reshape %y {shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
  %s = mil.add %a, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}

// Negative: a non-scalar operand that is not a layout op (a bias row).
// CHECK-LABEL: func.func @non_scalar_other_operand(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  %a = mil.add %t, %b : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
func.func @non_scalar_other_operand(%x: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<3x2xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %a = mil.add %t, %b : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %a : tensor<3x2xf32>
}

// Negative: a [1, 1, 1] scalar broadcasts fine against the [8, 4] target,
// but against the [32] source it would make a [1, 1, 32] result.
// CHECK-LABEL: func.func @scalar_rank_too_high(
// CHECK-NEXT:  %s = mil.const dense<1.000000e+00> : tensor<1x1x1xf32>
// CHECK-NEXT:  %a = mil.reshape %x {shape = array<i64: 1, 8, 4>} : (tensor<32xf32>) -> tensor<1x8x4xf32>
// CHECK-NEXT:  %m = mil.add %a, %s : (tensor<1x8x4xf32>, tensor<1x1x1xf32>) -> tensor<1x8x4xf32>
func.func @scalar_rank_too_high(%x: tensor<32xf32>) -> tensor<1x8x4xf32> {
  %s = mil.const dense<1.0> : tensor<1x1x1xf32>
  %a = mil.reshape %x {shape = array<i64: 1, 8, 4>} : (tensor<32xf32>) -> tensor<1x8x4xf32>
  %m = mil.add %a, %s : (tensor<1x8x4xf32>, tensor<1x1x1xf32>) -> tensor<1x8x4xf32>
  func.return %m : tensor<1x8x4xf32>
}

// Negative: a non-elementwise op (softmax) stops the layout op.
// CHECK-LABEL: func.func @not_elementwise(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  %s = mil.softmax %t {axis = -1 : i64} : tensor<3x2xf32>
func.func @not_elementwise(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %s = mil.softmax %t {axis = -1 : i64} : tensor<3x2xf32>
  func.return %s : tensor<3x2xf32>
}
