// RUN: xdsl-opt %s --allow-unregistered-dialect -p ane-lint --verify-diagnostics | filecheck %s
// RUN: xdsl-opt %s --allow-unregistered-dialect -p ane-lint --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=ALL

// Shapes must be static: a dynamic dimension or an unranked tensor (here in
// function signatures; mil ops reject them themselves) is an error, and so
// is an op whose result shape depends on its input data (MIL's non_zero,
// which the mil dialect does not define: by name in OP_RULES). A declaration's arguments have no names: `#i`.

// CHECK:      ane-lint: error: @dynamic: argument %x: dynamic shape tensor<1x8x1x?xf16>; the ANE runs static shapes only; fix the shape at compile time (one model per shape)
// CHECK-NEXT: ane-lint: 3 functions, 1 op, 5 errors, 0 warnings
// CHECK-NOT:  builtin.module

// ALL:      ane-lint: error: @dynamic: argument %x: dynamic shape tensor<1x8x1x?xf16>; the ANE runs static shapes only; fix the shape at compile time (one model per shape)
// ALL-NEXT: ane-lint: error: @external: argument #0: dynamic shape tensor<?x8xf16>; the ANE runs static shapes only; fix the shape at compile time (one model per shape)
// ALL-NEXT: ane-lint: error: @external: result #0: dynamic shape tensor<*xf16>; the ANE runs static shapes only; fix the shape at compile time (one model per shape)
// ALL-NEXT: ane-lint: error: @non_zero: mil.non_zero (%nz): the result shape depends on the input data; the ANE needs static shapes; compute it on the CPU, or use a fixed-size form with a mask
// ALL-NEXT: ane-lint: error: @non_zero: mil.non_zero (%nz): dynamic shape tensor<?x4xi32>; the ANE runs static shapes only; fix the shape at compile time (one model per shape)
// ALL-NEXT: ane-lint: 3 functions, 1 op, 5 errors, 0 warnings

func.func @dynamic(%x: tensor<1x8x1x?xf16>) -> tensor<1x8x1x?xf16> {
  func.return %x : tensor<1x8x1x?xf16>
}

func.func private @external(tensor<?x8xf16>) -> tensor<*xf16>

func.func @non_zero(%x: tensor<1x8x1x4xf16>) -> tensor<?x4xi32> {
  %nz = "mil.non_zero"(%x) : (tensor<1x8x1x4xf16>) -> tensor<?x4xi32>
  func.return %nz : tensor<?x4xi32>
}
