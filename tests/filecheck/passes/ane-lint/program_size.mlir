// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s
// RUN: xdsl-opt %s -p 'ane-lint{strict=true}' --verify-diagnostics | filecheck %s --check-prefix=STRICT

// More than 1 GiB of weights in one function (the iOS limit per program)
// is a warning. Weights are the consts' declared sizes, so weight consts
// need no data here: 16384 x 16384 x 3 fp16 is 1.5 GiB. (The op-count
// rule, > 18000 ops, is tested in tests/test_ane_lint.py: such programs are
// slow to parse.)

// CHECK:       ane-lint: warning: @big: 1.50 GiB of weights in 2 consts, above 1 GiB, the limit per program on iOS (2 GiB on macOS); split the function into several programs or quantize the weights
// CHECK-NEXT:  ane-lint: 1 function, 1 op, 0 errors, 1 warning
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @big() -> tensor<16384x16384x3xf16> {
// CHECK-NEXT:      %a = mil.const weight "a" : tensor<16384x16384x3xf16>
// CHECK-NEXT:      %b = mil.const dense<1.000000e+00> : tensor<1xf16>
// CHECK-NEXT:      %y = mil.add %a, %b : (tensor<16384x16384x3xf16>, tensor<1xf16>) -> tensor<16384x16384x3xf16>
// CHECK-NEXT:      func.return %y : tensor<16384x16384x3xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// STRICT:      ane-lint: warning: @big: 1.50 GiB of weights in 2 consts
// STRICT-NEXT: ane-lint: 1 function, 1 op, 0 errors, 1 warning
// STRICT-NOT:  builtin.module

func.func @big() -> tensor<16384x16384x3xf16> {
  %a = mil.const weight "a" : tensor<16384x16384x3xf16>
  %b = mil.const dense<1.0> : tensor<1xf16>
  %y = mil.add %a, %b : (tensor<16384x16384x3xf16>, tensor<1xf16>) -> tensor<16384x16384x3xf16>
  func.return %y : tensor<16384x16384x3xf16>
}
