// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the vision activations.
// CHECK: Operation does not verify: rlx.clamp: property 'min' (2.0) must not be greater than 'max' (1.0)
func.func @clamp_bounds(%x: tensor<2x8xf32>) {
  %y = rlx.clamp %x {min = 2.0 : f32, max = 1.0 : f32} : tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.hardswish: operand 'input' must have a float element type (f16 or f32), got i32
func.func @hardswish_integer(%x: tensor<2x8xi32>) {
  %y = rlx.hardswish %x : tensor<2x8xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.elu: unknown property 'scale' (its properties are alpha)
func.func @elu_unknown_property(%x: tensor<2x8xf32>) {
  %y = rlx.elu %x {scale = 1.0 : f32} : tensor<2x8xf32>
  func.return
}
