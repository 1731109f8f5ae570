// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of read_state, coreml_update_state, slice_update and
// reduce_argmax (coremltools' iOS18 typing rules).

// CHECK: Operation does not verify: mil.coreml_update_state: operand 'value' [4] f32 must have the type the state holds, [4] f16
func.func @update_other_type(%s: !mil.state<tensor<4xf16>>, %x: tensor<4xf32>) {
  %r = mil.coreml_update_state %s, %x : (!mil.state<tensor<4xf16>>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tensor<4xf16> should be of base attribute mil.state
func.func @read_tensor(%x: tensor<4xf16>) {
  %v = "mil.read_state"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.slice_update: operand 'end' [2] must be [3] (one entry per axis of operand 'x')
func.func @end_rank(%x: tensor<2x4x8xf16>, %u: tensor<1x4x2xf16>, %b: tensor<3xi32>, %e: tensor<2xi32>) {
  %r = mil.slice_update %x, %u, %b, %e : (tensor<2x4x8xf16>, tensor<1x4x2xf16>, tensor<3xi32>, tensor<2xi32>) -> tensor<2x4x8xf16>
  func.return
}

// -----

// MIL rejects a rank-0 update.
// CHECK: Operation does not verify: mil.slice_update: operand 'update' [] must have the rank of operand 'x' [8] (not 0) and fit inside it
func.func @scalar_update(%x: tensor<8xf16>, %u: tensor<f16>, %b: tensor<1xi32>, %e: tensor<1xi32>) {
  %r = mil.slice_update %x, %u, %b, %e : (tensor<8xf16>, tensor<f16>, tensor<1xi32>, tensor<1xi32>) -> tensor<8xf16>
  func.return
}

// -----

// With const begin and end the slice is checked against the update.
// CHECK: Operation does not verify: mil.slice_update: end − begin [2] must equal the shape of operand 'update' [3]
func.func @const_slice(%x: tensor<8xf16>, %u: tensor<3xf16>) {
  %b = mil.const dense<1> : tensor<1xi32>
  %e = mil.const dense<3> : tensor<1xi32>
  %r = mil.slice_update %x, %u, %b, %e : (tensor<8xf16>, tensor<3xf16>, tensor<1xi32>, tensor<1xi32>) -> tensor<8xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_argmax: property 'axis' value 2 is out of range [-2, 2) for operand 'x' [3, 5]
func.func @argmax_axis(%x: tensor<3x5xf16>) {
  %i = mil.reduce_argmax %x {axis = 2 : i64} : (tensor<3x5xf16>) -> tensor<3xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.reduce_argmax: operand 'x' has element type i1, expected one of f16, f32, i32
func.func @argmax_bool(%x: tensor<3x5xi1>) {
  %i = mil.reduce_argmax %x : (tensor<3x5xi1>) -> tensor<3xi32>
  func.return
}
