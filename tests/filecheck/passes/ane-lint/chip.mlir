// RUN: xdsl-opt %s -p 'ane-lint{chip=m1}' 2>&1 | filecheck %s --check-prefix=M1
// RUN: xdsl-opt %s -p 'ane-lint{chip=m4}' 2>&1 | filecheck %s --check-prefix=M4
// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s --check-prefix=NEUTRAL

// With a chip, ane-lint also reports what that chip's placement (the rules
// of xdsl-ane estimate) moves off the ANE: sin before A15, a conv kernel
// wider than 13, reduce_prod. Without one, only the chip-neutral rules.

// M1:       ane-lint: warning: @f: mil.sin (%s): sin runs on the ANE from A15: on M1 it runs on the GPU
// M1-NEXT:  ane-lint: warning: @f: mil.conv (%c): convolution kernel wider than 13 usually runs on the CPU/GPU, not the ANE (kernel width 15 > 13): on M1 it runs on the GPU; split the kernel into several narrower convolutions
// M1-NEXT:  ane-lint: warning: @f: mil.reduce_prod (%p): reduce_prod usually runs on the CPU/GPU, not the ANE: on M1 it runs on the CPU; reduce_sum of logs, or the product on the CPU
// M1-NEXT:  ane-lint: 1 function, 3 ops, 0 errors, 3 warnings

// M4-NOT:   mil.sin
// M4:       ane-lint: warning: @f: mil.conv (%c): convolution kernel wider than 13
// M4-NEXT:  ane-lint: warning: @f: mil.reduce_prod (%p): reduce_prod
// M4-NEXT:  ane-lint: 1 function, 3 ops, 0 errors, 2 warnings

// NEUTRAL:  ane-lint: 1 function, 3 ops, 0 errors, 0 warnings

func.func @f(%x: tensor<1x64x1x256xf16>, %v: tensor<1x4x1x64xf16>) {
  %s = mil.sin %x : tensor<1x64x1x256xf16>
  %w = mil.const weight "w" : tensor<4x4x1x15xf16>
  %c = mil.conv %v, %w : (tensor<1x4x1x64xf16>, tensor<4x4x1x15xf16>) -> tensor<1x4x1x50xf16>
  %p = mil.reduce_prod %s {axes = array<i64: 1>, keep_dims = true} : (tensor<1x64x1x256xf16>) -> tensor<1x1x1x256xf16>
  func.return
}
