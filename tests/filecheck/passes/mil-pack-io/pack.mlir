// RUN: xdsl-opt %s -p mil-pack-io | filecheck %s
// RUN: xdsl-opt %s -p mil-pack-io | xdsl-opt | filecheck %s

// Inputs with 8 channels are packed along the spatial axis, the [1, 4, 1, 12]
// one through an [1, 8, 1, 6] view; outputs of spatial size 4 along the
// channels, the [1, 4, 1, 12] one through a [1, 12, 1, 4] view. The offsets
// are recorded as #ane.packing (and parse back with the module).
// CHECK-LABEL: func.func @f(%input: tensor<1x8x1x10xf32>) -> tensor<1x20x1x4xf32>
// CHECK-SAME: ane.packing = #ane.packing<"f",
// CHECK-SAME: inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>, #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4, length = 6, view = [1, 8, 1, 6]>]>],
// CHECK-SAME: outputs = [#ane.buffer<shape = [1, 20, 1, 4], tensors = [#ane.packed<"out0", result = 0, shape = [1, 8, 1, 4], axis = 1, offset = 0, length = 8>, #ane.packed<"out1", result = 1, shape = [1, 4, 1, 12], axis = 1, offset = 8, length = 12, view = [1, 12, 1, 4]>]>]>
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
