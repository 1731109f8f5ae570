// RUN: xdsl-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Hex elements of a float dense literal are bit patterns: MLIR's errors for
// a leading minus and for more bits than the type has.

// CHECK: hexadecimal float literal should not have a leading minus
%0 = rlx.constant dense<-0xff800000> : tensor<f32>

// -----

// CHECK: Hexadecimal float constant out of range for type
%0 = rlx.constant dense<[1.0, 0x1ff800000]> : tensor<2xf32>

// -----

// CHECK: Hexadecimal float constant out of range for type
%0 = rlx.constant dense<[0x7c00, 0x10000]> : tensor<2xf16>
