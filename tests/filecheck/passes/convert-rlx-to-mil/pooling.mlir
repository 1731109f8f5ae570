// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, pooling family (passes/rlx_to_mil/pooling.py):
// max_pool and avg_pool become MIL's floor-mode pooling with custom padding;
// a ceil_mode overhang is extra after-padding.

// NO-RLX-NOT: rlx.

// CHECK-LABEL: func.func @max_pool(
// CHECK-NEXT: %y = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>} : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
func.func @max_pool(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32> {
  %y = rlx.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
  func.return %y : tensor<1x3x5x5xf32>
}

// count_include_pad = false is MIL's exclude_padding_from_average; a signal
// pools as an image of height 1 (its ANE form).
// CHECK-LABEL: func.func @avg_pool(
// CHECK-NEXT: %0 = mil.reshape %x {shape = array<i64: 2, 4, 1, 11>} : (tensor<2x4x11xf16>) -> tensor<2x4x1x11xf16>
// CHECK-NEXT: %1 = mil.avg_pool %0 {kernel_sizes = array<i64: 1, 3>, strides = array<i64: 1, 2>, pad_type = "custom", pad = array<i64: 0, 0, 1, 1>, exclude_padding_from_average = true} : (tensor<2x4x1x11xf16>) -> tensor<2x4x1x6xf16>
// CHECK-NEXT: %y = mil.reshape %1 {shape = array<i64: 2, 4, 6>} : (tensor<2x4x1x6xf16>) -> tensor<2x4x6xf16>
func.func @avg_pool(%x: tensor<2x4x11xf16>) -> tensor<2x4x6xf16> {
  %y = rlx.avg_pool %x {kernel = array<i64: 3>, strides = array<i64: 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<2x4x11xf16>) -> tensor<2x4x6xf16>
  func.return %y : tensor<2x4x6xf16>
}

// The last window overhangs the padding: one more after-padding, and torch's
// divisor (which counts padding but not the overhang) restored by a const
// ratio Π kernel / count.
// CHECK-LABEL: func.func @avg_pool_ceil(
// CHECK-NEXT: %0 = mil.avg_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 2, 1, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x5xf32>
// CHECK-NEXT: %1 = mil.const dense<{{\[\[}}1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.500000e+00], {{.*}}, [1.500000e+00, 1.500000e+00, 1.500000e+00, 1.500000e+00, 2.250000e+00]]> : tensor<5x5xf32>
// CHECK-NEXT: %y = mil.mul %0, %1 : (tensor<1x2x5x5xf32>, tensor<5x5xf32>) -> tensor<1x2x5x5xf32>
func.func @avg_pool_ceil(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x5x5xf32> {
  %y = rlx.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}

// Without padding both divisors count x's elements: the excluding form, one op.
// CHECK-LABEL: func.func @avg_pool_ceil_unpadded(
// CHECK-NEXT: %y = mil.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 0, 1, 0, 1>, exclude_padding_from_average = true} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
func.func @avg_pool_ceil_unpadded(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %y = rlx.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @global_avg_pool(
// CHECK-NEXT: %y = mil.avg_pool %x {kernel_sizes = array<i64: 7, 7>, strides = array<i64: 7, 7>, pad_type = "valid"} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
func.func @global_avg_pool(%x: tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32> {
  %y = rlx.avg_pool %x {kernel = array<i64: 7, 7>, strides = array<i64: 7, 7>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  func.return %y : tensor<1x8x1x1xf32>
}
