// RUN: xdsl-opt %s -p mil-fp16 --verify-diagnostics | filecheck %s

// mil-fp16 converts mil programs only: an op of another dialect with an f32
// result is an error naming it (here an rlx op left unlowered).

// CHECK: mil-fp16: cannot convert rlx.relu to fp16: only mil programs are converted (result type tensor<4xf32>)
func.func @rlx_left(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
