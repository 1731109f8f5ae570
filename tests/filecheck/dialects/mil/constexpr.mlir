// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The iOS18 compressed weights: constexpr_blockwise_shift_scale (int4, int8,
// uint8 data; a scale per block; an optional offset) and
// constexpr_lut_to_dense (uint1..uint8 indices into per-block LUTs, scalar
// or vector entries). Their data has the storage element types i4, ui1..ui8,
// which only consts and these ops take.

// CHECK-LABEL: func.func @shift_scale(
func.func @shift_scale() -> (tensor<8x32x1x1xf16>, tensor<4x6xf32>) {
  // CHECK-NEXT: %data = mil.const weight "w.data" : tensor<8x32x1x1xi4>
  // GENERIC: %data = "mil.const"() <{weight = "w.data"}> : () -> tensor<8x32x1x1xi4>
  %data = mil.const weight "w.data" : tensor<8x32x1x1xi4>
  // CHECK-NEXT: %scale = mil.const weight "w.scale" : tensor<8x1x1x1xf16>
  %scale = mil.const weight "w.scale" : tensor<8x1x1x1xf16>
  // CHECK-NEXT: %w = mil.constexpr_blockwise_shift_scale %data, %scale : (tensor<8x32x1x1xi4>, tensor<8x1x1x1xf16>) -> tensor<8x32x1x1xf16>
  // GENERIC: %w = "mil.constexpr_blockwise_shift_scale"(%data, %scale) : (tensor<8x32x1x1xi4>, tensor<8x1x1x1xf16>) -> tensor<8x32x1x1xf16>
  %w = mil.constexpr_blockwise_shift_scale %data, %scale : (tensor<8x32x1x1xi4>, tensor<8x1x1x1xf16>) -> tensor<8x32x1x1xf16>
  // CHECK-NEXT: %u = mil.const dense<{{\[}}[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 255], [0, 0, 0, 0, 0, 0], [128, 128, 128, 128, 128, 128]]> : tensor<4x6xui8>
  %u = mil.const dense<[[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 255], [0, 0, 0, 0, 0, 0], [128, 128, 128, 128, 128, 128]]> : tensor<4x6xui8>
  %s = mil.const dense<[[0.5, 1.0, 2.0], [0.25, 0.125, 4.0]]> : tensor<2x3xf32>
  %o = mil.const dense<128> : tensor<2x3xui8>
  // CHECK: %blocks = mil.constexpr_blockwise_shift_scale %u, %s, offset %o : (tensor<4x6xui8>, tensor<2x3xf32>, tensor<2x3xui8>) -> tensor<4x6xf32>
  // GENERIC: %blocks = "mil.constexpr_blockwise_shift_scale"(%u, %s, %o) : (tensor<4x6xui8>, tensor<2x3xf32>, tensor<2x3xui8>) -> tensor<4x6xf32>
  %blocks = mil.constexpr_blockwise_shift_scale %u, %s, offset %o : (tensor<4x6xui8>, tensor<2x3xf32>, tensor<2x3xui8>) -> tensor<4x6xf32>
  func.return %w, %blocks : tensor<8x32x1x1xf16>, tensor<4x6xf32>
}

// CHECK-LABEL: func.func @lut(
func.func @lut() -> (tensor<16x8x1x1xf16>, tensor<4x9xf16>) {
  // CHECK-NEXT: %indices = mil.const weight "w.indices" : tensor<16x8x1x1xui4>
  %indices = mil.const weight "w.indices" : tensor<16x8x1x1xui4>
  // CHECK-NEXT: %table = mil.const weight "w.lut" : tensor<4x1x1x1x16x1xf16>
  %table = mil.const weight "w.lut" : tensor<4x1x1x1x16x1xf16>
  // CHECK-NEXT: %w = mil.constexpr_lut_to_dense %indices, %table : (tensor<16x8x1x1xui4>, tensor<4x1x1x1x16x1xf16>) -> tensor<16x8x1x1xf16>
  // GENERIC: %w = "mil.constexpr_lut_to_dense"(%indices, %table) : (tensor<16x8x1x1xui4>, tensor<4x1x1x1x16x1xf16>) -> tensor<16x8x1x1xf16>
  %w = mil.constexpr_lut_to_dense %indices, %table : (tensor<16x8x1x1xui4>, tensor<4x1x1x1x16x1xf16>) -> tensor<16x8x1x1xf16>
  %vi = mil.const weight "v.indices" : tensor<4x3xui2>
  %vl = mil.const weight "v.lut" : tensor<2x1x4x3xf16>
  // CHECK: %vector = mil.constexpr_lut_to_dense %vi, %vl {vector_axis = 1 : i64} : (tensor<4x3xui2>, tensor<2x1x4x3xf16>) -> tensor<4x9xf16>
  // GENERIC: %vector = "mil.constexpr_lut_to_dense"(%vi, %vl) <{vector_axis = 1 : i64}> : (tensor<4x3xui2>, tensor<2x1x4x3xf16>) -> tensor<4x9xf16>
  %vector = mil.constexpr_lut_to_dense %vi, %vl {vector_axis = 1 : i64} : (tensor<4x3xui2>, tensor<2x1x4x3xf16>) -> tensor<4x9xf16>
  func.return %w, %vector : tensor<16x8x1x1xf16>, tensor<4x9xf16>
}
