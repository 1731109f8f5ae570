// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics | filecheck %s

// More than 2 GiB of weights in one function (the macOS limit per program)
// is an error: 16384 x 16384 x 8 fp16 = 4 GiB in one weight const, counted
// by its declared type (inline consts count the same way).

// CHECK:      ane-lint: error: @huge: 4.00 GiB of weights in 2 consts, above 2 GiB, the limit per program on macOS; split the function into several programs or quantize the weights
// CHECK-NEXT: ane-lint: 1 function, 0 ops, 1 error, 0 warnings
// CHECK-NOT:  builtin.module

func.func @huge() -> (tensor<16384x16384x8xf16>, tensor<4xf16>) {
  %w = mil.const weight "w" : tensor<16384x16384x8xf16>
  %c = mil.const dense<1.0> : tensor<4xf16>
  func.return %w, %c : tensor<16384x16384x8xf16>, tensor<4xf16>
}
