// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// rlx.constant and rlx.param: the ops without operands.

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
