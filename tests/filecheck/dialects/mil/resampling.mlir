// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// MIL's resampling and padding ops (upsample_nearest_neighbor, upsample_bilinear,
// pad) and the parametric activations leaky_relu, elu and sigmoid_hard.

// CHECK-LABEL: func.func @upsample(
// GENERIC-LABEL: "func.func"() <{sym_name = "upsample"
func.func @upsample(%x: tensor<1x3x4x6xf32>, %h: tensor<2x8x5xf16>) {
  // CHECK-NEXT: %nearest = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 3 : i64} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x18xf32>
  // GENERIC: %nearest = "mil.upsample_nearest_neighbor"(%x) <{scale_factor_height = 2 : i64, scale_factor_width = 3 : i64}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x18xf32>
  %nearest = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 3 : i64} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x18xf32>
  // CHECK-NEXT: %default = mil.upsample_nearest_neighbor %h : (tensor<2x8x5xf16>) -> tensor<2x8x5xf16>
  // GENERIC: %default = "mil.upsample_nearest_neighbor"(%h) : (tensor<2x8x5xf16>) -> tensor<2x8x5xf16>
  %default = mil.upsample_nearest_neighbor %h : (tensor<2x8x5xf16>) -> tensor<2x8x5xf16>
  // CHECK-NEXT: %bilinear = mil.upsample_bilinear %x {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64, align_corners = false} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  // GENERIC: %bilinear = "mil.upsample_bilinear"(%x) <{scale_factor_height = 2 : i64, scale_factor_width = 2 : i64, align_corners = false}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  %bilinear = mil.upsample_bilinear %x {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64, align_corners = false} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  // CHECK-NEXT: %legacy = mil.upsample_bilinear %h {scale_factor_width = 4 : i64, align_corners = false, half_pixel_centers = false} : (tensor<2x8x5xf16>) -> tensor<2x8x20xf16>
  // GENERIC: %legacy = "mil.upsample_bilinear"(%h) <{scale_factor_width = 4 : i64, align_corners = false, half_pixel_centers = false}> : (tensor<2x8x5xf16>) -> tensor<2x8x20xf16>
  %legacy = mil.upsample_bilinear %h {scale_factor_width = 4 : i64, align_corners = false, half_pixel_centers = false} : (tensor<2x8x5xf16>) -> tensor<2x8x20xf16>
  func.return
}

// CHECK-LABEL: func.func @pad(
// GENERIC-LABEL: "func.func"() <{sym_name = "pad"
func.func @pad(%x: tensor<1x3x4x6xf32>, %h: tensor<2x8x5xf16>) {
  // CHECK-NEXT: %zero = mil.pad %x {pad = array<i64: 1, 2, 3, 0>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  // GENERIC: %zero = "mil.pad"(%x) <{pad = array<i64: 1, 2, 3, 0>}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  %zero = mil.pad %x {pad = array<i64: 1, 2, 3, 0>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  // CHECK-NEXT: %filled = mil.pad %x {pad = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, constant_val = -1.500000e+00 : f32} : (tensor<1x3x4x6xf32>) -> tensor<1x5x4x6xf32>
  // GENERIC: %filled = "mil.pad"(%x) <{pad = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, constant_val = -1.500000e+00 : f32}> : (tensor<1x3x4x6xf32>) -> tensor<1x5x4x6xf32>
  %filled = mil.pad %x {pad = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, constant_val = -1.5 : f32} : (tensor<1x3x4x6xf32>) -> tensor<1x5x4x6xf32>
  // CHECK-NEXT: %reflect = mil.pad %x {pad = array<i64: 3, 3, 5, 5>, mode = "reflect"} : (tensor<1x3x4x6xf32>) -> tensor<1x3x10x16xf32>
  // GENERIC: %reflect = "mil.pad"(%x) <{pad = array<i64: 3, 3, 5, 5>, mode = "reflect"}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x10x16xf32>
  %reflect = mil.pad %x {pad = array<i64: 3, 3, 5, 5>, mode = "reflect"} : (tensor<1x3x4x6xf32>) -> tensor<1x3x10x16xf32>
  // CHECK-NEXT: %replicate = mil.pad %h {pad = array<i64: 5, 0>, mode = "replicate"} : (tensor<2x8x5xf16>) -> tensor<2x8x10xf16>
  // GENERIC: %replicate = "mil.pad"(%h) <{pad = array<i64: 5, 0>, mode = "replicate"}> : (tensor<2x8x5xf16>) -> tensor<2x8x10xf16>
  %replicate = mil.pad %h {pad = array<i64: 5, 0>, mode = "replicate"} : (tensor<2x8x5xf16>) -> tensor<2x8x10xf16>
  func.return
}

// CHECK-LABEL: func.func @activations(
// GENERIC-LABEL: "func.func"() <{sym_name = "activations"
func.func @activations(%x: tensor<2x8xf32>, %h: tensor<1x4x2x2xf16>) {
  // CHECK-NEXT: %leaky = mil.leaky_relu %x {alpha = 1.000000e-02 : f32} : tensor<2x8xf32>
  // GENERIC: %leaky = "mil.leaky_relu"(%x) <{alpha = 1.000000e-02 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %leaky = mil.leaky_relu %x {alpha = 0.01 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: %elu = mil.elu %h {alpha = 1.000000e+00 : f32} : tensor<1x4x2x2xf16>
  // GENERIC: %elu = "mil.elu"(%h) <{alpha = 1.000000e+00 : f32}> : (tensor<1x4x2x2xf16>) -> tensor<1x4x2x2xf16>
  %elu = mil.elu %h {alpha = 1.0 : f32} : tensor<1x4x2x2xf16>
  // CHECK-NEXT: %hard = mil.sigmoid_hard %x {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : tensor<2x8xf32>
  // GENERIC: %hard = "mil.sigmoid_hard"(%x) <{alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %hard = mil.sigmoid_hard %x {alpha = 0.16666667 : f32, beta = 0.5 : f32} : tensor<2x8xf32>
  func.return
}
