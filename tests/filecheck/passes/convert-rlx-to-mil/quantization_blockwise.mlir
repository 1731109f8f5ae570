// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s

// convert-rlx-to-mil, quantize / dequantize with per-block `scales`
// (passes/rlx_to_mil/quantization.py). Constant int8 weights and scales of
// the result's type: MIL's constexpr_blockwise_shift_scale, which keeps the
// weight compressed. Runtime data: the data viewed as [8, 4, 8] against
// scales [8, 4, 1] (blocks of 8 along the last axis); quantize divides and
// leaves rounding, zero point and clamping to MIL's quantize (scale 1).

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
