// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of mil.const.

// A const holds exactly one of an inline value and a weight name.
// CHECK: Operation does not verify: mil.const: exactly one of the properties 'val' and 'weight' is required
func.func @both() {
  %c = "mil.const"() <{val = dense<1.0> : tensor<2xf32>, weight = "w"}> : () -> tensor<2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.const: exactly one of the properties 'val' and 'weight' is required
func.func @neither() {
  %c = "mil.const"() : () -> tensor<2xf32>
  func.return
}

// -----

// The result type of an inline const is the value's type.
// CHECK: Operation does not verify: mil.const: result type [3] f32 does not match the inferred type [2] f32
func.func @wrong_type() {
  %c = "mil.const"() <{val = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

// MIL has no fp64.
// CHECK: Operation does not verify: mil.const: operand 'val' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1, i16, ui16)
func.func @f64() {
  %c = mil.const dense<1.0> : tensor<2xf64>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.const: result type has a dynamic shape tensor<?x4xf32>; only static shapes are supported
func.func @dynamic_weight() {
  %w = mil.const weight "w" : tensor<?x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.const: property 'weight' must not be empty
func.func @empty_name() {
  %w = mil.const weight "" : tensor<4xf32>
  func.return
}
