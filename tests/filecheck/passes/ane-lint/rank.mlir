// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s

// Rank 5 is a warning (Core ML supports it, the ANE prefers rank 4); every
// argument and op result of rank 5 is reported. Rank 4 and below are fine.

// CHECK:       ane-lint: warning: @rank5: argument %x: rank 5 tensor<1x2x8x1x16xf16>; the ANE prefers rank ≤ 4; reshape to rank 4 ([1, C, 1, S])
// CHECK-NEXT:  ane-lint: warning: @rank5: mil.relu (%r): rank 5 tensor<1x2x8x1x16xf16>; the ANE prefers rank ≤ 4; reshape to rank 4 ([1, C, 1, S])
// CHECK-NEXT:  ane-lint: 1 function, 2 ops, 0 errors, 2 warnings
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @rank5(%x: tensor<1x2x8x1x16xf16>) -> tensor<1x16x1x16xf16> {
// CHECK-NEXT:      %r = mil.relu %x : tensor<1x2x8x1x16xf16>
// CHECK-NEXT:      %y = mil.reshape %r {shape = array<i64: 1, 16, 1, 16>} : (tensor<1x2x8x1x16xf16>) -> tensor<1x16x1x16xf16>
// CHECK-NEXT:      func.return %y : tensor<1x16x1x16xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

func.func @rank5(%x: tensor<1x2x8x1x16xf16>) -> tensor<1x16x1x16xf16> {
  %r = mil.relu %x : tensor<1x2x8x1x16xf16>
  %y = mil.reshape %r {shape = array<i64: 1, 16, 1, 16>} : (tensor<1x2x8x1x16xf16>) -> tensor<1x16x1x16xf16>
  func.return %y : tensor<1x16x1x16xf16>
}
