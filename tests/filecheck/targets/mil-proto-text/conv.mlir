// RUN: xdsl-opt %s -t mil-proto-text | filecheck %s

// A 1x1 conv against a weight, the ANE's linear layer, as a Core ML model:
// the description from the signature, then the MIL function. The weight
// const refers to the blob by the offset of its metadata record (64 for the
// first tensor); xdsl-opt has no weights, so the offset is planned and no
// data is needed. Every conv input MIL has a default for is written out as a
// const named {op}_{input}_0 just before the op, as coremltools writes them,
// and the op binds its inputs by name.

func.func @linear(%x: tensor<1x8x1x4xf16>) -> tensor<1x16x1x4xf16> {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  func.return %y : tensor<1x16x1x4xf16>
}

// CHECK:      specificationVersion: 9
// CHECK-NEXT: description {
// CHECK-NEXT:   input {
// CHECK-NEXT:     name: "x"
// CHECK-NEXT:     type {
// CHECK-NEXT:       multiArrayType {
// CHECK-NEXT:         shape: [1, 8, 1, 4]
// CHECK-NEXT:         dataType: FLOAT16
// CHECK:        output {
// CHECK-NEXT:     name: "y"
// CHECK-NEXT:     type {
// CHECK-NEXT:       multiArrayType {
// CHECK-NEXT:         shape: [1, 16, 1, 4]
// CHECK-NEXT:         dataType: FLOAT16
// CHECK:      mlProgram {
// CHECK-NEXT:   version: 1
// CHECK-NEXT:   functions {
// CHECK-NEXT:     key: "main"
// CHECK:            name: "x"
// CHECK:          opset: "CoreML8"
// CHECK-NEXT:     block_specializations {
// CHECK-NEXT:       key: "CoreML8"
// CHECK-NEXT:       value {
// CHECK-NEXT:         outputs: "y"

// The weight: a BlobFileValue of the const's type.
// CHECK:              type: "const"
// CHECK-NEXT:         outputs {
// CHECK-NEXT:           name: "w"
// CHECK:                key: "val"
// CHECK-NEXT:           value {
// CHECK-NEXT:             type {
// CHECK-NEXT:               tensorType {
// CHECK-NEXT:                 dataType: FLOAT16
// CHECK-NEXT:                 rank: 4
// CHECK:                  blobFileValue {
// CHECK-NEXT:               fileName: "@model_path/weights/weight.bin"
// CHECK-NEXT:               offset: 64

// MIL's defaults, as int32 and string immediates.
// CHECK:                name: "y_strides_0"
// CHECK:                    ints {
// CHECK-NEXT:                 values: [1, 1]
// CHECK:                name: "y_pad_type_0"
// CHECK:                      values: "valid"
// CHECK:                name: "y_pad_0"
// CHECK:                    ints {
// CHECK-NEXT:                 values: [0, 0, 0, 0]
// CHECK:                name: "y_dilations_0"
// CHECK:                    ints {
// CHECK-NEXT:                 values: [1, 1]
// CHECK:                name: "y_groups_0"
// CHECK:                    ints {
// CHECK-NEXT:                 values: [1]

// The conv binds every input by name (maps print sorted by key).
// CHECK:              type: "conv"
// CHECK-NEXT:         inputs {
// CHECK-NEXT:           key: "dilations"
// CHECK-NEXT:           value {
// CHECK-NEXT:             arguments {
// CHECK-NEXT:               name: "y_dilations_0"
// CHECK:                key: "groups"
// CHECK:                key: "pad"
// CHECK:                key: "pad_type"
// CHECK:                key: "strides"
// CHECK:                key: "weight"
// CHECK-NEXT:           value {
// CHECK-NEXT:             arguments {
// CHECK-NEXT:               name: "w"
// CHECK:                key: "x"
// CHECK-NEXT:           value {
// CHECK-NEXT:             arguments {
// CHECK-NEXT:               name: "x"
// CHECK:              outputs {
// CHECK-NEXT:           name: "y"
// CHECK:                key: "name"
// CHECK:                      values: "y"
// CHECK-NOT:          operations {
