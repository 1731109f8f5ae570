// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s

// mil-fp16, consts (passes/fp16.py): inline f32 data is rounded to fp16,
// stand-ins for +-inf (|v| >= 1e9) saturating at +-65504 so that no inf
// appears (a finite value beyond 65504 is refused: test_fp16_range.py); a weight const changes only
// its declared type (the weights file keeps fp32 data, converted when read or
// written). one_hot's typed on/off values and quantization scales become f16;
// int8 and int32 consts stay. constexpr_affine_dequantize's zero_point, which
// MIL types int8 or fp32 only, keeps its f32 const.

// 0.1 rounds to the nearest fp16; 1e9 and -1e9 (not a mask: it feeds a mul)
// saturate at +-65504; an i32 const stays.
// CHECK-LABEL: func.func @inline(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<2xi32>) {
// CHECK-NEXT:  %c = mil.const dense<[1.000000e+00, 9.997560e-02, 6.550400e+04, -6.550400e+04]> : tensor<4xf16>
// CHECK-NEXT:  %y = mil.mul %x, %c : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %i = mil.const dense<[7, -7]> : tensor<2xi32>
// CHECK-NEXT:  func.return %y, %i : tensor<4xf16>, tensor<2xi32>
func.func @inline(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi32>) {
  %c = mil.const dense<[1.0, 0.1, 1.0e9, -1.0e9]> : tensor<4xf32>
  %y = mil.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %i = mil.const dense<[7, -7]> : tensor<2xi32>
  func.return %y, %i : tensor<4xf32>, tensor<2xi32>
}

