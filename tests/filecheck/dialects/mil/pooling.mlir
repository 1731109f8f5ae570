// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// max_pool and avg_pool with MIL's parameter names and output sizes.

// CHECK-LABEL: func.func @pools(
// GENERIC-LABEL: "func.func"() <{sym_name = "pools"
func.func @pools(%x: tensor<1x3x7x9xf32>, %s: tensor<2x4x11xf16>) {
  // CHECK-NEXT: %m = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x3x7x9xf32>) -> tensor<1x3x3x4xf32>
  // GENERIC: %m = "mil.max_pool"(%x) <{kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"}> : (tensor<1x3x7x9xf32>) -> tensor<1x3x3x4xf32>
  %m = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x3x7x9xf32>) -> tensor<1x3x3x4xf32>
  // MIL's ceil_mode: symmetric padding, the last window kept unless it starts past in + P/2.
  // CHECK-NEXT: %c = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x3x7x9xf32>) -> tensor<1x3x4x5xf32>
  %c = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x3x7x9xf32>) -> tensor<1x3x4x5xf32>
  // CHECK-NEXT: %a = mil.avg_pool %s {kernel_sizes = array<i64: 4>, strides = array<i64: 3>, pad_type = "same", exclude_padding_from_average = true} : (tensor<2x4x11xf16>) -> tensor<2x4x4xf16>
  %a = mil.avg_pool %s {kernel_sizes = array<i64: 4>, strides = array<i64: 3>, pad_type = "same", exclude_padding_from_average = true} : (tensor<2x4x11xf16>) -> tensor<2x4x4xf16>
  func.return
}
