"""The small program, its weight, a MIL kernel and the command lines that
the robustness tests (test_bad_input_sweep, test_interrupted_writes,
test_fuzz_regressions) start from, and the check that a failed write left
no temporary files behind.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PROGRAM = """\
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>) {
  %w = rlx.param "w" : tensor<2x3xf32>
  %0 = rlx.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = rlx.mul %0, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = rlx.reduce_sum %1 {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %1, %2 : tensor<2x3xf32>, tensor<2xf32>
}
"""
WEIGHT = np.arange(6, dtype=np.float32).reshape(2, 3)
KERNEL_MIL = """\
program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
        tensor<fp16, [1, 4, 1, 8]> y = relu(x = x)[name = string("y")];
    } -> (y);
}
"""

COMPILE = ["compile", "p.mlir", "--weights", "w.npz", "-o", "out.mlpackage"]
RUN = ["run", "p.mlir", "--weights", "w.npz"]


def replaced(old: str, new: str) -> str:
    assert old in PROGRAM
    return PROGRAM.replace(old, new)


def leftovers(directory: Path) -> list[str]:
    """Temporary files or directories a writer left behind."""
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.name.startswith(".") and p.name.endswith((".tmp", ".old"))
    )
