// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, quantization family (passes/rlx_to_mil/quantization.py):
// MIL's iOS17 quantize / dequantize with per-tensor (rank-0) consts: the
// scale in the float type, the zero point in int8; per-block `scales`
// through a blocked view, or constexpr_blockwise_shift_scale for weights.

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

// With per-block `scales`. Constant int8 weights and scales of the result's
// type: MIL's constexpr_blockwise_shift_scale, which keeps the weight
// compressed. Runtime data: the data viewed as [8, 4, 8] against scales
// [8, 4, 1] (blocks of 8 along the last axis); quantize divides and leaves
// rounding, zero point and clamping to MIL's quantize (scale 1).
// CHECK-LABEL: func.func @weights
// CHECK-NEXT:    %q = mil.const weight "q" : tensor<8x32xi8>
// CHECK-NEXT:    %s = mil.const weight "s" : tensor<8x4xf32>
// CHECK-NEXT:    %w = mil.constexpr_blockwise_shift_scale %q, %s : (tensor<8x32xi8>, tensor<8x4xf32>) -> tensor<8x32xf32>
func.func @weights() -> tensor<8x32xf32> {
  %q = rlx.param "q" : tensor<8x32xi8>
  %s = rlx.param "s" : tensor<8x4xf32>
  %w = rlx.dequantize %q scales %s {zero_point = 0 : i64} : (tensor<8x32xi8>, tensor<8x4xf32>) -> tensor<8x32xf32>
  func.return %w : tensor<8x32xf32>
}

// A zero point is the constexpr's offset (an int8 per block).
// CHECK-LABEL: func.func @weights_offset
// CHECK:         %[[OFFSET:.*]] = mil.const dense<-3> : tensor<8x1xi8>
// CHECK:         mil.constexpr_blockwise_shift_scale %q, %s, offset %[[OFFSET]] : (tensor<8x32xi8>, tensor<8x1xf16>, tensor<8x1xi8>) -> tensor<8x32xf16>
func.func @weights_offset() -> tensor<8x32xf16> {
  %q = rlx.param "q" : tensor<8x32xi8>
  %s = rlx.param "s" : tensor<8x1xf16>
  %w = rlx.dequantize %q scales %s {zero_point = -3 : i64} : (tensor<8x32xi8>, tensor<8x1xf16>) -> tensor<8x32xf16>
  func.return %w : tensor<8x32xf16>
}

// CHECK-LABEL: func.func @activations
// CHECK-NEXT:    %[[X:.*]] = mil.reshape %x {shape = array<i64: 8, 4, 8>} : (tensor<8x32xf16>) -> tensor<8x4x8xf16>
// CHECK-NEXT:    %[[S:.*]] = mil.reshape %s {shape = array<i64: 8, 4, 1>} : (tensor<8x4xf16>) -> tensor<8x4x1xf16>
// CHECK-NEXT:    %[[DIV:.*]] = mil.real_div %[[X]], %[[S]] : (tensor<8x4x8xf16>, tensor<8x4x1xf16>) -> tensor<8x4x8xf16>
// CHECK-NEXT:    %[[FLAT:.*]] = mil.reshape %[[DIV]] {shape = array<i64: 8, 32>} : (tensor<8x4x8xf16>) -> tensor<8x32xf16>
// CHECK-NEXT:    %[[ONE:.*]] = mil.const dense<1.000000e+00> : tensor<f16>
// CHECK-NEXT:    %[[ZP:.*]] = mil.const dense<1> : tensor<i8>
// CHECK-NEXT:    %q = mil.quantize %[[FLAT]], zero_point %[[ZP]], %[[ONE]] {output_dtype = "int8"} : (tensor<8x32xf16>, tensor<i8>, tensor<f16>) -> tensor<8x32xi8>
// CHECK-NEXT:    %[[F:.*]] = mil.cast %q {dtype = "fp16"} : (tensor<8x32xi8>) -> tensor<8x32xf16>
// CHECK:         %[[C:.*]] = mil.sub %[[F]], %{{.*}} : (tensor<8x32xf16>, tensor<f16>) -> tensor<8x32xf16>
// CHECK-NEXT:    %[[CV:.*]] = mil.reshape %[[C]] {shape = array<i64: 8, 4, 8>} : (tensor<8x32xf16>) -> tensor<8x4x8xf16>
// CHECK-NEXT:    %[[SV:.*]] = mil.reshape %s {shape = array<i64: 8, 4, 1>} : (tensor<8x4xf16>) -> tensor<8x4x1xf16>
// CHECK-NEXT:    %[[M:.*]] = mil.mul %[[CV]], %[[SV]] : (tensor<8x4x8xf16>, tensor<8x4x1xf16>) -> tensor<8x4x8xf16>
// CHECK-NEXT:    %d = mil.reshape %[[M]] {shape = array<i64: 8, 32>} : (tensor<8x4x8xf16>) -> tensor<8x32xf16>
func.func @activations(%x: tensor<8x32xf16>, %s: tensor<8x4xf16>) -> tensor<8x32xf16> {
  %q = rlx.quantize %x scales %s {zero_point = 1 : i64} : (tensor<8x32xf16>, tensor<8x4xf16>) -> tensor<8x32xi8>
  %d = rlx.dequantize %q scales %s {zero_point = 1 : i64} : (tensor<8x32xi8>, tensor<8x4xf16>) -> tensor<8x32xf16>
  func.return %d : tensor<8x32xf16>
}
