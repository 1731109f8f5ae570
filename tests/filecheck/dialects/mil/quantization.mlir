// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Affine quantization: quantize / dequantize with const scale and optional
// zero_point (per tensor, or per channel along `axis`), and
// constexpr_affine_dequantize of int8 weights.

// CHECK-LABEL: func.func @quantize(
// GENERIC-LABEL: "func.func"() <{sym_name = "quantize"
func.func @quantize(%x: tensor<1x4x1x8xf16>, %q: tensor<4x8xi8>) {
  // CHECK-NEXT: %scale = mil.const dense<4.998780e-02> : tensor<f16>
  // GENERIC: %scale = "mil.const"() <{val = dense<4.998780e-02> : tensor<f16>}> : () -> tensor<f16>
  %scale = mil.const dense<0.05> : tensor<f16>
  // CHECK-NEXT: %zp = mil.const dense<3> : tensor<i8>
  // GENERIC-NEXT: %zp = "mil.const"() <{val = dense<3> : tensor<i8>}> : () -> tensor<i8>
  %zp = mil.const dense<3> : tensor<i8>
  // CHECK-NEXT: %quantized = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xi8>
  // GENERIC-NEXT: %quantized = "mil.quantize"(%x, %zp, %scale) <{output_dtype = "int8"}> : (tensor<1x4x1x8xf16>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xi8>
  %quantized = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xi8>
  // CHECK-NEXT: %channel_scale = mil.const dense<[9.997560e-02, 1.999510e-01, 3.000490e-01, 3.999020e-01]> : tensor<4xf16>
  // GENERIC-NEXT: %channel_scale = "mil.const"() <{val = dense<[9.997560e-02, 1.999510e-01, 3.000490e-01, 3.999020e-01]> : tensor<4xf16>}> : () -> tensor<4xf16>
  %channel_scale = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  // CHECK-NEXT: %per_channel = mil.quantize %x, %channel_scale {axis = 1 : i64, output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xi8>
  // GENERIC-NEXT: %per_channel = "mil.quantize"(%x, %channel_scale) <{axis = 1 : i64, output_dtype = "int8"}> : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xi8>
  %per_channel = mil.quantize %x, %channel_scale {axis = 1 : i64, output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xi8>
  // CHECK-NEXT: %scale32 = mil.const dense<5.000000e-01> : tensor<f32>
  // GENERIC-NEXT: %scale32 = "mil.const"() <{val = dense<5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
  %scale32 = mil.const dense<0.5> : tensor<f32>
  // CHECK-NEXT: %dequantized = mil.dequantize %q, zero_point %zp, %scale32 : (tensor<4x8xi8>, tensor<i8>, tensor<f32>) -> tensor<4x8xf32>
  // GENERIC-NEXT: %dequantized = "mil.dequantize"(%q, %zp, %scale32) : (tensor<4x8xi8>, tensor<i8>, tensor<f32>) -> tensor<4x8xf32>
  %dequantized = mil.dequantize %q, zero_point %zp, %scale32 : (tensor<4x8xi8>, tensor<i8>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %channel_zp = mil.const dense<[0, 1, 2, 3]> : tensor<4xi8>
  // GENERIC-NEXT: %channel_zp = "mil.const"() <{val = dense<[0, 1, 2, 3]> : tensor<4xi8>}> : () -> tensor<4xi8>
  %channel_zp = mil.const dense<[0, 1, 2, 3]> : tensor<4xi8>
  // CHECK-NEXT: %per_row = mil.dequantize %q, zero_point %channel_zp, %channel_scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<4xi8>, tensor<4xf16>) -> tensor<4x8xf16>
  // GENERIC-NEXT: %per_row = "mil.dequantize"(%q, %channel_zp, %channel_scale) <{axis = 0 : i64}> : (tensor<4x8xi8>, tensor<4xi8>, tensor<4xf16>) -> tensor<4x8xf16>
  %per_row = mil.dequantize %q, zero_point %channel_zp, %channel_scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<4xi8>, tensor<4xf16>) -> tensor<4x8xf16>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @constexpr(
// GENERIC-LABEL: "func.func"() <{sym_name = "constexpr"
func.func @constexpr() {
  // CHECK-NEXT: %data = mil.const weight "w.int8" : tensor<32x8x1x1xi8>
  // GENERIC: %data = "mil.const"() <{weight = "w.int8"}> : () -> tensor<32x8x1x1xi8>
  %data = mil.const weight "w.int8" : tensor<32x8x1x1xi8>
  // CHECK-NEXT: %zp = mil.const dense<0> : tensor<i8>
  // GENERIC-NEXT: %zp = "mil.const"() <{val = dense<0> : tensor<i8>}> : () -> tensor<i8>
  %zp = mil.const dense<0> : tensor<i8>
  // CHECK-NEXT: %scale = mil.const dense<1.000210e-02> : tensor<f16>
  // GENERIC-NEXT: %scale = "mil.const"() <{val = dense<1.000210e-02> : tensor<f16>}> : () -> tensor<f16>
  %scale = mil.const dense<0.01> : tensor<f16>
  // CHECK-NEXT: %w = mil.constexpr_affine_dequantize %data, %zp, %scale {axis = 0 : i64} : (tensor<32x8x1x1xi8>, tensor<i8>, tensor<f16>) -> tensor<32x8x1x1xf16>
  // GENERIC-NEXT: %w = "mil.constexpr_affine_dequantize"(%data, %zp, %scale) <{axis = 0 : i64}> : (tensor<32x8x1x1xi8>, tensor<i8>, tensor<f16>) -> tensor<32x8x1x1xf16>
  %w = mil.constexpr_affine_dequantize %data, %zp, %scale {axis = 0 : i64} : (tensor<32x8x1x1xi8>, tensor<i8>, tensor<f16>) -> tensor<32x8x1x1xf16>
  // CHECK-NEXT: %scales = mil.const weight "w.scales" : tensor<32xf32>
  // GENERIC-NEXT: %scales = "mil.const"() <{weight = "w.scales"}> : () -> tensor<32xf32>
  %scales = mil.const weight "w.scales" : tensor<32xf32>
  // CHECK-NEXT: %fzp = mil.const dense<1.500000e+00> : tensor<f32>
  // GENERIC-NEXT: %fzp = "mil.const"() <{val = dense<1.500000e+00> : tensor<f32>}> : () -> tensor<f32>
  %fzp = mil.const dense<1.5> : tensor<f32>
  // CHECK-NEXT: %per_channel = mil.constexpr_affine_dequantize %data, %fzp, %scales {axis = 0 : i64} : (tensor<32x8x1x1xi8>, tensor<f32>, tensor<32xf32>) -> tensor<32x8x1x1xf32>
  // GENERIC-NEXT: %per_channel = "mil.constexpr_affine_dequantize"(%data, %fzp, %scales) <{axis = 0 : i64}> : (tensor<32x8x1x1xi8>, tensor<f32>, tensor<32xf32>) -> tensor<32x8x1x1xf32>
  %per_channel = mil.constexpr_affine_dequantize %data, %fzp, %scales {axis = 0 : i64} : (tensor<32x8x1x1xi8>, tensor<f32>, tensor<32xf32>) -> tensor<32x8x1x1xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}
