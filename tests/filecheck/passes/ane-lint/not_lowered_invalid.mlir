// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics | filecheck %s
// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=ALL

// A program given to the lint is a mil program: an rlx op left in it was not
// lowered, and an op of another dialect is no MIL op at all. Both are
// errors; the other rules still apply to them.

// CHECK:      ane-lint: error: @mixed: rlx.relu (%r): rlx op not lowered to mil; run convert-rlx-to-mil first
// CHECK-NEXT: ane-lint: 1 function, 3 ops, 2 errors, 0 warnings
// CHECK-NOT:  builtin.module

// ALL:      ane-lint: error: @mixed: rlx.relu (%r): rlx op not lowered to mil; run convert-rlx-to-mil first
// ALL-NEXT: ane-lint: error: @mixed: arith.addf (%s): not a MIL op; Core ML cannot run it; lower it to mil ops
// ALL-NEXT: ane-lint: 1 function, 3 ops, 2 errors, 0 warnings

func.func @mixed(%x: tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xf16> {
  %r = rlx.relu %x : tensor<1x8x1x4xf16>
  %s = arith.addf %r, %r : tensor<1x8x1x4xf16>
  %y = mil.exp %s : tensor<1x8x1x4xf16>
  func.return %y : tensor<1x8x1x4xf16>
}
