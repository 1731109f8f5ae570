// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the state ops and slice_update.

// CHECK: Operation does not verify: rlx.write_state: operand 'value' [4] f16 must have the type the state holds, [4] f32
func.func @write_other_type(%s: !rlx.state<tensor<4xf32>>, %x: tensor<4xf16>) {
  rlx.write_state %s, %x : !rlx.state<tensor<4xf32>>, tensor<4xf16>
  func.return
}

// -----

// CHECK: rlx.read_state: result type [8] f32 does not match the inferred type [4] f32
func.func @read_wrong_type(%s: !rlx.state<tensor<4xf32>>) {
  %v = rlx.read_state %s : (!rlx.state<tensor<4xf32>>) -> tensor<8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.slice_update: operand 'update' [1, 4, 9] must have the rank of operand 'input' [2, 4, 8] and fit inside it
func.func @update_too_large(%x: tensor<2x4x8xf32>, %u: tensor<1x4x9xf32>, %b: tensor<3xi32>) {
  %r = rlx.slice_update %x, %u, %b : (tensor<2x4x8xf32>, tensor<1x4x9xf32>, tensor<3xi32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.slice_update: operand 'begin' must be i32 [3], got [2] i32
func.func @begin_rank(%x: tensor<2x4x8xf32>, %u: tensor<1x4x2xf32>, %b: tensor<2xi32>) {
  %r = rlx.slice_update %x, %u, %b : (tensor<2x4x8xf32>, tensor<1x4x2xf32>, tensor<2xi32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.slice_update: operand 'update' (f16) must have the element type of operand 'input' (f32)
func.func @update_dtype(%x: tensor<2x4x8xf32>, %u: tensor<1x4x2xf16>, %b: tensor<3xi32>) {
  %r = rlx.slice_update %x, %u, %b : (tensor<2x4x8xf32>, tensor<1x4x2xf16>, tensor<3xi32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// CHECK: tensor<4xf32> should be of base attribute rlx.state
func.func @read_tensor(%x: tensor<4xf32>) {
  %v = "rlx.read_state"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: !rlx.state: rlx.state: property 'wrapped' has unsupported element type f64
func.func @state_of_f64(%s: !rlx.state<tensor<4xf64>>) {
  func.return
}
