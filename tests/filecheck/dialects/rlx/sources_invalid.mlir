// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of rlx.constant and rlx.param.

// The result type is the type of the dense value.
// CHECK: Operation does not verify: rlx.constant: result type [3] f32 does not match the inferred type [2] f32
func.func @constant_result_shape() {
  %c = "rlx.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.constant: result type [2] f32 does not match the inferred type [2] i32
func.func @constant_result_element() {
  %c = "rlx.constant"() <{value = dense<[1, 2]> : tensor<2xi32>}> : () -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'value' expected in operation 'rlx.constant'
func.func @constant_missing_value() {
  %c = "rlx.constant"() : () -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.param: property 'name' must not be empty
func.func @param_empty_name() {
  %w = rlx.param "" : tensor<4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'name' expected in operation 'rlx.param'
func.func @param_missing_name() {
  %w = "rlx.param"() : () -> tensor<4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | f32 should be of base attribute tensor
func.func @param_not_tensor() {
  %w = "rlx.param"() <{name = "w"}> : () -> f32
  func.return
}
