// RUN: xdsl-opt %s -t mil-proto-text | filecheck %s

// Several functions make one multifunction model (iOS18): each function is
// described on its own, the first is the default, and consts of the same
// weight seen the same way share one blob record across functions.

func.func @forward(%x: tensor<1x8x1x4xf16>) -> tensor<1x16x1x4xf16> {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  func.return %y : tensor<1x16x1x4xf16>
}

func.func @backward(%dy: tensor<1x16x1x4xf16>) -> tensor<1x8x1x4xf16> {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %wt = mil.transpose %w {perm = array<i64: 1, 0, 2, 3>} : (tensor<16x8x1x1xf16>) -> tensor<8x16x1x1xf16>
  %dx = mil.conv %dy, %wt : (tensor<1x16x1x4xf16>, tensor<8x16x1x1xf16>) -> tensor<1x8x1x4xf16>
  func.return %dx : tensor<1x8x1x4xf16>
}

// CHECK:      specificationVersion: 9
// CHECK-NEXT: description {
// CHECK-NEXT:   functions {
// CHECK-NEXT:     name: "forward"
// CHECK:        functions {
// CHECK-NEXT:     name: "backward"
// CHECK-NEXT:     input {
// CHECK-NEXT:       name: "dy"
// CHECK:          output {
// CHECK-NEXT:       name: "dx"
// CHECK:        defaultFunctionName: "forward"

// CHECK:      functions {
// CHECK-NEXT:   key: "backward"
// CHECK:        name: "w"
// CHECK:        blobFileValue {
// CHECK-NEXT:     fileName: "@model_path/weights/weight.bin"
// CHECK-NEXT:     offset: 64
// CHECK:        type: "transpose"
// CHECK:      functions {
// CHECK-NEXT:   key: "forward"
// CHECK:        name: "w"
// CHECK:        blobFileValue {
// CHECK-NEXT:     fileName: "@model_path/weights/weight.bin"
// CHECK-NEXT:     offset: 64