// A rank-0 const stays rank 0.
// CHECK-LABEL: func.func @scalar(%x: tensor<2xf16>) -> tensor<2xf16> {
// CHECK-NEXT:  %s = mil.const dense<5.000000e-01> : tensor<f16>
// CHECK-NEXT:  %y = mil.mul %x, %s : (tensor<2xf16>, tensor<f16>) -> tensor<2xf16>
// CHECK-NEXT:  func.return %y : tensor<2xf16>
func.func @scalar(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = mil.const dense<0.5> : tensor<f32>
  %y = mil.mul %x, %s : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// layer_norm's gamma and beta (consts as MIL requires) become f16 with x.
// CHECK-LABEL: func.func @layer_norm(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
// CHECK-NEXT:  %g = mil.const weight "ln.weight" : tensor<3xf16>
// CHECK-NEXT:  %b = mil.const dense<[0.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<3xf16>
// CHECK-NEXT:  %y = mil.layer_norm %x, gamma %g, beta %b {axes = array<i64: -1>, epsilon = 1.000000e-05 : f32} : (tensor<2x3xf16>, tensor<3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return %y : tensor<2x3xf16>
func.func @layer_norm(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %g = mil.const weight "ln.weight" : tensor<3xf32>
  %b = mil.const dense<[0.0, 1.0, 2.0]> : tensor<3xf32>
  %y = mil.layer_norm %x, gamma %g, beta %b {axes = array<i64: -1>, epsilon = 1.0e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// one_hot's on/off values become f16, so its result is f16; the int32
// indices need no cast.
// CHECK-LABEL: func.func @one_hot(%labels: tensor<2xi32>, %x: tensor<2x3xf16>) -> tensor<2x3xf16> {
// CHECK-NEXT:  %h = mil.one_hot %labels {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16} : (tensor<2xi32>) -> tensor<2x3xf16>
// CHECK-NEXT:  %y = mil.mul %x, %h : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return %y : tensor<2x3xf16>
func.func @one_hot(%labels: tensor<2xi32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %h = mil.one_hot %labels {one_hot_vector_size = 3 : i64, axis = -1 : i64, on_value = 1.000000e+00 : f32, off_value = 0.000000e+00 : f32} : (tensor<2xi32>) -> tensor<2x3xf32>
  %y = mil.mul %x, %h : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// An int32 one_hot (MIL's default values) stays int32.
// CHECK-LABEL: func.func @one_hot_i32(%labels: tensor<2xi32>) -> tensor<2x3xi32> {
// CHECK-NEXT:  %h = mil.one_hot %labels {one_hot_vector_size = 3 : i64} : (tensor<2xi32>) -> tensor<2x3xi32>
func.func @one_hot_i32(%labels: tensor<2xi32>) -> tensor<2x3xi32> {
  %h = mil.one_hot %labels {one_hot_vector_size = 3 : i64} : (tensor<2xi32>) -> tensor<2x3xi32>
  func.return %h : tensor<2x3xi32>
}

// quantize's scale follows its input, dequantize's result follows its scale;
// the int8 zero points stay.
// CHECK-LABEL: func.func @quantization(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK-NEXT:  %scale = mil.const dense<4.998780e-02> : tensor<f16>
// CHECK-NEXT:  %zp = mil.const dense<3> : tensor<i8>
// CHECK-NEXT:  %q = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<4x8xf16>, tensor<i8>, tensor<f16>) -> tensor<4x8xi8>
// CHECK-NEXT:  %y = mil.dequantize %q, zero_point %zp, %scale : (tensor<4x8xi8>, tensor<i8>, tensor<f16>) -> tensor<4x8xf16>
// CHECK-NEXT:  func.return %y : tensor<4x8xf16>
func.func @quantization(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %scale = mil.const dense<0.05> : tensor<f32>
  %zp = mil.const dense<3> : tensor<i8>
  %q = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<4x8xf32>, tensor<i8>, tensor<f32>) -> tensor<4x8xi8>
  %y = mil.dequantize %q, zero_point %zp, %scale : (tensor<4x8xi8>, tensor<i8>, tensor<f32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// constexpr_affine_dequantize: the scale (and so the result) becomes f16, the
// fp32 zero point stays f32; a zero point const shared with another use is
// split: the other use gets an f16 copy.
// CHECK-LABEL: func.func @constexpr_dequantize(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK-NEXT:  %data = mil.const weight "w.int8" : tensor<4x8xi8>
// CHECK-NEXT:  [[ZP16:%.+]] = mil.const dense<2.000000e+00> : tensor<f16>
// CHECK-NEXT:  [[ZP32:%.+]] = mil.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  %scale = mil.const dense<9.997560e-02> : tensor<f16>
// CHECK-NEXT:  %w = mil.constexpr_affine_dequantize %data, [[ZP32]], %scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<f32>, tensor<f16>) -> tensor<4x8xf16>
// CHECK-NEXT:  %y = mil.mul %x, %w : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:  %z = mil.add %y, [[ZP16]] : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
// CHECK-NEXT:  func.return %z : tensor<4x8xf16>
func.func @constexpr_dequantize(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %data = mil.const weight "w.int8" : tensor<4x8xi8>
  %zp = mil.const dense<2.0> : tensor<f32>
  %scale = mil.const dense<0.1> : tensor<f32>
  %w = mil.constexpr_affine_dequantize %data, %zp, %scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %y = mil.mul %x, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = mil.add %y, %zp : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}

// A zero point const used only by constexpr_affine_dequantize stays as it is.
// CHECK-LABEL: func.func @constexpr_zero_point_only(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK-NEXT:  %data = mil.const weight "w.int8" : tensor<4x8xi8>
// CHECK-NEXT:  %zp = mil.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  %scale = mil.const dense<9.997560e-02> : tensor<f16>
// CHECK-NEXT:  %w = mil.constexpr_affine_dequantize %data, %zp, %scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<f32>, tensor<f16>) -> tensor<4x8xf16>
// CHECK-NEXT:  %y = mil.mul %x, %w : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:  func.return %y : tensor<4x8xf16>
func.func @constexpr_zero_point_only(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %data = mil.const weight "w.int8" : tensor<4x8xi8>
  %zp = mil.const dense<2.0> : tensor<f32>
  %scale = mil.const dense<0.1> : tensor<f32>
  %w = mil.constexpr_affine_dequantize %data, %zp, %scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %y = mil.mul %x, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
