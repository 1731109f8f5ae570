// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, resampling family (passes/rlx_to_mil/resampling.py):
// upsample, pad, pixel_shuffle and pixel_unshuffle.

// NO-RLX-NOT: rlx.

// An integer multiple of each spatial size is MIL's upsample op (torch's
// nearest index floor(d * n/m) is floor(d / k) there).
// CHECK-LABEL: func.func @nearest_x2(
// CHECK-NEXT:  %y = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x10xf32>
// CHECK-NEXT:  func.return %y : tensor<1x3x8x10xf32>
func.func @nearest_x2(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x8x10xf32> {
  %y = rlx.upsample %x {mode = "nearest", size = array<i64: 8, 10>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x10xf32>
  func.return %y : tensor<1x3x8x10xf32>
}

// A power-of-two nearest scale goes in steps of at most 2x, the ANE's limit
// (floor(floor(d/2) / (k/2)) = floor(d/k)).
// CHECK-LABEL: func.func @nearest_x4(
// CHECK-NEXT:  [[V0:%.+]] = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64} : (tensor<1x3x2x3xf16>) -> tensor<1x3x4x6xf16>
// CHECK-NEXT:  %y = mil.upsample_nearest_neighbor [[V0]] {scale_factor_height = 2 : i64, scale_factor_width = 1 : i64} : (tensor<1x3x4x6xf16>) -> tensor<1x3x8x6xf16>
// CHECK-NEXT:  func.return %y : tensor<1x3x8x6xf16>
func.func @nearest_x4(%x: tensor<1x3x2x3xf16>) -> tensor<1x3x8x6xf16> {
  %y = rlx.upsample %x {mode = "nearest", size = array<i64: 8, 6>} : (tensor<1x3x2x3xf16>) -> tensor<1x3x8x6xf16>
  func.return %y : tensor<1x3x8x6xf16>
}

// CHECK-LABEL: func.func @bilinear_corners(
// CHECK-NEXT:  %y = mil.upsample_bilinear %x {scale_factor_height = 2 : i64, scale_factor_width = 3 : i64, align_corners = true} : (tensor<1x3x4x5xf16>) -> tensor<1x3x8x15xf16>
// CHECK-NEXT:  func.return %y : tensor<1x3x8x15xf16>
func.func @bilinear_corners(%x: tensor<1x3x4x5xf16>) -> tensor<1x3x8x15xf16> {
  %y = rlx.upsample %x {mode = "bilinear", size = array<i64: 8, 15>, align_corners = true} : (tensor<1x3x4x5xf16>) -> tensor<1x3x8x15xf16>
  func.return %y : tensor<1x3x8x15xf16>
}

// A 1-D input [N, C, W] is upsampled on its last two axes with the C scale 1,
// which leaves C unchanged.
// CHECK-LABEL: func.func @linear_1d(
// CHECK-NEXT:  %y = mil.upsample_bilinear %x {scale_factor_height = 1 : i64, scale_factor_width = 2 : i64, align_corners = false} : (tensor<1x3x5xf32>) -> tensor<1x3x10xf32>
// CHECK-NEXT:  func.return %y : tensor<1x3x10xf32>
func.func @linear_1d(%x: tensor<1x3x5xf32>) -> tensor<1x3x10xf32> {
  %y = rlx.upsample %x {mode = "bilinear", size = array<i64: 10>} : (tensor<1x3x5xf32>) -> tensor<1x3x10xf32>
  func.return %y : tensor<1x3x10xf32>
}

// MIL has no bicubic: y = A_H . x . A_W^T with Keys' cubic weights (A = -0.75)
// at the static size; a tap outside the axis adds its weight to the edge.
// CHECK-LABEL: func.func @bicubic(
// CHECK-NEXT:  [[V0:%.+]] = mil.const dense<[[1.08680558, -0.0868055522], [5.000000e-01, 5.000000e-01], [-0.0868055522, 1.08680558]]> : tensor<3x2xf32>
// CHECK-NEXT:  [[V1:%.+]] = mil.matmul [[V0]], %x : (tensor<3x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x3x2xf32>
// CHECK-NEXT:  [[V2:%.+]] = mil.const dense<[[1.10546875, 0.7734375, 0.2265625, -0.10546875], [-0.10546875, 0.2265625, 0.7734375, 1.10546875]]> : tensor<2x4xf32>
// CHECK-NEXT:  %y = mil.matmul [[V1]], [[V2]] : (tensor<1x3x3x2xf32>, tensor<2x4xf32>) -> tensor<1x3x3x4xf32>
// CHECK-NEXT:  func.return %y : tensor<1x3x3x4xf32>
func.func @bicubic(%x: tensor<1x3x2x2xf32>) -> tensor<1x3x3x4xf32> {
  %y = rlx.upsample %x {mode = "bicubic", size = array<i64: 3, 4>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x3x4xf32>
  func.return %y : tensor<1x3x3x4xf32>
}

// No integer scale: the interpolation matrix (one 1 per row); the H axis,
// of unchanged size, needs none.
// CHECK-LABEL: func.func @nearest_down_width(
// CHECK-NEXT:  [[V0:%.+]] = mil.const dense<[[1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00]]> : tensor<4x2xf32>
// CHECK-NEXT:  %y = mil.matmul %x, [[V0]] : (tensor<1x3x4x4xf32>, tensor<4x2xf32>) -> tensor<1x3x4x2xf32>
// CHECK-NEXT:  func.return %y : tensor<1x3x4x2xf32>
func.func @nearest_down_width(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x4x2xf32> {
  %y = rlx.upsample %x {mode = "nearest", size = array<i64: 4, 2>} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x2xf32>
  func.return %y : tensor<1x3x4x2xf32>
}

// MIL pads the last len(pad)/2 axes: the pairs from the first padded axis on.
// CHECK-LABEL: func.func @pad_constant(
// CHECK-NEXT:  %y = mil.pad %x {pad = array<i64: 1, 1, 1, 0, 0, 0>, constant_val = -1.500000e+00 : f32} : (tensor<1x3x4x5xf32>) -> tensor<1x5x5x5xf32>
// CHECK-NEXT:  func.return %y : tensor<1x5x5x5xf32>
func.func @pad_constant(%x: tensor<1x3x4x5xf32>) -> tensor<1x5x5x5xf32> {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 1, 1, 1, 0, 0, 0>, value = -1.5 : f32} : (tensor<1x3x4x5xf32>) -> tensor<1x5x5x5xf32>
  func.return %y : tensor<1x5x5x5xf32>
}

// CHECK-LABEL: func.func @pad_reflect(
// CHECK-NEXT:  %y = mil.pad %x {pad = array<i64: 1, 2, 3, 0>, mode = "reflect"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x8xf32>
// CHECK-NEXT:  func.return %y : tensor<1x3x7x8xf32>
func.func @pad_reflect(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x7x8xf32> {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 1, 2, 3, 0>, mode = "reflect"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x8xf32>
  func.return %y : tensor<1x3x7x8xf32>
}

// CHECK-LABEL: func.func @pad_replicate_1d(
// CHECK-NEXT:  %y = mil.pad %x {pad = array<i64: 4, 0>, mode = "replicate"} : (tensor<1x3x5xf16>) -> tensor<1x3x9xf16>
// CHECK-NEXT:  func.return %y : tensor<1x3x9xf16>
func.func @pad_replicate_1d(%x: tensor<1x3x5xf16>) -> tensor<1x3x9xf16> {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 4, 0>, mode = "replicate"} : (tensor<1x3x5xf16>) -> tensor<1x3x9xf16>
  func.return %y : tensor<1x3x9xf16>
}

// No padding at all is no op.
// CHECK-LABEL: func.func @pad_nothing(
// CHECK-NEXT:  func.return %x : tensor<1x3x5xf32>
func.func @pad_nothing(%x: tensor<1x3x5xf32>) -> tensor<1x3x5xf32> {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0>, mode = "reflect"} : (tensor<1x3x5xf32>) -> tensor<1x3x5xf32>
  func.return %y : tensor<1x3x5xf32>
}

// pixel_shuffle and pixel_unshuffle -> MIL's ops of those names (torch's
// channel order); a factor of 1 is no op.
// CHECK-LABEL: func.func @pixel_shuffle(
// CHECK-NEXT:  %up = mil.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x3x5xf16>) -> tensor<1x2x6x10xf16>
// CHECK-NEXT:  %down = mil.pixel_unshuffle %up {downscale_factor = 2 : i64} : (tensor<1x2x6x10xf16>) -> tensor<1x8x3x5xf16>
// CHECK-NEXT:  func.return %down : tensor<1x8x3x5xf16>
func.func @pixel_shuffle(%x: tensor<1x8x3x5xf16>) -> tensor<1x8x3x5xf16> {
  %up = rlx.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x3x5xf16>) -> tensor<1x2x6x10xf16>
  %down = rlx.pixel_unshuffle %up {downscale_factor = 2 : i64} : (tensor<1x2x6x10xf16>) -> tensor<1x8x3x5xf16>
  %same = rlx.pixel_shuffle %down {upscale_factor = 1 : i64} : (tensor<1x8x3x5xf16>) -> tensor<1x8x3x5xf16>
  func.return %same : tensor<1x8x3x5xf16>
}
