// RUN: xdsl-opt %s -t mil-text --verify-diagnostics | filecheck %s

// Only mil ops have MIL text.

// CHECK: @f: rlx.relu is not a mil op and has no MIL text (lower it to the mil dialect first)

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = rlx.relu %x : tensor<2xf32>
  func.return %y : tensor<2xf32>
}
