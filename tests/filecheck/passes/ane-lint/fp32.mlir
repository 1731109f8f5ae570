// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s
// RUN: xdsl-opt %s -p 'ane-lint{strict=true}' --verify-diagnostics | filecheck %s --check-prefix=STRICT

// fp32 I/O and fp32 compute are warnings: the ANE computes in fp16, Core ML
// inserts casts or runs fp32 work elsewhere. Each fp32 argument and result
// is reported; fp32 compute once per function, on its first fp32 op, with
// the count (consts counted apart). Under strict=true the warnings fail the
// pass with the first one and the counts.

// CHECK:       ane-lint: warning: @io: argument %x: fp32 input tensor<1x64x1x256xf32>; the ANE computes in fp16, so Core ML casts it or runs the program elsewhere; run mil-fp16 for fp16 compute and I/O
// CHECK-NEXT:  ane-lint: warning: @io: result #0: fp32 output tensor<1x64x1x256xf32>; the ANE computes in fp16, so Core ML casts it or runs the program elsewhere; run mil-fp16 for fp16 compute and I/O
// CHECK-NEXT:  ane-lint: warning: @io: mil.relu (%r): fp32 compute: 2 of 2 ops and 1 const produce fp32 tensors (this is the first); the ANE computes in fp16, so Core ML casts or runs fp32 work on the CPU/GPU; run mil-fp16 for fp16 compute and I/O
// CHECK-NEXT:  ane-lint: warning: @inner: mil.cast (%wide): fp32 compute: 2 of 3 ops produce fp32 tensors (this is the first); the ANE computes in fp16, so Core ML casts or runs fp32 work on the CPU/GPU; run mil-fp16 for fp16 compute and I/O
// CHECK-NEXT:  ane-lint: 2 functions, 5 ops, 0 errors, 4 warnings

// The module is printed unchanged.
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @io(%x: tensor<1x64x1x256xf32>) -> tensor<1x64x1x256xf32> {
// CHECK-NEXT:      %bias = mil.const dense<5.000000e-01> : tensor<1x64x1x1xf32>
// CHECK-NEXT:      %r = mil.relu %x : tensor<1x64x1x256xf32>
// CHECK-NEXT:      %y = mil.add %r, %bias : (tensor<1x64x1x256xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x1x256xf32>
// CHECK-NEXT:      func.return %y : tensor<1x64x1x256xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @inner(%x: tensor<1x64x1x256xf16>) -> tensor<1x64x1x256xf16> {
// CHECK-NEXT:      %wide = mil.cast %x {dtype = "fp32"} : (tensor<1x64x1x256xf16>) -> tensor<1x64x1x256xf32>
// CHECK-NEXT:      %e = mil.exp %wide : tensor<1x64x1x256xf32>
// CHECK-NEXT:      %y = mil.cast %e {dtype = "fp16"} : (tensor<1x64x1x256xf32>) -> tensor<1x64x1x256xf16>
// CHECK-NEXT:      func.return %y : tensor<1x64x1x256xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// STRICT:      ane-lint: warning: @io: argument %x: fp32 input tensor<1x64x1x256xf32>; the ANE computes in fp16, so Core ML casts it or runs the program elsewhere; run mil-fp16 for fp16 compute and I/O
// STRICT-NEXT: ane-lint: 2 functions, 5 ops, 0 errors, 4 warnings
// STRICT-NOT:  builtin.module

func.func @io(%x: tensor<1x64x1x256xf32>) -> tensor<1x64x1x256xf32> {
  %bias = mil.const dense<0.5> : tensor<1x64x1x1xf32>
  %r = mil.relu %x : tensor<1x64x1x256xf32>
  %y = mil.add %r, %bias : (tensor<1x64x1x256xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x1x256xf32>
  func.return %y : tensor<1x64x1x256xf32>
}

func.func @inner(%x: tensor<1x64x1x256xf16>) -> tensor<1x64x1x256xf16> {
  %wide = mil.cast %x {dtype = "fp32"} : (tensor<1x64x1x256xf16>) -> tensor<1x64x1x256xf32>
  %e = mil.exp %wide : tensor<1x64x1x256xf32>
  %y = mil.cast %e {dtype = "fp16"} : (tensor<1x64x1x256xf32>) -> tensor<1x64x1x256xf16>
  func.return %y : tensor<1x64x1x256xf16>
}
