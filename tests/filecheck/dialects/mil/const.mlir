// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// mil.const: an inline `val` (any supported element type, rank 0 for MIL
// scalars) or `weight`, a tensor named in the weights file.

// CHECK-LABEL: func.func @inline_values(
// GENERIC-LABEL: "func.func"() <{sym_name = "inline_values"
func.func @inline_values() {
  // CHECK-NEXT: %f32 = mil.const dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>
  // GENERIC: %f32 = "mil.const"() <{val = dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %f32 = mil.const dense<[1.0, 2.5]> : tensor<2xf32>
  // CHECK-NEXT: %f16 = mil.const dense<[1.000000e+00, -2.000000e+00, 5.000000e-01, 4.000000e+00]> : tensor<4xf16>
  // GENERIC-NEXT: %f16 = "mil.const"() <{val = dense<[1.000000e+00, -2.000000e+00, 5.000000e-01, 4.000000e+00]> : tensor<4xf16>}> : () -> tensor<4xf16>
  %f16 = mil.const dense<[1.0, -2.0, 0.5, 4.0]> : tensor<4xf16>
  // CHECK-NEXT: %i32 = mil.const dense<[0, 1, 3, 2]> : tensor<4xi32>
  // GENERIC-NEXT: %i32 = "mil.const"() <{val = dense<[0, 1, 3, 2]> : tensor<4xi32>}> : () -> tensor<4xi32>
  %i32 = mil.const dense<[0, 1, 3, 2]> : tensor<4xi32>
  // CHECK-NEXT: %i8 = mil.const dense<-3> : tensor<2x2xi8>
  // GENERIC-NEXT: %i8 = "mil.const"() <{val = dense<-3> : tensor<2x2xi8>}> : () -> tensor<2x2xi8>
  %i8 = mil.const dense<-3> : tensor<2x2xi8>
  // CHECK-NEXT: %i1 = mil.const dense<[true, false]> : tensor<2xi1>
  // GENERIC-NEXT: %i1 = "mil.const"() <{val = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
  %i1 = mil.const dense<[true, false]> : tensor<2xi1>
  // CHECK-NEXT: %scalar = mil.const dense<1.500000e+00> : tensor<f32>
  // GENERIC-NEXT: %scalar = "mil.const"() <{val = dense<1.500000e+00> : tensor<f32>}> : () -> tensor<f32>
  %scalar = mil.const dense<1.5> : tensor<f32>
  // CHECK-NEXT: %named = mil.const dense<0.000000e+00> : tensor<3xf32> {test.note = "attributes are kept"}
  // GENERIC-NEXT: %named = "mil.const"() <{val = dense<0.000000e+00> : tensor<3xf32>}> {test.note = "attributes are kept"} : () -> tensor<3xf32>
  %named = mil.const dense<0.0> : tensor<3xf32> {test.note = "attributes are kept"}
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @weights(
// GENERIC-LABEL: "func.func"() <{sym_name = "weights"
func.func @weights() {
  // CHECK-NEXT: %w = mil.const weight "layer0.wq" : tensor<64x64xf16>
  // GENERIC: %w = "mil.const"() <{weight = "layer0.wq"}> : () -> tensor<64x64xf16>
  %w = mil.const weight "layer0.wq" : tensor<64x64xf16>
  // CHECK-NEXT: %b = mil.const weight "layer0.bias" : tensor<64xf32>
  // GENERIC-NEXT: %b = "mil.const"() <{weight = "layer0.bias"}> : () -> tensor<64xf32>
  %b = mil.const weight "layer0.bias" : tensor<64xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}
