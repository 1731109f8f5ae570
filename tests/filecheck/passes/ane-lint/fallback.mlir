// RUN: xdsl-opt %s --allow-unregistered-dialect -p ane-lint 2>&1 | filecheck %s

// Ops that usually fall back to the CPU/GPU are warnings, by the rules each
// op states: our dialect's gather, band_part, conv with dilations > 1, pooling
// with a kernel > 13 or a stride > 2 and upsampling by more than 2x; and, by
// name, MIL ops the mil dialect does not define, parsed as unregistered ops
// (scatter, fill, while_loop). Another op outside the dialect is a custom op.
// Ops within the limits (an undilated conv, a 3x3 stride-2 pool, 2x
// upsampling) are fine.

// CHECK:       ane-lint: warning: @fallback: mil.band_part (%masked): band_part usually runs on the CPU/GPU, not the ANE; add a constant 0/-1e4 mask instead
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.conv (%dilated): dilated convolution usually runs on the CPU/GPU, not the ANE (dilations [1, 2] > 1); use an undilated kernel with zeros between the taps
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.scatter (%scattered): scatter usually runs on the CPU/GPU, not the ANE; select with a one_hot mask, or scatter on the CPU
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.fill (%filled): fill usually runs on the CPU/GPU, not the ANE; use a mil.const (shapes are static)
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.while_loop (%looped): control flow usually runs on the CPU/GPU, not the ANE; unroll it, or run the loop or branch outside the model
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.max_pool (%big_kernel): pooling with a kernel > 13 or a stride > 2 usually runs on the CPU/GPU, not the ANE (kernel_sizes [15, 15] > 13); pool in several smaller steps
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.avg_pool (%big_stride): pooling with a kernel > 13 or a stride > 2 usually runs on the CPU/GPU, not the ANE (strides [3, 3] > 2); pool in several smaller steps
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.upsample_nearest_neighbor (%up4): upsampling by more than 2× usually runs on the CPU/GPU, not the ANE (scale_factor_height 4 > 2); upsample in steps of at most 2×
// CHECK-NEXT:  ane-lint: warning: @fallback: mil.my_custom_op (%c, %c_1): not an op of the mil dialect; Core ML runs custom ops on the CPU
// CHECK-NEXT:  ane-lint: 1 function, 12 ops, 0 errors, 9 warnings

// The module is printed unchanged.
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @fallback(%x: tensor<1x4x8x8xf16>, %ids: tensor<2xi32>) {
// CHECK-NEXT:      %masked = mil.band_part %x {lower = -1 : i64, upper = 0 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:      %w = mil.const weight "w" : tensor<4x4x3x3xf16>
// CHECK-NEXT:      %dilated = mil.conv %x, %w {dilations = array<i64: 1, 2>} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x4xf16>
// CHECK-NEXT:      %plain = mil.conv %x, %w {dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
// CHECK-NEXT:      %scattered = "mil.scatter"(%x, %ids, %x) {axis = 0 : i64} : (tensor<1x4x8x8xf16>, tensor<2xi32>, tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:      %filled = "mil.fill"() {value = 0.000000e+00 : f16} : () -> tensor<1x4x8x8xf16>
// CHECK-NEXT:      %looped = "mil.while_loop"(%x) : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:      %big_kernel = mil.max_pool %x {kernel_sizes = array<i64: 15, 15>, strides = array<i64: 1, 1>, pad_type = "same"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:      %big_stride = mil.avg_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 3, 3>, pad_type = "valid"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x2x2xf16>
// CHECK-NEXT:      %small_pool = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x3x3xf16>
// CHECK-NEXT:      %up2 = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x16x16xf16>
// CHECK-NEXT:      %up4 = mil.upsample_nearest_neighbor %x {scale_factor_height = 4 : i64, scale_factor_width = 1 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x32x8xf16>
// CHECK-NEXT:      %c, %c_1 = "mil.my_custom_op"(%x) : (tensor<1x4x8x8xf16>) -> (tensor<1x4x8x8xf16>, tensor<1x4x8x8xf16>)
// CHECK-NEXT:      func.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }

func.func @fallback(%x: tensor<1x4x8x8xf16>, %ids: tensor<2xi32>) {
  %masked = mil.band_part %x {lower = -1 : i64, upper = 0 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %w = mil.const weight "w" : tensor<4x4x3x3xf16>
  %dilated = mil.conv %x, %w {dilations = array<i64: 1, 2>} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x4xf16>
  %plain = mil.conv %x, %w {dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
  %scattered = "mil.scatter"(%x, %ids, %x) {axis = 0 : i64} : (tensor<1x4x8x8xf16>, tensor<2xi32>, tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %filled = "mil.fill"() {value = 0.0 : f16} : () -> tensor<1x4x8x8xf16>
  %looped = "mil.while_loop"(%x) : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %big_kernel = mil.max_pool %x {kernel_sizes = array<i64: 15, 15>, strides = array<i64: 1, 1>, pad_type = "same"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %big_stride = mil.avg_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 3, 3>, pad_type = "valid"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x2x2xf16>
  %small_pool = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x3x3xf16>
  %up2 = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x16x16xf16>
  %up4 = mil.upsample_nearest_neighbor %x {scale_factor_height = 4 : i64, scale_factor_width = 1 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x32x8xf16>
  %c:2 = "mil.my_custom_op"(%x) : (tensor<1x4x8x8xf16>) -> (tensor<1x4x8x8xf16>, tensor<1x4x8x8xf16>)
  func.return
}
