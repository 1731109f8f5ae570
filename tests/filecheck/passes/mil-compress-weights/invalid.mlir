// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=lut4 group=3 min-size=16}' --verify-diagnostics | filecheck %s --check-prefix=GROUP
// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=int4 group=5 min-size=16}' --verify-diagnostics | filecheck %s --check-prefix=BLOCK
// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=lut5}' --verify-diagnostics | filecheck %s --check-prefix=MODE
// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=int8 granularity=per-grouped-channel}' --verify-diagnostics | filecheck %s --check-prefix=GRANULARITY
// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=int8 min-size=16}' --verify-diagnostics | filecheck %s --check-prefix=WEIGHTS

// Bad settings fail the pass in one line: a group that does not divide the
// output channels (lut) or a block that does not divide the input channels
// (int), an unknown mode, a granularity the mode does not have; and a
// weight const needs the weights, which plain xdsl-opt does not have.

// GROUP: mil-compress-weights: group 3 does not divide the 2 output channels of weight 'w' [2, 8, 1, 1] (per-grouped-channel)
// BLOCK: mil-compress-weights: block size 5 does not divide the 8 input channels of weight 'w' [2, 8, 1, 1] (per-block)
// MODE: mil-compress-weights: unknown compression mode 'lut5' (did you mean 'lut8' or 'lut6' or 'lut4'?) (modes: int8, int4, lut2, lut3, lut4, lut6, lut8)
// GRANULARITY: mil-compress-weights: granularity per-grouped-channel does not apply to int8 (it takes per-tensor, per-channel, per-block)
// WEIGHTS: mil-compress-weights: weight const 'layer.weight' needs its data; the pass gets the weights from xdsl-ane compile --compress or xdsl_ane.compile(compress=...)
func.func @conv(%x: tensor<1x8x1x4xf16>) -> (tensor<1x2x1x4xf16>, tensor<1x2x1x4xf16>) {
  %w = mil.const dense<0.5> : tensor<2x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<2x8x1x1xf16>) -> tensor<1x2x1x4xf16>
  %v = mil.const weight "layer.weight" : tensor<2x8x1x1xf16>
  %z = mil.conv %x, %v : (tensor<1x8x1x4xf16>, tensor<2x8x1x1xf16>) -> tensor<1x2x1x4xf16>
  func.return %y, %z : tensor<1x2x1x4xf16>, tensor<1x2x1x4xf16>
}
