// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the elementwise ops: MIL's dtype domains, numpy
// broadcasting, select's shape rule, cast's dtype names and the properties.

// Unary math takes fp16 or fp32 only.
// CHECK: Operation does not verify: mil.relu: operand 'x' has element type i32, expected one of f16, f32
func.func @relu_int(%x: tensor<2x3xi32>) {
  %r = mil.relu %x : tensor<2x3xi32>
  func.return
}

// -----

// abs and square also take int32, but not int8.
// CHECK: Operation does not verify: mil.abs: operand 'x' has element type i8, expected one of f16, f32, i32
func.func @abs_int8(%x: tensor<4xi8>) {
  %r = mil.abs %x : tensor<4xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.gelu: property 'mode' is "FAST", expected one of "EXACT", "TANH_APPROXIMATION", "SIGMOID_APPROXIMATION"
func.func @gelu_mode(%x: tensor<4xf32>) {
  %r = mil.gelu %x {mode = "FAST"} : tensor<4xf32>
  func.return
}

// -----

// iOS17 clip requires alpha < beta.
// CHECK: Operation does not verify: mil.clip: property 'alpha' (6.0) must be less than 'beta' (6.0)
func.func @clip_bounds(%x: tensor<4xf32>) {
  %r = mil.clip %x {alpha = 6.0 : f32, beta = 6.0 : f32} : tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'beta' expected in operation 'mil.clip'
func.func @clip_missing_beta(%x: tensor<4xf32>) {
  %r = mil.clip %x {alpha = 0.0 : f32} : tensor<4xf32>
  func.return
}

// -----

// Binary operands share one dtype.
// CHECK: Operation does not verify: mil.add: operands 'x' (f32) and 'y' (f16) must have the same element type
func.func @add_mixed(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  %r = mil.add %x, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

// Binary ops take fp16, fp32 and int32, not bool.
// CHECK: Operation does not verify: mil.mul: operand 'x' has element type i1, expected one of f16, f32, i32
func.func @mul_bool(%x: tensor<4xi1>) {
  %r = mil.mul %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.sub: operand shapes do not broadcast: 'x' [2, 3], 'y' [4] (operand 'y')
func.func @sub_broadcast(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %r = mil.sub %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// The result of a binary op has the broadcast shape.
// CHECK: Operation does not verify: mil.add: result type [3] f32 does not match the inferred type [2, 3] f32
func.func @add_result(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %r = mil.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// Comparisons give bool.
// CHECK: Operation does not verify: mil.less: result type [3] f32 does not match the inferred type [3] i1
func.func @less_result(%x: tensor<3xf32>) {
  %r = mil.less %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.select: operand 'cond' has element type i32, expected one of i1
func.func @select_cond(%c: tensor<3xi32>, %x: tensor<3xf32>) {
  %r = mil.select %c, %x, %x : (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// MIL takes select's result shape from a and b, so cond may not widen it.
// CHECK: Operation does not verify: mil.select: operand 'cond' [2, 3] must broadcast to the shape [3] of 'a' and 'b' (MIL takes the result shape from a and b)
func.func @select_cond_shape(%c: tensor<2x3xi1>, %x: tensor<3xf32>) {
  %r = mil.select %c, %x, %x : (tensor<2x3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.select: operands 'a' (f32) and 'b' (i32) must have the same element type
func.func @select_mixed(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi32>) {
  %r = mil.select %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return
}

// -----

// cast takes MIL's dtype names; uint8 has no builtin element type here.
// CHECK: Operation does not verify: mil.cast: property 'dtype' is "uint8", expected one of "fp32", "fp16", "int32", "int8", "bool"
func.func @cast_dtype(%x: tensor<3xf32>) {
  %r = mil.cast %x {dtype = "uint8"} : (tensor<3xf32>) -> tensor<3xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.cast: result type [3] f32 does not match the inferred type [3] f16
func.func @cast_result(%x: tensor<3xf32>) {
  %r = mil.cast %x {dtype = "fp16"} : (tensor<3xf32>) -> tensor<3xf32>
  func.return
}
