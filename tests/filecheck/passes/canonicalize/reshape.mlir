// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// ComposeReshapes and RemoveIdentityReshape (passes/canonicalization.py):
// reshape(reshape(x)) = reshape(x) with the resolved result shape, and a
// reshape to x's own shape is x.

// CHECK-LABEL: func.func @compose(
// CHECK-NEXT:  %b = mil.reshape %x {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:  func.return %b : tensor<4x6xf32>
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %a = mil.reshape %x {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %b = mil.reshape %a {shape = array<i64: 4, 6>} : (tensor<24xf32>) -> tensor<4x6xf32>
  func.return %b : tensor<4x6xf32>
}

// A 0 or -1 in the outer shape refers to the inner result, so the composed
// reshape spells the resolved shape out.
// CHECK-LABEL: func.func @resolved_shape(
// CHECK-NEXT:  %b = mil.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x12xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:  func.return %b : tensor<6x4xf32>
func.func @resolved_shape(%x: tensor<2x12xf32>) -> tensor<6x4xf32> {
  %a = mil.reshape %x {shape = array<i64: 2, 3, 4>} : (tensor<2x12xf32>) -> tensor<2x3x4xf32>
  %b = mil.reshape %a {shape = array<i64: -1, 0>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  func.return %b : tensor<6x4xf32>
}

// A round trip is x.
// CHECK-LABEL: func.func @round_trip(
// CHECK-NEXT:  func.return %x : tensor<1x64x1x8xf16>
func.func @round_trip(%x: tensor<1x64x1x8xf16>) -> tensor<1x64x1x8xf16> {
  %a = mil.reshape %x {shape = array<i64: 64, 8>} : (tensor<1x64x1x8xf16>) -> tensor<64x8xf16>
  %b = mil.reshape %a {shape = array<i64: 1, 64, 1, 8>} : (tensor<64x8xf16>) -> tensor<1x64x1x8xf16>
  func.return %b : tensor<1x64x1x8xf16>
}

// CHECK-LABEL: func.func @identity(
// CHECK-NEXT:  func.return %x : tensor<2x3xi1>
func.func @identity(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %a = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %a : tensor<2x3xi1>
}

// The inner reshape keeps its other use.
// CHECK-LABEL: func.func @shared_inner(
// CHECK-NEXT:  %a = mil.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:  %b = mil.reshape %x {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  func.return %a, %b : tensor<6xf32>, tensor<3x2xf32>
func.func @shared_inner(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<3x2xf32>) {
  %a = mil.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %b = mil.reshape %a {shape = array<i64: 3, 2>} : (tensor<6xf32>) -> tensor<3x2xf32>
  func.return %a, %b : tensor<6xf32>, tensor<3x2xf32>
}

// Negative: a transpose between two reshapes keeps them apart.
// CHECK-LABEL: func.func @transpose_between(
// CHECK-NEXT:  %a = mil.reshape %x {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %t = mil.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  %b = mil.reshape %t {shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT:  func.return %b : tensor<6xf32>
func.func @transpose_between(%x: tensor<6xf32>) -> tensor<6xf32> {
  %a = mil.reshape %x {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  %t = mil.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = mil.reshape %t {shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
  func.return %b : tensor<6xf32>
}
