// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX
// RUN: xdsl-opt %s -p ane-pipeline | filecheck %s --check-prefix=ANE

// convert-rlx-to-mil, state family (passes/rlx_to_mil/state.py): states
// become !mil.state, the write a coreml_update_state whose result is unused,
// slice_update gets end = begin + shape(update); the argmax that ends the
// kernel (reduction family, passes/rlx_to_mil/reduction.py) is reduce_argmax.

// NO-RLX-NOT: rlx.

// CHECK-LABEL: func.func @cache_step(
// CHECK-SAME: %cache: !mil.state<tensor<1x16x8xf32>>
// CHECK-NEXT: %old = mil.read_state %cache : (!mil.state<tensor<1x16x8xf32>>) -> tensor<1x16x8xf32>
// CHECK-NEXT: [[SIZE:%.+]] = mil.const dense<[1, 1, 8]> : tensor<3xi32>
// CHECK-NEXT: [[END:%.+]] = mil.add %begin, [[SIZE]] : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
// CHECK-NEXT: %new = mil.slice_update %old, %u, %begin, [[END]] : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x16x8xf32>
// CHECK-NEXT: %{{.*}} = mil.coreml_update_state %cache, %new : (!mil.state<tensor<1x16x8xf32>>, tensor<1x16x8xf32>) -> tensor<1x16x8xf32>
// CHECK-NEXT: %token = mil.reduce_argmax %new {axis = -1 : i64} : (tensor<1x16x8xf32>) -> tensor<1x16xi32>

// ane-pipeline: the state keeps its shape (`#ane.layout<state, ...>`) and becomes fp16;
// the store survives layout, canonicalization and CSE.
// ANE-LABEL: func.func @cache_step(
// ANE-SAME: %cache: !mil.state<tensor<1x16x8xf16>>
// ANE-SAME: ane.arg_layouts = [#ane.layout<state, logical = [1, 16, 8], ane = [1, 16, 8]>,
// ANE: mil.read_state %cache : (!mil.state<tensor<1x16x8xf16>>) -> tensor<1x16x8xf16>
// ANE: mil.slice_update
// ANE: mil.coreml_update_state %cache
// ANE: mil.reduce_argmax
func.func @cache_step(%cache: !rlx.state<tensor<1x16x8xf32>>, %u: tensor<1x1x8xf32>, %begin: tensor<3xi32>) -> tensor<1x16xi32> {
  %old = rlx.read_state %cache : (!rlx.state<tensor<1x16x8xf32>>) -> tensor<1x16x8xf32>
  %new = rlx.slice_update %old, %u, %begin : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<3xi32>) -> tensor<1x16x8xf32>
  rlx.write_state %cache, %new : !rlx.state<tensor<1x16x8xf32>>, tensor<1x16x8xf32>
  %token = rlx.argmax %new {axis = -1 : i64} : (tensor<1x16x8xf32>) -> tensor<1x16xi32>
  func.return %token : tensor<1x16xi32>
}
