// RUN: xdsl-opt %s | filecheck %s
// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s | xdsl-opt > %t.mlir && xdsl-ane run %t.mlir --function masked_softmax --random 0 | filecheck %s --check-prefix=NUMBERS

// Non-finite float constants keep their bits through IR text: a hex element
// of a float dense literal is its bit pattern (MLIR's rule), printed back the
// same, for f32, f16, bf16 and f64, splat or not, NaN payloads included.

// CHECK-LABEL: func.func @constants(
func.func @constants() {
  // CHECK-NEXT: %ninf = rlx.constant dense<0xff800000> : tensor<f32>
  %ninf = rlx.constant dense<0xff800000> : tensor<f32>
  // CHECK-NEXT: %mixed = rlx.constant dense<[[1.000000e+00, 0xff800000], [0x7f800000, 0x7fc00001]]> : tensor<2x2xf32>
  %mixed = rlx.constant dense<[[1.0, 0xff800000], [0x7f800000, 0x7fc00001]]> : tensor<2x2xf32>
  // A finite f32 that xDSL prints in hex (no exact 9-digit decimal).
  // CHECK-NEXT: %big = rlx.constant dense<[0x4CEB79A3, -0.000000e+00]> : tensor<2xf32>
  %big = rlx.constant dense<[123456792.0, -0.0]> : tensor<2xf32>
  // CHECK-NEXT: %half = rlx.constant dense<[0xfc00, 1.000000e+00, 0x7e01, 0xfe00]> : tensor<4xf16>
  %half = rlx.constant dense<[0xfc00, 1.0, 0x7e01, 0xfe00]> : tensor<4xf16>
  // CHECK-NEXT: %mil = mil.const dense<0x7c00> : tensor<1x4xf16>
  %mil = mil.const dense<0x7c00> : tensor<1x4xf16>
  // CHECK-NEXT: %bf = arith.constant dense<[0xff80, 1.500000e+00, 0x7fc1]> : tensor<3xbf16>
  %bf = arith.constant dense<[0xff80, 1.5, 0x7fc1]> : tensor<3xbf16>
  // CHECK-NEXT: %f64 = arith.constant dense<[0xfff0000000000000, 0x7ff8000000000001]> : tensor<2xf64>
  %f64 = arith.constant dense<[0xfff0000000000000, 0x7ff8000000000001]> : tensor<2xf64>
  func.return
}

// An f32 property (FloatAttr): xDSL reads its hex form as bits already.
// CHECK-LABEL: func.func @properties(
func.func @properties(%x: tensor<1x4x8xf32>, %g: tensor<8xf32>) {
  // CHECK-NEXT: %y = rlx.rms_norm %x, %g {eps = 0x7f800000 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %y = rlx.rms_norm %x, %g {eps = 0x7f800000 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  func.return
}

// By numbers: one unmasked element a row, so softmax is one-hot (read as
// 4.3e9, the -inf would win its row instead and no element would be 1).
// NUMBERS: out0: [2, 3] float32 mean=0.333333 std=0.471405 min=0 max=1
// CHECK-LABEL: func.func @masked_softmax(
func.func @masked_softmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NEXT: %m = rlx.constant dense<[[0xff800000, 0.000000e+00, 0xff800000], [0.000000e+00, 0xff800000, 0xff800000]]> : tensor<2x3xf32>
  %m = rlx.constant dense<[[0xff800000, 0.0, 0xff800000], [0.0, 0xff800000, 0xff800000]]> : tensor<2x3xf32>
  %0 = rlx.add %x, %m : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = rlx.softmax %0 {axis = 1 : i64} : tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
