// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, elementwise family (passes/rlx_to_mil/elementwise.py):
// sources, the unary and binary ops, compare, where and cast. One function
// per pattern or case; each shows every mil op the pattern emits.

// NO-RLX-NOT: rlx.

// rlx.constant -> mil.const with the same dense value.
// CHECK-LABEL: func.func @constant_splat(
// CHECK-NEXT:  [[CONST:%.+]] = mil.const dense<1.500000e+00> : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[CONST]] : tensor<2x3xf32>
func.func @constant_splat() -> tensor<2x3xf32> {
  %c = rlx.constant dense<1.5> : tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// Integer, f16, i1 and i8 literals keep their values and types.
// CHECK-LABEL: func.func @constant_values(
// CHECK-NEXT:  [[CONST:%.+]] = mil.const dense<[0, 1, 2]> : tensor<3xi32>
// CHECK-NEXT:  [[CONST2:%.+]] = mil.const dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// CHECK-NEXT:  [[CONST3:%.+]] = mil.const dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:  [[CONST4:%.+]] = mil.const dense<[-128, 0, 127]> : tensor<3xi8>
// CHECK-NEXT:  func.return [[CONST]], [[CONST2]], [[CONST3]], [[CONST4]] : tensor<3xi32>, tensor<2x2xf16>, tensor<2xi1>, tensor<3xi8>
func.func @constant_values() -> (tensor<3xi32>, tensor<2x2xf16>, tensor<2xi1>, tensor<3xi8>) {
  %i = rlx.constant dense<[0, 1, 2]> : tensor<3xi32>
  %h = rlx.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %b = rlx.constant dense<[true, false]> : tensor<2xi1>
  %q = rlx.constant dense<[-128, 0, 127]> : tensor<3xi8>
  func.return %i, %h, %b, %q : tensor<3xi32>, tensor<2x2xf16>, tensor<2xi1>, tensor<3xi8>
}

// rlx.param "name" -> mil.const weight "name": the data stays in the weights file.
// CHECK-LABEL: func.func @param(
// CHECK-NEXT:  [[CONST:%.+]] = mil.const weight "layers.0.weight" : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[CONST]] : tensor<2x3xf32>
func.func @param() -> tensor<2x3xf32> {
  %w = rlx.param "layers.0.weight" : tensor<2x3xf32>
  func.return %w : tensor<2x3xf32>
}

// relu -> the MIL op of the same name.
// CHECK-LABEL: func.func @relu(
// CHECK-NEXT:  [[RELU:%.+]] = mil.relu %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[RELU]] : tensor<2x3xf32>
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.relu %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// gelu -> MIL gelu, mode EXACT (the erf form).
// CHECK-LABEL: func.func @gelu(
// CHECK-NEXT:  [[GELU:%.+]] = mil.gelu %x {mode = "EXACT"} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[GELU]] : tensor<2x3xf32>
func.func @gelu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.gelu %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// gelu_tanh -> MIL gelu, mode TANH_APPROXIMATION.
// CHECK-LABEL: func.func @gelu_tanh(
// CHECK-NEXT:  [[GELU:%.+]] = mil.gelu %x {mode = "TANH_APPROXIMATION"} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[GELU]] : tensor<2x3xf32>
func.func @gelu_tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.gelu_tanh %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// silu -> the MIL op of the same name.
// CHECK-LABEL: func.func @silu(
// CHECK-NEXT:  [[SILU:%.+]] = mil.silu %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SILU]] : tensor<2x3xf32>
func.func @silu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.silu %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// sigmoid -> the MIL op of the same name.
// CHECK-LABEL: func.func @sigmoid(
// CHECK-NEXT:  [[SIGMOID:%.+]] = mil.sigmoid %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SIGMOID]] : tensor<2x3xf32>
func.func @sigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.sigmoid %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// tanh -> the MIL op of the same name.
// CHECK-LABEL: func.func @tanh(
// CHECK-NEXT:  [[TANH:%.+]] = mil.tanh %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[TANH]] : tensor<2x3xf32>
func.func @tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.tanh %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// exp -> the MIL op of the same name.
// CHECK-LABEL: func.func @exp(
// CHECK-NEXT:  [[EXP:%.+]] = mil.exp %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[EXP]] : tensor<2x3xf32>
func.func @exp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.exp %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// log(x) = MIL log(x + epsilon) with the negligible epsilon 1e-45.
// CHECK-LABEL: func.func @log(
// CHECK-NEXT:  [[LOG:%.+]] = mil.log %x {epsilon = 1.401300e-45 : f32} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[LOG]] : tensor<2x3xf32>
func.func @log(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.log %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// sqrt -> the MIL op of the same name.
// CHECK-LABEL: func.func @sqrt(
// CHECK-NEXT:  [[SQRT:%.+]] = mil.sqrt %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SQRT]] : tensor<2x3xf32>
func.func @sqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.sqrt %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rsqrt(x) = MIL rsqrt = 1/sqrt(x + epsilon) with the negligible epsilon 1e-45.
// CHECK-LABEL: func.func @rsqrt(
// CHECK-NEXT:  [[RSQRT:%.+]] = mil.rsqrt %x {epsilon = 1.401300e-45 : f32} : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[RSQRT]] : tensor<2x3xf32>
func.func @rsqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.rsqrt %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -x = x * (-1): a rank-0 const of the input's element type.
// CHECK-LABEL: func.func @neg(
// CHECK-NEXT:  [[CONST:%.+]] = mil.const dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[MUL:%.+]] = mil.mul %x, [[CONST]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[MUL]] : tensor<2x3xf32>
func.func @neg(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.neg %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// The -1 const follows the input's element type (f16 here).
// CHECK-LABEL: func.func @neg_f16(
// CHECK-NEXT:  [[CONST:%.+]] = mil.const dense<-1.000000e+00> : tensor<f16>
// CHECK-NEXT:  [[MUL:%.+]] = mil.mul %x, [[CONST]] : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[MUL]] : tensor<2x3xf16>
func.func @neg_f16(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = rlx.neg %x : tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// abs -> the MIL op of the same name.
// CHECK-LABEL: func.func @abs(
// CHECK-NEXT:  [[ABS:%.+]] = mil.abs %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[ABS]] : tensor<2x3xf32>
func.func @abs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.abs %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// sin -> the MIL op of the same name.
// CHECK-LABEL: func.func @sin(
// CHECK-NEXT:  [[SIN:%.+]] = mil.sin %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SIN]] : tensor<2x3xf32>
func.func @sin(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.sin %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// cos -> the MIL op of the same name.
// CHECK-LABEL: func.func @cos(
// CHECK-NEXT:  [[COS:%.+]] = mil.cos %x : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[COS]] : tensor<2x3xf32>
func.func @cos(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.cos %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// erf, floor and round (halves to even) -> the MIL ops of the same names.
// CHECK-LABEL: func.func @erf_floor_round(
// CHECK-NEXT:  [[ERF:%.+]] = mil.erf %x : tensor<2x3xf32>
// CHECK-NEXT:  [[FLOOR:%.+]] = mil.floor [[ERF]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ROUND:%.+]] = mil.round [[FLOOR]] : tensor<2x3xf32>
// CHECK-NEXT:  func.return [[ROUND]] : tensor<2x3xf32>
func.func @erf_floor_round(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = rlx.erf %x : tensor<2x3xf32>
  %f = rlx.floor %e : tensor<2x3xf32>
  %r = rlx.round %f : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// 1/x = real_div(1, x) (not MIL inverse, which adds 1e-4).
// CHECK-LABEL: func.func @reciprocal(
// CHECK-NEXT:  [[CONST:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[REAL_DIV:%.+]] = mil.real_div [[CONST]], %x : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[REAL_DIV]] : tensor<2x3xf32>
func.func @reciprocal(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.reciprocal %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.add -> mil.add.
// CHECK-LABEL: func.func @add(
// CHECK-NEXT:  [[ADD:%.+]] = mil.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[ADD]] : tensor<2x3xf32>
func.func @add(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.sub -> mil.sub.
// CHECK-LABEL: func.func @sub(
// CHECK-NEXT:  [[SUB:%.+]] = mil.sub %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SUB]] : tensor<2x3xf32>
func.func @sub(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.sub %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.mul -> mil.mul.
// CHECK-LABEL: func.func @mul(
// CHECK-NEXT:  [[MUL:%.+]] = mil.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[MUL]] : tensor<2x3xf32>
func.func @mul(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.div -> mil.real_div.
// CHECK-LABEL: func.func @div(
// CHECK-NEXT:  [[REAL_DIV:%.+]] = mil.real_div %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[REAL_DIV]] : tensor<2x3xf32>
func.func @div(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.div %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.max -> mil.maximum.
// CHECK-LABEL: func.func @max(
// CHECK-NEXT:  [[MAXIMUM:%.+]] = mil.maximum %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[MAXIMUM]] : tensor<2x3xf32>
func.func @max(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.max %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.min -> mil.minimum.
// CHECK-LABEL: func.func @min(
// CHECK-NEXT:  [[MINIMUM:%.+]] = mil.minimum %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[MINIMUM]] : tensor<2x3xf32>
func.func @min(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.min %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// rlx.pow -> mil.pow.
// CHECK-LABEL: func.func @pow(
// CHECK-NEXT:  [[POW:%.+]] = mil.pow %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[POW]] : tensor<2x3xf32>
func.func @pow(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.pow %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// Numpy broadcasting is left to MIL, which broadcasts the same way.
// CHECK-LABEL: func.func @add_broadcast(
// CHECK-NEXT:  [[ADD:%.+]] = mil.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[ADD]] : tensor<2x3xf32>
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = rlx.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// compare {predicate = "eq"} -> mil.equal.
// CHECK-LABEL: func.func @compare_eq(
// CHECK-NEXT:  [[EQUAL:%.+]] = mil.equal %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return [[EQUAL]] : tensor<2x3xi1>
func.func @compare_eq(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = rlx.compare %a, %b {predicate = "eq"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}

// compare {predicate = "ne"} -> mil.not_equal.
// CHECK-LABEL: func.func @compare_ne(
// CHECK-NEXT:  [[NOT_EQUAL:%.+]] = mil.not_equal %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return [[NOT_EQUAL]] : tensor<2x3xi1>
func.func @compare_ne(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = rlx.compare %a, %b {predicate = "ne"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}

// compare {predicate = "lt"} -> mil.less.
// CHECK-LABEL: func.func @compare_lt(
// CHECK-NEXT:  [[LESS:%.+]] = mil.less %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return [[LESS]] : tensor<2x3xi1>
func.func @compare_lt(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = rlx.compare %a, %b {predicate = "lt"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}

// compare {predicate = "le"} -> mil.less_equal.
// CHECK-LABEL: func.func @compare_le(
// CHECK-NEXT:  [[LESS_EQUAL:%.+]] = mil.less_equal %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return [[LESS_EQUAL]] : tensor<2x3xi1>
func.func @compare_le(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = rlx.compare %a, %b {predicate = "le"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}

// compare {predicate = "gt"} -> mil.greater.
// CHECK-LABEL: func.func @compare_gt(
// CHECK-NEXT:  [[GREATER:%.+]] = mil.greater %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return [[GREATER]] : tensor<2x3xi1>
func.func @compare_gt(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = rlx.compare %a, %b {predicate = "gt"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}

// compare {predicate = "ge"} -> mil.greater_equal.
// CHECK-LABEL: func.func @compare_ge(
// CHECK-NEXT:  [[GREATER_EQUAL:%.+]] = mil.greater_equal %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return [[GREATER_EQUAL]] : tensor<2x3xi1>
func.func @compare_ge(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = rlx.compare %a, %b {predicate = "ge"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}

// where(c, a, b) -> select(cond, a, b), broadcasting kept.
// CHECK-LABEL: func.func @where(
// CHECK-NEXT:  [[SELECT:%.+]] = mil.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[SELECT]] : tensor<2x3xf32>
func.func @where(%c: tensor<2x3xi1>, %a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = rlx.where %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// cast -> MIL cast with MIL's dtype name of the result element type.
// CHECK-LABEL: func.func @cast_f32_to_f16(
// CHECK-NEXT:  [[CAST:%.+]] = mil.cast %x {dtype = "fp16"} : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[CAST]] : tensor<2x3xf16>
func.func @cast_f32_to_f16(%x: tensor<2x3xf32>) -> tensor<2x3xf16> {
  %y = rlx.cast %x : tensor<2x3xf32> to tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// CHECK-LABEL: func.func @cast_f32_to_i32(
// CHECK-NEXT:  [[CAST:%.+]] = mil.cast %x {dtype = "int32"} : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT:  func.return [[CAST]] : tensor<2x3xi32>
func.func @cast_f32_to_i32(%x: tensor<2x3xf32>) -> tensor<2x3xi32> {
  %y = rlx.cast %x : tensor<2x3xf32> to tensor<2x3xi32>
  func.return %y : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @cast_i1_to_f16(
// CHECK-NEXT:  [[CAST:%.+]] = mil.cast %x {dtype = "fp16"} : (tensor<2x3xi1>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[CAST]] : tensor<2x3xf16>
func.func @cast_i1_to_f16(%x: tensor<2x3xi1>) -> tensor<2x3xf16> {
  %y = rlx.cast %x : tensor<2x3xi1> to tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// A cast to the type it already has folds away: no mil op at all.
// CHECK-LABEL: func.func @cast_same_type(
// CHECK-NEXT:  func.return %x : tensor<2x3xf32>
func.func @cast_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.cast %x : tensor<2x3xf32> to tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
