// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// batch_norm and instance_norm: const [C] parameters, optional gamma and beta
// written with their MIL names.

// CHECK-LABEL: func.func @norms(
// GENERIC-LABEL: "func.func"() <{sym_name = "norms"
func.func @norms(%x: tensor<1x4x5x5xf32>) {
  %c = mil.const dense<1.0> : tensor<4xf32>
  %h = mil.const dense<1.0> : tensor<4xf16>
  // CHECK: %b = mil.batch_norm %x, %c, %c, gamma %c, beta %c {epsilon = 1.000000e-03 : f32} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  // GENERIC: %b = "mil.batch_norm"(%x, %c, %c, %c, %c) <{epsilon = 1.000000e-03 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %b = mil.batch_norm %x, %c, %c, gamma %c, beta %c {epsilon = 1.0e-03 : f32} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  // iOS17: the parameters may be fp16 beside fp32 data.
  // CHECK-NEXT: %i = mil.instance_norm %x, beta %h : (tensor<1x4x5x5xf32>, tensor<4xf16>) -> tensor<1x4x5x5xf32>
  %i = mil.instance_norm %x, beta %h : (tensor<1x4x5x5xf32>, tensor<4xf16>) -> tensor<1x4x5x5xf32>
  func.return
}
