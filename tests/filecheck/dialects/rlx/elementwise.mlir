// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The sources rlx.constant and rlx.param (the ops without operands) and
// the elementwise families: 15 unary ops, 7 binary ops with numpy
// broadcasting, rlx.compare, rlx.where and rlx.cast.

// CHECK-LABEL: func.func @constant_splat(
// GENERIC-LABEL: "func.func"() <{sym_name = "constant_splat"
func.func @constant_splat() -> tensor<2x3xf32> {
  // CHECK-NEXT: %c = rlx.constant dense<1.500000e+00> : tensor<2x3xf32>
  // GENERIC: %c = "rlx.constant"() <{value = dense<1.500000e+00> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %c = rlx.constant dense<1.5> : tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @constant_values(
// GENERIC-LABEL: "func.func"() <{sym_name = "constant_values"
func.func @constant_values() -> (tensor<4xi32>, tensor<2x2xf16>, tensor<2xi1>, tensor<3xi8>) {
  // CHECK-NEXT: %i = rlx.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  // GENERIC: %i = "rlx.constant"() <{value = dense<[0, 1, 2, 3]> : tensor<4xi32>}> : () -> tensor<4xi32>
  %i = rlx.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  // CHECK-NEXT: %h = rlx.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
  // GENERIC-NEXT: %h = "rlx.constant"() <{value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>}> : () -> tensor<2x2xf16>
  %h = rlx.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  // CHECK-NEXT: %b = rlx.constant dense<[true, false]> : tensor<2xi1>
  // GENERIC-NEXT: %b = "rlx.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
  %b = rlx.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-NEXT: %q = rlx.constant dense<[-128, 0, 127]> : tensor<3xi8>
  // GENERIC-NEXT: %q = "rlx.constant"() <{value = dense<[-128, 0, 127]> : tensor<3xi8>}> : () -> tensor<3xi8>
  %q = rlx.constant dense<[-128, 0, 127]> : tensor<3xi8>
  func.return %i, %h, %b, %q : tensor<4xi32>, tensor<2x2xf16>, tensor<2xi1>, tensor<3xi8>
}

// CHECK-LABEL: func.func @constant_scalar(
// GENERIC-LABEL: "func.func"() <{sym_name = "constant_scalar"
func.func @constant_scalar() -> tensor<f32> {
  // CHECK-NEXT: %s = rlx.constant dense<-2.000000e+00> : tensor<f32>
  // GENERIC: %s = "rlx.constant"() <{value = dense<-2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %s = rlx.constant dense<-2.0> : tensor<f32>
  func.return %s : tensor<f32>
}

// CHECK-LABEL: func.func @params(
// GENERIC-LABEL: "func.func"() <{sym_name = "params"
func.func @params() -> (tensor<8x16xf32>, tensor<16xf16>, tensor<4x4xi8>) {
  // CHECK-NEXT: %w = rlx.param "layers.0.attn.q_proj.weight" : tensor<8x16xf32>
  // GENERIC: %w = "rlx.param"() <{name = "layers.0.attn.q_proj.weight"}> : () -> tensor<8x16xf32>
  %w = rlx.param "layers.0.attn.q_proj.weight" : tensor<8x16xf32>
  // CHECK-NEXT: %g = rlx.param "norm.weight" : tensor<16xf16>
  // GENERIC-NEXT: %g = "rlx.param"() <{name = "norm.weight"}> : () -> tensor<16xf16>
  %g = rlx.param "norm.weight" : tensor<16xf16>
  // CHECK-NEXT: %qw = rlx.param "lm_head.qweight" : tensor<4x4xi8>
  // GENERIC-NEXT: %qw = "rlx.param"() <{name = "lm_head.qweight"}> : () -> tensor<4x4xi8>
  %qw = rlx.param "lm_head.qweight" : tensor<4x4xi8>
  func.return %w, %g, %qw : tensor<8x16xf32>, tensor<16xf16>, tensor<4x4xi8>
}

// CHECK-LABEL: func.func @unary(
// GENERIC-LABEL: "func.func"() <{sym_name = "unary"
func.func @unary(%x: tensor<2x8xf32>) {
  // CHECK-NEXT: %relu = rlx.relu %x : tensor<2x8xf32>
  // GENERIC: %relu = "rlx.relu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %relu = rlx.relu %x : tensor<2x8xf32>
  // CHECK-NEXT: %gelu = rlx.gelu %x : tensor<2x8xf32>
  // GENERIC-NEXT: %gelu = "rlx.gelu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu = rlx.gelu %x : tensor<2x8xf32>
  // CHECK-NEXT: %gelu_tanh = rlx.gelu_tanh %x : tensor<2x8xf32>
  // GENERIC-NEXT: %gelu_tanh = "rlx.gelu_tanh"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu_tanh = rlx.gelu_tanh %x : tensor<2x8xf32>
  // CHECK-NEXT: %silu = rlx.silu %x : tensor<2x8xf32>
  // GENERIC-NEXT: %silu = "rlx.silu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %silu = rlx.silu %x : tensor<2x8xf32>
  // CHECK-NEXT: %sigmoid = rlx.sigmoid %x : tensor<2x8xf32>
  // GENERIC-NEXT: %sigmoid = "rlx.sigmoid"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sigmoid = rlx.sigmoid %x : tensor<2x8xf32>
  // CHECK-NEXT: %tanh = rlx.tanh %x : tensor<2x8xf32>
  // GENERIC-NEXT: %tanh = "rlx.tanh"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %tanh = rlx.tanh %x : tensor<2x8xf32>
  // CHECK-NEXT: %exp = rlx.exp %x : tensor<2x8xf32>
  // GENERIC-NEXT: %exp = "rlx.exp"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %exp = rlx.exp %x : tensor<2x8xf32>
  // CHECK-NEXT: %log = rlx.log %x : tensor<2x8xf32>
  // GENERIC-NEXT: %log = "rlx.log"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %log = rlx.log %x : tensor<2x8xf32>
  // CHECK-NEXT: %sqrt = rlx.sqrt %x : tensor<2x8xf32>
  // GENERIC-NEXT: %sqrt = "rlx.sqrt"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sqrt = rlx.sqrt %x : tensor<2x8xf32>
  // CHECK-NEXT: %rsqrt = rlx.rsqrt %x : tensor<2x8xf32>
  // GENERIC-NEXT: %rsqrt = "rlx.rsqrt"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %rsqrt = rlx.rsqrt %x : tensor<2x8xf32>
  // CHECK-NEXT: %neg = rlx.neg %x : tensor<2x8xf32>
  // GENERIC-NEXT: %neg = "rlx.neg"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %neg = rlx.neg %x : tensor<2x8xf32>
  // CHECK-NEXT: %abs = rlx.abs %x : tensor<2x8xf32>
  // GENERIC-NEXT: %abs = "rlx.abs"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %abs = rlx.abs %x : tensor<2x8xf32>
  // CHECK-NEXT: %sin = rlx.sin %x : tensor<2x8xf32>
  // GENERIC-NEXT: %sin = "rlx.sin"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sin = rlx.sin %x : tensor<2x8xf32>
  // CHECK-NEXT: %cos = rlx.cos %x : tensor<2x8xf32>
  // GENERIC-NEXT: %cos = "rlx.cos"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %cos = rlx.cos %x : tensor<2x8xf32>
  // CHECK-NEXT: %reciprocal = rlx.reciprocal %x : tensor<2x8xf32>
  // GENERIC-NEXT: %reciprocal = "rlx.reciprocal"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %reciprocal = rlx.reciprocal %x : tensor<2x8xf32>
  // CHECK-NEXT: %erf = rlx.erf %x : tensor<2x8xf32>
  // GENERIC-NEXT: %erf = "rlx.erf"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %erf = rlx.erf %x : tensor<2x8xf32>
  // CHECK-NEXT: %floor = rlx.floor %x : tensor<2x8xf32>
  // GENERIC-NEXT: %floor = "rlx.floor"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %floor = rlx.floor %x : tensor<2x8xf32>
  // CHECK-NEXT: %round = rlx.round %x : tensor<2x8xf32>
  // GENERIC-NEXT: %round = "rlx.round"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %round = rlx.round %x : tensor<2x8xf32>
  func.return
}

// CHECK-LABEL: func.func @unary_f16_rank0(
// GENERIC-LABEL: "func.func"() <{sym_name = "unary_f16_rank0"
func.func @unary_f16_rank0(%h: tensor<1x4x1x16xf16>, %s: tensor<f32>) {
  // CHECK-NEXT: %silu = rlx.silu %h : tensor<1x4x1x16xf16>
  // GENERIC: %silu = "rlx.silu"(%h) : (tensor<1x4x1x16xf16>) -> tensor<1x4x1x16xf16>
  %silu = rlx.silu %h : tensor<1x4x1x16xf16>
  // CHECK-NEXT: %exp = rlx.exp %s : tensor<f32>
  // GENERIC-NEXT: %exp = "rlx.exp"(%s) : (tensor<f32>) -> tensor<f32>
  %exp = rlx.exp %s : tensor<f32>
  func.return
}

// CHECK-LABEL: func.func @binary_same_shape(
// GENERIC-LABEL: "func.func"() <{sym_name = "binary_same_shape"
func.func @binary_same_shape(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) {
  // CHECK-NEXT: %add = rlx.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC: %add = "rlx.add"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %add = rlx.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %sub = rlx.sub %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %sub = "rlx.sub"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %sub = rlx.sub %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %mul = rlx.mul %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %mul = "rlx.mul"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %mul = rlx.mul %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %div = rlx.div %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %div = "rlx.div"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %div = rlx.div %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %max = rlx.max %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %max = "rlx.max"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %max = rlx.max %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %min = rlx.min %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %min = "rlx.min"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %min = rlx.min %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %pow = rlx.pow %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %pow = "rlx.pow"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %pow = rlx.pow %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return
}

// CHECK-LABEL: func.func @binary_broadcast(
// GENERIC-LABEL: "func.func"() <{sym_name = "binary_broadcast"
func.func @binary_broadcast(%a: tensor<4x1x8xf32>, %row: tensor<8xf32>, %col: tensor<3x1xf32>, %s: tensor<f32>, %i: tensor<2x3xi32>, %j: tensor<3xi32>, %h: tensor<1x8xf16>, %k: tensor<5x1xf16>) {
  // CHECK-NEXT: %bias = rlx.add %a, %row : (tensor<4x1x8xf32>, tensor<8xf32>) -> tensor<4x1x8xf32>
  // GENERIC: %bias = "rlx.add"(%a, %row) : (tensor<4x1x8xf32>, tensor<8xf32>) -> tensor<4x1x8xf32>
  %bias = rlx.add %a, %row : (tensor<4x1x8xf32>, tensor<8xf32>) -> tensor<4x1x8xf32>
  // CHECK-NEXT: %outer = rlx.mul %a, %col : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  // GENERIC-NEXT: %outer = "rlx.mul"(%a, %col) : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  %outer = rlx.mul %a, %col : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  // CHECK-NEXT: %scaled = rlx.div %s, %a : (tensor<f32>, tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
  // GENERIC-NEXT: %scaled = "rlx.div"(%s, %a) : (tensor<f32>, tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
  %scaled = rlx.div %s, %a : (tensor<f32>, tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
  // CHECK-NEXT: %isub = rlx.sub %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  // GENERIC-NEXT: %isub = "rlx.sub"(%i, %j) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %isub = rlx.sub %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %imax = rlx.max %j, %i : (tensor<3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // GENERIC-NEXT: %imax = "rlx.max"(%j, %i) : (tensor<3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %imax = rlx.max %j, %i : (tensor<3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %hmin = rlx.min %h, %k : (tensor<1x8xf16>, tensor<5x1xf16>) -> tensor<5x8xf16>
  // GENERIC-NEXT: %hmin = "rlx.min"(%h, %k) : (tensor<1x8xf16>, tensor<5x1xf16>) -> tensor<5x8xf16>
  %hmin = rlx.min %h, %k : (tensor<1x8xf16>, tensor<5x1xf16>) -> tensor<5x8xf16>
  // CHECK-NEXT: %hpow = rlx.pow %k, %h : (tensor<5x1xf16>, tensor<1x8xf16>) -> tensor<5x8xf16>
  // GENERIC-NEXT: %hpow = "rlx.pow"(%k, %h) : (tensor<5x1xf16>, tensor<1x8xf16>) -> tensor<5x8xf16>
  %hpow = rlx.pow %k, %h : (tensor<5x1xf16>, tensor<1x8xf16>) -> tensor<5x8xf16>
  func.return
}

// CHECK-LABEL: func.func @compare(
// GENERIC-LABEL: "func.func"() <{sym_name = "compare"
func.func @compare(%a: tensor<2x8xf32>, %row: tensor<8xf32>, %i: tensor<4x1xi32>, %j: tensor<1x6xi32>) {
  // CHECK-NEXT: %eq = rlx.compare %a, %row {predicate = "eq"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC: %eq = "rlx.compare"(%a, %row) <{predicate = "eq"}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %eq = rlx.compare %a, %row {predicate = "eq"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %ne = rlx.compare %a, %row {predicate = "ne"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %ne = "rlx.compare"(%a, %row) <{predicate = "ne"}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %ne = rlx.compare %a, %row {predicate = "ne"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %lt = rlx.compare %a, %row {predicate = "lt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %lt = "rlx.compare"(%a, %row) <{predicate = "lt"}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %lt = rlx.compare %a, %row {predicate = "lt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %le = rlx.compare %a, %row {predicate = "le"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %le = "rlx.compare"(%a, %row) <{predicate = "le"}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %le = rlx.compare %a, %row {predicate = "le"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %gt = rlx.compare %a, %row {predicate = "gt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %gt = "rlx.compare"(%a, %row) <{predicate = "gt"}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %gt = rlx.compare %a, %row {predicate = "gt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %ge = rlx.compare %i, %j {predicate = "ge"} : (tensor<4x1xi32>, tensor<1x6xi32>) -> tensor<4x6xi1>
  // GENERIC-NEXT: %ge = "rlx.compare"(%i, %j) <{predicate = "ge"}> : (tensor<4x1xi32>, tensor<1x6xi32>) -> tensor<4x6xi1>
  %ge = rlx.compare %i, %j {predicate = "ge"} : (tensor<4x1xi32>, tensor<1x6xi32>) -> tensor<4x6xi1>
  func.return
}

// CHECK-LABEL: func.func @where(
// GENERIC-LABEL: "func.func"() <{sym_name = "where"
func.func @where(%c: tensor<1x1x4x4xi1>, %scores: tensor<2x3x4x4xf32>, %neg: tensor<f32>, %a: tensor<8xi32>, %b: tensor<8xi32>, %m: tensor<8xi1>) {
  // CHECK-NEXT: %masked = rlx.where %c, %scores, %neg : (tensor<1x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  // GENERIC: %masked = "rlx.where"(%c, %scores, %neg) : (tensor<1x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  %masked = rlx.where %c, %scores, %neg : (tensor<1x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  // CHECK-NEXT: %pick = rlx.where %m, %a, %b : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  // GENERIC-NEXT: %pick = "rlx.where"(%m, %a, %b) : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %pick = rlx.where %m, %a, %b : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  func.return
}

// CHECK-LABEL: func.func @cast(
// GENERIC-LABEL: "func.func"() <{sym_name = "cast"
func.func @cast(%x: tensor<2x8xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>, %q: tensor<3xi8>) {
  // CHECK-NEXT: %half = rlx.cast %x : tensor<2x8xf32> to tensor<2x8xf16>
  // GENERIC: %half = "rlx.cast"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %half = rlx.cast %x : tensor<2x8xf32> to tensor<2x8xf16>
  // CHECK-NEXT: %float = rlx.cast %i : tensor<4xi32> to tensor<4xf32>
  // GENERIC-NEXT: %float = "rlx.cast"(%i) : (tensor<4xi32>) -> tensor<4xf32>
  %float = rlx.cast %i : tensor<4xi32> to tensor<4xf32>
  // CHECK-NEXT: %mask = rlx.cast %b : tensor<4xi1> to tensor<4xf16>
  // GENERIC-NEXT: %mask = "rlx.cast"(%b) : (tensor<4xi1>) -> tensor<4xf16>
  %mask = rlx.cast %b : tensor<4xi1> to tensor<4xf16>
  // CHECK-NEXT: %wide = rlx.cast %q : tensor<3xi8> to tensor<3xi32>
  // GENERIC-NEXT: %wide = "rlx.cast"(%q) : (tensor<3xi8>) -> tensor<3xi32>
  %wide = rlx.cast %q : tensor<3xi8> to tensor<3xi32>
  // CHECK-NEXT: %same = rlx.cast %x : tensor<2x8xf32> to tensor<2x8xf32>
  // GENERIC-NEXT: %same = "rlx.cast"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %same = rlx.cast %x : tensor<2x8xf32> to tensor<2x8xf32>
  func.return
}
