// RUN: xdsl-opt %s -t mil-text | filecheck %s
// RUN: xdsl-opt %s -t mil-text | xdsl-opt -f mil -t mil-text | filecheck %s
// RUN: xdsl-opt %s -t mil-proto-text | filecheck %s --check-prefix=PROTO

// Outputs are named after the function's results (`ane.result_names`), in
// MIL text and protobuf alike: the op defining an output takes its name
// (%y is logits_0, %s is y), a returned argument and a value returned again
// are identities, an output named like an input is `NAME_output`, and `_N`
// suffixes (which name hints drop) survive, also through an import.

// CHECK:          func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
// CHECK-NEXT:         tensor<fp16, [1, 4, 1, 8]> logits_0 = relu(x = x)[name = string("logits_0")];
// CHECK-NEXT:         tensor<fp16, [1, 4, 1, 8]> y = sigmoid(x = x)[name = string("y")];
// CHECK-NEXT:         tensor<fp16, [1, 4, 1, 8]> x_output = identity(x = x)[name = string("x_output")];
// CHECK-NEXT:         tensor<fp16, [1, 4, 1, 8]> logits_1 = identity(x = logits_0)[name = string("logits_1")];
// CHECK-NEXT:     } -> (logits_0, y, x_output, logits_1);

// PROTO:      output {
// PROTO-NEXT:   name: "logits_0"
// PROTO:      output {
// PROTO-NEXT:   name: "y"
// PROTO:      output {
// PROTO-NEXT:   name: "x_output"
// PROTO:      output {
// PROTO-NEXT:   name: "logits_1"
// PROTO:      outputs: "logits_0"
// PROTO-NEXT: outputs: "y"
// PROTO-NEXT: outputs: "x_output"
// PROTO-NEXT: outputs: "logits_1"
func.func @main(%x: tensor<1x4x1x8xf16>) -> (tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>) attributes {ane.result_names = ["logits_0", "y", "x", "logits_1"]} {
  %y = mil.relu %x : tensor<1x4x1x8xf16>
  %s = mil.sigmoid %x : tensor<1x4x1x8xf16>
  func.return %y, %s, %x, %y : tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>
}
