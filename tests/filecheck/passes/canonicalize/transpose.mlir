// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// ComposeTransposes and RemoveIdentityTranspose (passes/canonicalization.py):
// transpose(transpose(x, p), q) = transpose(x, r) with r[i] = p[q[i]], and x
// itself when r (or a single perm) is the identity.

// Inverse perms cancel.
// CHECK-LABEL: func.func @inverse_pair(
// CHECK-NEXT:  func.return %x : tensor<2x3x4xf32>
func.func @inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %t = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %u = mil.transpose %t {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %u : tensor<2x3x4xf32>
}

// Non-cancelling perms compose into one transpose: r = [2,0,1][[2,0,1]] = [1,2,0].
// CHECK-LABEL: func.func @compose(
// CHECK-NEXT:  %u = mil.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:  func.return %u : tensor<3x4x2xf32>
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %t = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %u = mil.transpose %t {perm = array<i64: 2, 0, 1>} : (tensor<4x2x3xf32>) -> tensor<3x4x2xf32>
  func.return %u : tensor<3x4x2xf32>
}

// A chain of three folds to one; negative axes count from the end.
// CHECK-LABEL: func.func @chain_negative_axes(
// CHECK-NEXT:  %c = mil.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf16>) -> tensor<1x3x2x4xf16>
// CHECK-NEXT:  func.return %c : tensor<1x3x2x4xf16>
func.func @chain_negative_axes(%x: tensor<1x2x3x4xf16>) -> tensor<1x3x2x4xf16> {
  %a = mil.transpose %x {perm = array<i64: 0, -1, 1, 2>} : (tensor<1x2x3x4xf16>) -> tensor<1x4x2x3xf16>
  %b = mil.transpose %a {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x3xf16>) -> tensor<1x2x3x4xf16>
  %c = mil.transpose %b {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf16>) -> tensor<1x3x2x4xf16>
  func.return %c : tensor<1x3x2x4xf16>
}

// CHECK-LABEL: func.func @identity(
// CHECK-NEXT:  func.return %x : tensor<2x3xi32>
func.func @identity(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %t = mil.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %t : tensor<2x3xi32>
}

// An inner transpose with another use stays for that use; the outer one
// still reads x directly (no extra op).
// CHECK-LABEL: func.func @shared_inner(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  func.return %x, %t : tensor<2x3xf32>, tensor<3x2xf32>
func.func @shared_inner(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %u = mil.transpose %t {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %u, %t : tensor<2x3xf32>, tensor<3x2xf32>
}

// Negative: a single non-identity transpose stays.
// CHECK-LABEL: func.func @single(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  func.return %t : tensor<3x2xf32>
func.func @single(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %t : tensor<3x2xf32>
}

// Negative: a reshape between two transposes keeps them apart.
// CHECK-LABEL: func.func @reshape_between(
// CHECK-NEXT:  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x6xf32>) -> tensor<6x2xf32>
// CHECK-NEXT:  %r = mil.reshape %t {shape = array<i64: 3, 4>} : (tensor<6x2xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:  %u = mil.transpose %r {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:  func.return %u : tensor<4x3xf32>
func.func @reshape_between(%x: tensor<2x6xf32>) -> tensor<4x3xf32> {
  %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x6xf32>) -> tensor<6x2xf32>
  %r = mil.reshape %t {shape = array<i64: 3, 4>} : (tensor<6x2xf32>) -> tensor<3x4xf32>
  %u = mil.transpose %r {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  func.return %u : tensor<4x3xf32>
}
