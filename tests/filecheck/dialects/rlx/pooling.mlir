// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// max_pool and avg_pool, 2-D and 1-D, with torch's output sizes.

// CHECK-LABEL: func.func @max_pool(
// GENERIC-LABEL: "func.func"() <{sym_name = "max_pool"
func.func @max_pool(%x: tensor<1x3x9x9xf32>, %s: tensor<2x4x11xf16>) {
  // CHECK-NEXT: %y = rlx.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
  // GENERIC: %y = "rlx.max_pool"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true}> : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
  %y = rlx.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
  // CHECK-NEXT: %z = rlx.max_pool %s {kernel = array<i64: 2>} : (tensor<2x4x11xf16>) -> tensor<2x4x10xf16>
  %z = rlx.max_pool %s {kernel = array<i64: 2>} : (tensor<2x4x11xf16>) -> tensor<2x4x10xf16>
  func.return
}

// CHECK-LABEL: func.func @avg_pool(
// GENERIC-LABEL: "func.func"() <{sym_name = "avg_pool"
func.func @avg_pool(%x: tensor<2x4x11xf16>, %i: tensor<1x8x7x7xf32>) {
  // CHECK-NEXT: %y = rlx.avg_pool %x {kernel = array<i64: 3>, strides = array<i64: 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<2x4x11xf16>) -> tensor<2x4x6xf16>
  // GENERIC: %y = "rlx.avg_pool"(%x) <{kernel = array<i64: 3>, strides = array<i64: 2>, padding = array<i64: 1, 1>, count_include_pad = false}> : (tensor<2x4x11xf16>) -> tensor<2x4x6xf16>
  %y = rlx.avg_pool %x {kernel = array<i64: 3>, strides = array<i64: 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<2x4x11xf16>) -> tensor<2x4x6xf16>
  // CHECK-NEXT: %g = rlx.avg_pool %i {kernel = array<i64: 7, 7>, strides = array<i64: 7, 7>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  %g = rlx.avg_pool %i {kernel = array<i64: 7, 7>, strides = array<i64: 7, 7>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  func.return
}
