// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Affine int8 quantization: rlx.quantize (float -> i8) and rlx.dequantize
// (i8 -> f16 or f32).

// CHECK-LABEL: func.func @quantize(
// GENERIC-LABEL: "func.func"() <{sym_name = "quantize"
func.func @quantize(%x: tensor<4x32xf32>, %h: tensor<8xf16>) {
  // CHECK-NEXT: %q = rlx.quantize %x {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  // GENERIC: %q = "rlx.quantize"(%x) <{scale = 1.250000e-01 : f32, zero_point = 0 : i64}> : (tensor<4x32xf32>) -> tensor<4x32xi8>
  %q = rlx.quantize %x {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  // CHECK-NEXT: %qz = rlx.quantize %h {scale = 2.000000e-02 : f32, zero_point = -128 : i64} : (tensor<8xf16>) -> tensor<8xi8>
  // GENERIC-NEXT: %qz = "rlx.quantize"(%h) <{scale = 2.000000e-02 : f32, zero_point = -128 : i64}> : (tensor<8xf16>) -> tensor<8xi8>
  %qz = rlx.quantize %h {scale = 2.000000e-02 : f32, zero_point = -128 : i64} : (tensor<8xf16>) -> tensor<8xi8>
  // CHECK-NEXT: %qmax = rlx.quantize %x {scale = 1.000000e+00 : f32, zero_point = 127 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  // GENERIC-NEXT: %qmax = "rlx.quantize"(%x) <{scale = 1.000000e+00 : f32, zero_point = 127 : i64}> : (tensor<4x32xf32>) -> tensor<4x32xi8>
  %qmax = rlx.quantize %x {scale = 1.000000e+00 : f32, zero_point = 127 : i64} : (tensor<4x32xf32>) -> tensor<4x32xi8>
  func.return
}

// CHECK-LABEL: func.func @dequantize(
// GENERIC-LABEL: "func.func"() <{sym_name = "dequantize"
func.func @dequantize(%q: tensor<4x32xi8>) {
  // CHECK-NEXT: %x = rlx.dequantize %q {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xi8>) -> tensor<4x32xf32>
  // GENERIC: %x = "rlx.dequantize"(%q) <{scale = 1.250000e-01 : f32, zero_point = 0 : i64}> : (tensor<4x32xi8>) -> tensor<4x32xf32>
  %x = rlx.dequantize %q {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<4x32xi8>) -> tensor<4x32xf32>
  // CHECK-NEXT: %h = rlx.dequantize %q {scale = 5.000000e-01 : f32, zero_point = 3 : i64} : (tensor<4x32xi8>) -> tensor<4x32xf16>
  // GENERIC-NEXT: %h = "rlx.dequantize"(%q) <{scale = 5.000000e-01 : f32, zero_point = 3 : i64}> : (tensor<4x32xi8>) -> tensor<4x32xf16>
  %h = rlx.dequantize %q {scale = 5.000000e-01 : f32, zero_point = 3 : i64} : (tensor<4x32xi8>) -> tensor<4x32xf16>
  func.return
}
