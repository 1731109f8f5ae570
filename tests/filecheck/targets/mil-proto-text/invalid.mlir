// RUN: xdsl-opt %s -t mil-proto-text --verify-diagnostics --split-input-file | filecheck %s

// What cannot be printed as a Core ML model, one line naming the function
// and the op.

// CHECK: @not_lowered: rlx.relu is not a mil op and has no MIL protobuf (lower it to the mil dialect first)
func.func @not_lowered(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Several functions make a multifunction model, which Core ML has from iOS18.
// IOS17: a multifunction model (2 functions) needs deployment target iOS18, not iOS17
// RUN: xdsl-opt %s -t "mil-proto-text{target=iOS17}" --verify-diagnostics --split-input-file | filecheck %s --check-prefix=IOS17
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mil.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
func.func @backward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mil.sigmoid %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
