// RUN: xdsl-opt %s -p mil-pack-io | filecheck %s
// RUN: xdsl-opt %s -p mil-pack-io | xdsl-opt | filecheck %s

// Inputs with 8 channels are packed along the spatial axis, the [1, 4, 1, 12]
// one through an [1, 8, 1, 6] view; outputs of spatial size 4 along the
// channels, the [1, 4, 1, 12] one through a [1, 12, 1, 4] view. The offsets
// are recorded as #ane.packing (and parse back with the module). A packed
// tensor keeps its name: an unnamed result is `output_0`, as the printers
// name it, and the returned %y is "y"; the packed result is "output".
// CHECK-LABEL: func.func @f(%input: tensor<1x8x1x10xf32>) -> tensor<1x20x1x4xf32>
// CHECK-SAME: ane.packing = #ane.packing<"f",
// CHECK-SAME: inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>, #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4, length = 6, view = [1, 8, 1, 6]>]>],
// CHECK-SAME: outputs = [#ane.buffer<shape = [1, 20, 1, 4], tensors = [#ane.packed<"output_0", result = 0, shape = [1, 8, 1, 4], axis = 1, offset = 0, length = 8>, #ane.packed<"y", result = 1, shape = [1, 4, 1, 12], axis = 1, offset = 8, length = 12, view = [1, 12, 1, 4]>]>]>,
// CHECK-SAME: ane.result_names = ["output"]
// CHECK-NEXT: %x = mil.slice_by_size %input {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 8, 1, 4>} : (tensor<1x8x1x10xf32>) -> tensor<1x8x1x4xf32>
// CHECK-NEXT: %[[Y:.*]] = mil.slice_by_size %input {begin = array<i64: 0, 0, 0, 4>, size = array<i64: 1, 8, 1, 6>} : (tensor<1x8x1x10xf32>) -> tensor<1x8x1x6xf32>
// CHECK-NEXT: %y = mil.reshape %[[Y]] {shape = array<i64: 1, 4, 1, 12>} : (tensor<1x8x1x6xf32>) -> tensor<1x4x1x12xf32>
// CHECK-NEXT: %[[R:.*]] = mil.relu %x : tensor<1x8x1x4xf32>
// CHECK-NEXT: %[[V:.*]] = mil.reshape %y {shape = array<i64: 1, 12, 1, 4>} : (tensor<1x4x1x12xf32>) -> tensor<1x12x1x4xf32>
// CHECK-NEXT: %[[C:.*]] = mil.concat %[[R]], %[[V]] {axis = 1 : i64, interleave = false} : (tensor<1x8x1x4xf32>, tensor<1x12x1x4xf32>) -> tensor<1x20x1x4xf32>
// CHECK-NEXT: func.return %[[C]] : tensor<1x20x1x4xf32>
func.func @f(%x: tensor<1x8x1x4xf32>, %y: tensor<1x4x1x12xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x4x1x12xf32>) {
  %0 = mil.relu %x : tensor<1x8x1x4xf32>
  func.return %0, %y : tensor<1x8x1x4xf32>, tensor<1x4x1x12xf32>
}

// Recorded result names name the packed tensors.
// CHECK-LABEL: func.func @g(%input: tensor<1x8x1x8xf32>) -> tensor<1x16x1x4xf32>
// CHECK-SAME: ane.result_names = ["output"], ane.packing = #ane.packing<"g",
// CHECK-SAME: #ane.packed<"logits_0", result = 0,
// CHECK-SAME: #ane.packed<"logits_1", result = 1,
func.func @g(%a: tensor<1x8x1x4xf32>, %b: tensor<1x8x1x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>) attributes {ane.result_names = ["logits_0", "logits_1"]} {
  %0 = mil.relu %a : tensor<1x8x1x4xf32>
  %1 = mil.relu %b : tensor<1x8x1x4xf32>
  func.return %0, %1 : tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>
}
