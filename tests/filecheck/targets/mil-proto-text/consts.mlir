// RUN: xdsl-opt %s -t mil-proto-text | filecheck %s
// RUN: xdsl-opt %s -t "mil-proto-text{target=iOS17}" | filecheck %s --check-prefix=IOS17

// How const values are written, as coremltools writes them: fewer than 10
// elements inline (fp16 as little-endian bytes, fp32 as floats, int32 as
// ints, bool as bools), at least 10 in the blob (fp16, fp32, int8, and int32
// from iOS18 on). A weight const too small for the blob has no data without
// weights: its value carries the type and a docString naming the weight.
// The bool model input has no Core ML multiarray type, so it is declared
// fp32 and cast to bool before the first op (coremltools'
// adjust_io_to_supported_types).

func.func @consts(%x: tensor<4xf16>, %y: tensor<4xf32>, %i: tensor<10xi32>, %c: tensor<4xi1>) -> (tensor<4xf16>, tensor<4xf32>, tensor<10xi32>, tensor<16xf16>) {
  %h = mil.const dense<[1.0, -2.0, 0.5, 2.0]> : tensor<4xf16>
  %f = mil.const dense<[1.0, 2.5, 3.0, 4.0]> : tensor<4xf32>
  %n = mil.const dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi32>
  %m = mil.const dense<[true, false, true, true]> : tensor<4xi1>
  %big = mil.const dense<0.5> : tensor<16xf16>
  %gain = mil.const weight "gain" : tensor<4xf16>
  %a = mil.mul %x, %h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %b = mil.mul %a, %gain : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %s = mil.select %c, %y, %f : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = mil.select %m, %s, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = mil.add %i, %n : (tensor<10xi32>, tensor<10xi32>) -> tensor<10xi32>
  %e = mil.relu %big : tensor<16xf16>
  func.return %b, %t, %d, %e : tensor<4xf16>, tensor<4xf32>, tensor<10xi32>, tensor<16xf16>
}

// IOS17: specificationVersion: 8
// IOS17: opset: "CoreML7"

// CHECK:      name: "c"
// CHECK-NEXT: type {
// CHECK-NEXT:   multiArrayType {
// CHECK-NEXT:     shape: [4]
// CHECK-NEXT:     dataType: FLOAT32

// CHECK:      name: "cast_0_dtype_0"
// CHECK:              values: "bool"
// CHECK:      type: "cast"
// CHECK:      outputs {
// CHECK-NEXT:   name: "cast_0"

// CHECK:      name: "h"
// CHECK:      key: "val"
// CHECK:      immediateValue {
// CHECK-NEXT:   tensor {
// CHECK-NEXT:     bytes {
// CHECK-NEXT:       values: "\000<\000\300\0008\000@"

// CHECK:      name: "f"
// CHECK:      key: "val"
// CHECK:      immediateValue {
// CHECK-NEXT:   tensor {
// CHECK-NEXT:     floats {
// CHECK-NEXT:       values: [1.0, 2.5, 3.0, 4.0]

// CHECK:      name: "n"
// CHECK:      blobFileValue {
// CHECK-NEXT:   fileName: "@model_path/weights/weight.bin"
// CHECK-NEXT:   offset: 64
// IOS17:      name: "n"
// IOS17:      key: "val"
// IOS17:      immediateValue {
// IOS17-NEXT:   tensor {
// IOS17-NEXT:     ints {
// IOS17-NEXT:       values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]

// CHECK:      name: "m"
// CHECK:      key: "val"
// CHECK:      immediateValue {
// CHECK-NEXT:   tensor {
// CHECK-NEXT:     bools {
// CHECK-NEXT:       values: [true, false, true, true]

// The next blob record starts after n's 64-byte metadata and 40 data bytes,
// on a 64-byte boundary.
// CHECK:      name: "big"
// CHECK:      blobFileValue {
// CHECK-NEXT:   fileName: "@model_path/weights/weight.bin"
// CHECK-NEXT:   offset: 192
// IOS17:      name: "big"
// IOS17:      blobFileValue {
// IOS17-NEXT:   fileName: "@model_path/weights/weight.bin"
// IOS17-NEXT:   offset: 64

// CHECK:      name: "gain"
// CHECK:      key: "val"
// CHECK-NEXT: value {
// CHECK-NEXT:   docString: "data of weight gain (printed without weights)"
// CHECK-NEXT:   type {
// CHECK-NEXT:     tensorType {
// CHECK-NEXT:       dataType: FLOAT16
// CHECK-NEXT:       rank: 1

// The select reads the cast input.
// CHECK:      type: "select"
// CHECK-NEXT: inputs {
// CHECK-NEXT:   key: "a"
// CHECK:        key: "cond"
// CHECK-NEXT:   value {
// CHECK-NEXT:     arguments {
// CHECK-NEXT:       name: "cast_0"
