// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s -t mil-text | filecheck %s --check-prefix=TEXT
// RUN: xdsl-opt %s -t mil-text | xdsl-opt -f mil | filecheck %s --check-prefix=IMPORTED
// RUN: xdsl-opt %s -t mil-proto-text | filecheck %s --check-prefix=PROTO

// MIL's iOS18 state ops, slice_update and reduce_argmax. coreml_update_state
// prints as write_state (then read_state for a used result), as coremltools
// writes it, and imports back as coreml_update_state.

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %cache: !mil.state<tensor<2x4x8xf16>>
func.func @main(%cache: !mil.state<tensor<2x4x8xf16>>, %u: tensor<1x4x2xf16>, %begin: tensor<3xi32>, %end: tensor<3xi32>) -> tensor<2x4xi32> {
  // CHECK-NEXT: %old = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  %old = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  // CHECK-NEXT: %new = mil.slice_update %old, %u, %begin, %end : (tensor<2x4x8xf16>, tensor<1x4x2xf16>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x4x8xf16>
  %new = mil.slice_update %old, %u, %begin, %end : (tensor<2x4x8xf16>, tensor<1x4x2xf16>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x4x8xf16>
  // CHECK-NEXT: %stored = mil.coreml_update_state %cache, %new : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %stored = mil.coreml_update_state %cache, %new : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  // CHECK-NEXT: %token = mil.reduce_argmax %stored {axis = -1 : i64} : (tensor<2x4x8xf16>) -> tensor<2x4xi32>
  %token = mil.reduce_argmax %stored {axis = -1 : i64} : (tensor<2x4x8xf16>) -> tensor<2x4xi32>
  func.return %token : tensor<2x4xi32>
}

// TEXT: func main<ios18>(state<tensor<fp16, [2, 4, 8]>> cache, tensor<fp16, [1, 4, 2]> u, tensor<int32, [3]> begin, tensor<int32, [3]> end) {
// TEXT-NEXT: tensor<fp16, [2, 4, 8]> old = read_state(input = cache)[name = string("old")];
// TEXT-NEXT: tensor<fp16, [2, 4, 8]> new = slice_update(begin = begin, end = end, update = u, x = old)[name = string("new")];
// TEXT-NEXT: write_state(data = new, input = cache)[name = string("new_write_state")];
// TEXT-NEXT: tensor<fp16, [2, 4, 8]> stored = read_state(input = cache)[name = string("stored")];
// TEXT-NEXT: int32 token_axis = const()[name = string("token_axis"), val = int32(-1)];
// TEXT-NEXT: bool token_keep_dims = const()[name = string("token_keep_dims"), val = bool(false)];
// TEXT-NEXT: string token_output_dtype = const()[name = string("token_output_dtype"), val = string("int32")];
// TEXT-NEXT: tensor<int32, [2, 4]> token = reduce_argmax(axis = token_axis, keep_dims = token_keep_dims, output_dtype = token_output_dtype, x = stored)[name = string("token")];

// IMPORTED: func.func @main(%cache: !mil.state<tensor<2x4x8xf16>>,
// IMPORTED-NEXT: %old = mil.read_state %cache
// IMPORTED-NEXT: %new = mil.slice_update %old, %u, %begin, %end
// IMPORTED-NEXT: %{{.*}} = mil.coreml_update_state %cache, %new
// IMPORTED-NEXT: %stored = mil.read_state %cache
// IMPORTED-NEXT: %token = mil.reduce_argmax %stored {axis = -1 : i64, keep_dims = false, output_dtype = "int32"}

// PROTO: state {
// PROTO-NEXT: name: "cache"
// PROTO-NEXT: type {
// PROTO-NEXT: stateType {
// PROTO-NEXT: arrayType {
// PROTO-NEXT: shape: [2, 4, 8]
// PROTO-NEXT: dataType: FLOAT16
// PROTO: inputs {
// PROTO-NEXT: name: "cache"
// PROTO-NEXT: type {
// PROTO-NEXT: stateType {
// PROTO: type: "write_state"
// PROTO-NEXT: inputs {
// PROTO-NEXT: key: "data"
// PROTO: key: "input"
// PROTO: type: "read_state"
// PROTO: name: "stored"
