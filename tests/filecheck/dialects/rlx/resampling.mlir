// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// rlx resampling: upsample (nearest, bilinear with align_corners, bicubic,
// a 1-D linear upsample), pad (constant with a value, reflect, replicate),
// pixel_shuffle and pixel_unshuffle.

// CHECK-LABEL: func.func @upsample(
// GENERIC-LABEL: "func.func"() <{sym_name = "upsample"
func.func @upsample(%x: tensor<1x3x4x6xf32>, %h: tensor<2x8x5xf16>) {
  // CHECK-NEXT: %nearest = rlx.upsample %x {mode = "nearest", size = array<i64: 8, 12>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  // GENERIC: %nearest = "rlx.upsample"(%x) <{mode = "nearest", size = array<i64: 8, 12>}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  %nearest = rlx.upsample %x {mode = "nearest", size = array<i64: 8, 12>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  // CHECK-NEXT: %bilinear = rlx.upsample %x {mode = "bilinear", size = array<i64: 5, 7>, align_corners = true} : (tensor<1x3x4x6xf32>) -> tensor<1x3x5x7xf32>
  // GENERIC: %bilinear = "rlx.upsample"(%x) <{mode = "bilinear", size = array<i64: 5, 7>, align_corners = true}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x5x7xf32>
  %bilinear = rlx.upsample %x {mode = "bilinear", size = array<i64: 5, 7>, align_corners = true} : (tensor<1x3x4x6xf32>) -> tensor<1x3x5x7xf32>
  // CHECK-NEXT: %bicubic = rlx.upsample %x {mode = "bicubic", size = array<i64: 2, 3>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x2x3xf32>
  // GENERIC: %bicubic = "rlx.upsample"(%x) <{mode = "bicubic", size = array<i64: 2, 3>}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x2x3xf32>
  %bicubic = rlx.upsample %x {mode = "bicubic", size = array<i64: 2, 3>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x2x3xf32>
  // CHECK-NEXT: %linear = rlx.upsample %h {mode = "bilinear", size = array<i64: 9>} : (tensor<2x8x5xf16>) -> tensor<2x8x9xf16>
  // GENERIC: %linear = "rlx.upsample"(%h) <{mode = "bilinear", size = array<i64: 9>}> : (tensor<2x8x5xf16>) -> tensor<2x8x9xf16>
  %linear = rlx.upsample %h {mode = "bilinear", size = array<i64: 9>} : (tensor<2x8x5xf16>) -> tensor<2x8x9xf16>
  func.return
}

// CHECK-LABEL: func.func @pad(
// GENERIC-LABEL: "func.func"() <{sym_name = "pad"
func.func @pad(%x: tensor<1x3x4x6xf32>, %h: tensor<2x8x5xf16>) {
  // CHECK-NEXT: %zero = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 1, 2, 3, 0>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  // GENERIC: %zero = "rlx.pad"(%x) <{pads = array<i64: 0, 0, 0, 0, 1, 2, 3, 0>}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  %zero = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 1, 2, 3, 0>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  // CHECK-NEXT: %filled = rlx.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, mode = "constant", value = -1.500000e+00 : f32} : (tensor<1x3x4x6xf32>) -> tensor<1x5x4x6xf32>
  // GENERIC: %filled = "rlx.pad"(%x) <{pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, mode = "constant", value = -1.500000e+00 : f32}> : (tensor<1x3x4x6xf32>) -> tensor<1x5x4x6xf32>
  %filled = rlx.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, mode = "constant", value = -1.5 : f32} : (tensor<1x3x4x6xf32>) -> tensor<1x5x4x6xf32>
  // CHECK-NEXT: %reflect = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 3, 3, 5, 5>, mode = "reflect"} : (tensor<1x3x4x6xf32>) -> tensor<1x3x10x16xf32>
  // GENERIC: %reflect = "rlx.pad"(%x) <{pads = array<i64: 0, 0, 0, 0, 3, 3, 5, 5>, mode = "reflect"}> : (tensor<1x3x4x6xf32>) -> tensor<1x3x10x16xf32>
  %reflect = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 3, 3, 5, 5>, mode = "reflect"} : (tensor<1x3x4x6xf32>) -> tensor<1x3x10x16xf32>
  // CHECK-NEXT: %replicate = rlx.pad %h {pads = array<i64: 0, 0, 0, 0, 7, 0>, mode = "replicate"} : (tensor<2x8x5xf16>) -> tensor<2x8x12xf16>
  // GENERIC: %replicate = "rlx.pad"(%h) <{pads = array<i64: 0, 0, 0, 0, 7, 0>, mode = "replicate"}> : (tensor<2x8x5xf16>) -> tensor<2x8x12xf16>
  %replicate = rlx.pad %h {pads = array<i64: 0, 0, 0, 0, 7, 0>, mode = "replicate"} : (tensor<2x8x5xf16>) -> tensor<2x8x12xf16>
  func.return
}

// CHECK-LABEL: func.func @pixel_shuffle(
// GENERIC-LABEL: "func.func"() <{sym_name = "pixel_shuffle"
func.func @pixel_shuffle(%x: tensor<1x8x3x5xf32>, %h: tensor<2x3x6x9xf16>) {
  // CHECK-NEXT: %up = rlx.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x3x5xf32>) -> tensor<1x2x6x10xf32>
  // GENERIC: %up = "rlx.pixel_shuffle"(%x) <{upscale_factor = 2 : i64}> : (tensor<1x8x3x5xf32>) -> tensor<1x2x6x10xf32>
  %up = rlx.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x3x5xf32>) -> tensor<1x2x6x10xf32>
  // CHECK-NEXT: %down = rlx.pixel_unshuffle %h {downscale_factor = 3 : i64} : (tensor<2x3x6x9xf16>) -> tensor<2x27x2x3xf16>
  // GENERIC: %down = "rlx.pixel_unshuffle"(%h) <{downscale_factor = 3 : i64}> : (tensor<2x3x6x9xf16>) -> tensor<2x27x2x3xf16>
  %down = rlx.pixel_unshuffle %h {downscale_factor = 3 : i64} : (tensor<2x3x6x9xf16>) -> tensor<2x27x2x3xf16>
  func.return
}
