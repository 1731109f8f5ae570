// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics | filecheck %s
// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=ALL

// Rank above 5 is an error: Core ML does not support it. The pass fails
// with the first error and the counts; every finding goes to stderr.

// CHECK:      ane-lint: error: @rank6: mil.reshape (%0): rank 6 tensor<1x2x2x2x2x16xf16>; Core ML supports rank ≤ 5; reshape to rank 4 ([1, C, 1, S])
// CHECK-NEXT: ane-lint: 1 function, 2 ops, 1 error, 0 warnings
// CHECK-NOT:  builtin.module

// ALL:      ane-lint: error: @rank6: mil.reshape (%0): rank 6
// ALL-NEXT: ane-lint: 1 function, 2 ops, 1 error, 0 warnings

func.func @rank6(%x: tensor<1x16x1x16xf16>) -> tensor<1x16x1x16xf16> {
  %0 = mil.reshape %x {shape = array<i64: 1, 2, 2, 2, 2, 16>} : (tensor<1x16x1x16xf16>) -> tensor<1x2x2x2x2x16xf16>
  %y = mil.reshape %0 {shape = array<i64: 1, 16, 1, 16>} : (tensor<1x2x2x2x2x16xf16>) -> tensor<1x16x1x16xf16>
  func.return %y : tensor<1x16x1x16xf16>
}
