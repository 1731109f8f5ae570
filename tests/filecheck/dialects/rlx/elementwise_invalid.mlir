// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of the sources (constant, param) and the elementwise ops:
// unary, binary, compare, where, cast.

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

// -----

// A unary op's result has its input's type.
// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<2x8xf32> expected from variable 'T', but got tensor<2x8xf16>
func.func @relu_result_type(%x: tensor<2x8xf32>) {
  %y = "rlx.relu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.relu: operand 'input' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1)
func.func @relu_f64(%x: tensor<2x8xf64>) {
  %y = rlx.relu %x : tensor<2x8xf64>
  func.return
}

// -----

// Unary ops take float tensors.
// CHECK: Operation does not verify: rlx.gelu: operand 'input' must have a float element type (f16 or f32), got i32
func.func @gelu_integer(%x: tensor<4xi32>) {
  %y = rlx.gelu %x : tensor<4xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.gelu_tanh: operand 'input' must have a float element type (f16 or f32), got i1
func.func @gelu_tanh_bool(%x: tensor<4xi1>) {
  %y = rlx.gelu_tanh %x : tensor<4xi1>
  func.return
}

// -----

// Only static shapes.
// CHECK: Operation does not verify: rlx.silu: operand 'input' has a dynamic shape tensor<?x4xf32>; only static shapes are supported
func.func @silu_dynamic(%x: tensor<?x4xf32>) {
  %y = rlx.silu %x : tensor<?x4xf32>
  func.return
}

// -----

// Only f32, f16, i32, i8, i1 elements.
// CHECK: Operation does not verify: rlx.sigmoid: operand 'input' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1)
func.func @sigmoid_f64(%x: tensor<2x4xf64>) {
  %y = rlx.sigmoid %x : tensor<2x4xf64>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<2x4xf32> expected from variable 'T', but got tensor<4x2xf32>
func.func @tanh_shape(%x: tensor<2x4xf32>) {
  %y = "rlx.tanh"(%x) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.exp: operand 'input' must have a float element type (f16 or f32), got i8
func.func @exp_int8(%x: tensor<3xi8>) {
  %y = rlx.exp %x : tensor<3xi8>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.log: operand 'input' has unsupported element type bf16 (expected one of f32, f16, i32, i8, i1)
func.func @log_bf16(%x: tensor<3xbf16>) {
  %y = rlx.log %x : tensor<3xbf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.sqrt: operand 'input' must have a float element type (f16 or f32), got i32
func.func @sqrt_integer(%x: tensor<2x2xi32>) {
  %y = rlx.sqrt %x : tensor<2x2xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rsqrt: operand 'input' has a dynamic shape tensor<1x?xf16>; only static shapes are supported
func.func @rsqrt_dynamic(%x: tensor<1x?xf16>) {
  %y = rlx.rsqrt %x : tensor<1x?xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<8xf32> expected from variable 'T', but got tensor<1x8xf32>
func.func @neg_result_rank(%x: tensor<8xf32>) {
  %y = "rlx.neg"(%x) : (tensor<8xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.abs: operand 'input' has a dynamic shape tensor<?xf32>; only static shapes are supported
func.func @abs_dynamic(%x: tensor<?xf32>) {
  %y = rlx.abs %x : tensor<?xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.sin: operand 'input' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1)
func.func @sin_f64(%x: tensor<8xf64>) {
  %y = rlx.sin %x : tensor<8xf64>
  func.return
}

// -----

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: | attribute tensor<8xf16> expected from variable 'T', but got tensor<8xf32>
func.func @cos_result_type(%x: tensor<8xf16>) {
  %y = "rlx.cos"(%x) : (tensor<8xf16>) -> tensor<8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.reciprocal: operand 'input' must have a float element type (f16 or f32), got i8
func.func @reciprocal_integer(%x: tensor<8xi8>) {
  %y = rlx.reciprocal %x : tensor<8xi8>
  func.return
}

// -----

// Binary ops broadcast like numpy: trailing axes 8 and 3 do not match.
// CHECK: Operation does not verify: rlx.add: operand shapes do not broadcast: 'lhs' [2, 8], 'rhs' [3] (operand 'rhs')
func.func @add_not_broadcastable(%a: tensor<2x8xf32>, %b: tensor<3xf32>) {
  %c = rlx.add %a, %b : (tensor<2x8xf32>, tensor<3xf32>) -> tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.sub: result type [4, 1] f32 does not match the inferred type [4, 5] f32
func.func @sub_result_shape(%a: tensor<4x1xf32>, %b: tensor<1x5xf32>) {
  %c = rlx.sub %a, %b : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.mul: operands 'lhs' (f32) and 'rhs' (f16) must have the same element type
func.func @mul_element_types(%a: tensor<2x8xf32>, %b: tensor<2x8xf16>) {
  %c = rlx.mul %a, %b : (tensor<2x8xf32>, tensor<2x8xf16>) -> tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.div: operands must not be i1
func.func @div_bool(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  %c = rlx.div %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.max: result type [4] f32 does not match the inferred type [4] i32
func.func @max_result_element(%a: tensor<4xi32>, %b: tensor<4xi32>) {
  %c = rlx.max %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.min: operand shapes do not broadcast: 'lhs' [2, 3, 4], 'rhs' [3, 3, 4] (operand 'rhs')
func.func @min_rank3_mismatch(%a: tensor<2x3x4xf16>, %b: tensor<3x3x4xf16>) {
  %c = rlx.min %a, %b : (tensor<2x3x4xf16>, tensor<3x3x4xf16>) -> tensor<3x3x4xf16>
  func.return
}

// -----

// pow needs a float base.
// CHECK: Operation does not verify: rlx.pow: operand 'lhs' must have a float element type (f16 or f32), got i32
func.func @pow_integer(%a: tensor<4xi32>, %b: tensor<4xi32>) {
  %c = rlx.pow %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.add: operand 'lhs' has a dynamic shape tensor<?x4xf32>; only static shapes are supported
func.func @add_dynamic(%a: tensor<?x4xf32>, %b: tensor<4xf32>) {
  %c = rlx.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.add: operand 'lhs' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1)
func.func @add_f64(%a: tensor<4xf64>, %b: tensor<4xf64>) {
  %c = rlx.add %a, %b : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.compare: property 'predicate' is "lte", expected one of "eq", "ne", "lt", "le", "gt", "ge"
func.func @compare_bad_predicate(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %c = rlx.compare %a, %b {predicate = "lte"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'predicate' expected in operation 'rlx.compare'
func.func @compare_missing_predicate(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %c = rlx.compare %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

// The result of a comparison is i1.
// CHECK: Operation does not verify: rlx.compare: result type [4] f32 does not match the inferred type [4] i1
func.func @compare_result_float(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %c = rlx.compare %a, %b {predicate = "gt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.compare: operand shapes do not broadcast: 'lhs' [4, 3], 'rhs' [4] (operand 'rhs')
func.func @compare_not_broadcastable(%a: tensor<4x3xi32>, %b: tensor<4xi32>) {
  %c = rlx.compare %a, %b {predicate = "eq"} : (tensor<4x3xi32>, tensor<4xi32>) -> tensor<4x3xi1>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.where: operand 'cond' must be i1, got f32
func.func @where_float_cond(%c: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  %r = rlx.where %c, %a, %b : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.where: operands 'on_true' (f32) and 'on_false' (f16) must have the same element type
func.func @where_branch_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  %r = rlx.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.where: operand shapes do not broadcast: 'cond' [5, 5], 'on_true' [2, 1, 5, 5], 'on_false' [4] (operand 'on_false')
func.func @where_not_broadcastable(%c: tensor<5x5xi1>, %a: tensor<2x1x5x5xf32>, %b: tensor<4xf32>) {
  %r = rlx.where %c, %a, %b : (tensor<5x5xi1>, tensor<2x1x5x5xf32>, tensor<4xf32>) -> tensor<2x1x5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.where: result type [1, 5, 5] f32 does not match the inferred type [2, 5, 5] f32
func.func @where_result_shape(%c: tensor<1x5x5xi1>, %a: tensor<2x1x5xf32>, %b: tensor<f32>) {
  %r = rlx.where %c, %a, %b : (tensor<1x5x5xi1>, tensor<2x1x5xf32>, tensor<f32>) -> tensor<1x5x5xf32>
  func.return
}

// -----

// cast changes the element type only.
// CHECK: Operation does not verify: rlx.cast: result shape [16] differs from input shape [2, 8]
func.func @cast_shape(%x: tensor<2x8xf32>) {
  %y = rlx.cast %x : tensor<2x8xf32> to tensor<16xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.cast: operand 'input' has unsupported element type f64 (expected one of f32, f16, i32, i8, i1)
func.func @cast_from_f64(%x: tensor<2x8xf64>) {
  %y = rlx.cast %x : tensor<2x8xf64> to tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.cast: operand 'input' has a dynamic shape tensor<?x8xf32>; only static shapes are supported
func.func @cast_dynamic(%x: tensor<?x8xf32>) {
  %y = rlx.cast %x : tensor<?x8xf32> to tensor<?x8xf16>
  func.return
}
