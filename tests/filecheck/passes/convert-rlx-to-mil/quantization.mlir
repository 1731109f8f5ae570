// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, quantization family (passes/rlx_to_mil/quantization.py):
// MIL's iOS17 quantize / dequantize with per-tensor (rank-0) consts: the
// scale in the float type, the zero point in int8.

// NO-RLX-NOT: rlx.

// q = clamp(round(x / scale) + zero_point, -128, 127) as int8.
// CHECK-LABEL: func.func @quantize(
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:  [[ZERO_POINT:%.+]] = mil.const dense<0> : tensor<i8>
// CHECK-NEXT:  [[Y:%.+]] = mil.quantize %x, zero_point [[ZERO_POINT]], [[SCALE]] {output_dtype = "int8"} : (tensor<2x3xf32>, tensor<i8>, tensor<f32>) -> tensor<2x3xi8>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xi8>
func.func @quantize(%x: tensor<2x3xf32>) -> tensor<2x3xi8> {
  %y = rlx.quantize %x {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}

// An f16 input gets an f16 scale; a negative zero point.
// CHECK-LABEL: func.func @quantize_f16(
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<5.000000e-01> : tensor<f16>
// CHECK-NEXT:  [[ZERO_POINT:%.+]] = mil.const dense<-3> : tensor<i8>
// CHECK-NEXT:  [[Y:%.+]] = mil.quantize %x, zero_point [[ZERO_POINT]], [[SCALE]] {output_dtype = "int8"} : (tensor<2x3xf16>, tensor<i8>, tensor<f16>) -> tensor<2x3xi8>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xi8>
func.func @quantize_f16(%x: tensor<2x3xf16>) -> tensor<2x3xi8> {
  %y = rlx.quantize %x {scale = 5.000000e-01 : f32, zero_point = -3 : i64} : (tensor<2x3xf16>) -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}

// x = (q - zero_point) * scale; the scale has the result's float type.
// CHECK-LABEL: func.func @dequantize_f32(
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:  [[ZERO_POINT:%.+]] = mil.const dense<0> : tensor<i8>
// CHECK-NEXT:  [[Y:%.+]] = mil.dequantize %q, zero_point [[ZERO_POINT]], [[SCALE]] : (tensor<2x3xi8>, tensor<i8>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf32>
func.func @dequantize_f32(%q: tensor<2x3xi8>) -> tensor<2x3xf32> {
  %y = rlx.dequantize %q {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<2x3xi8>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @dequantize_f16(
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<5.000000e-01> : tensor<f16>
// CHECK-NEXT:  [[ZERO_POINT:%.+]] = mil.const dense<3> : tensor<i8>
// CHECK-NEXT:  [[Y:%.+]] = mil.dequantize %q, zero_point [[ZERO_POINT]], [[SCALE]] : (tensor<2x3xi8>, tensor<i8>, tensor<f16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x3xf16>
func.func @dequantize_f16(%q: tensor<2x3xi8>) -> tensor<2x3xf16> {
  %y = rlx.dequantize %q {scale = 5.000000e-01 : f32, zero_point = 3 : i64} : (tensor<2x3xi8>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}
