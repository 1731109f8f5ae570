// RUN: xdsl-opt %s -p 'ane-lint{chip=m4}' 2>&1 | filecheck %s --check-prefix=M4
// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s --check-prefix=NEUTRAL

// cumsum is not among the ANE's ops: the placement runs it on the CPU (an
// fp16 one too), so ane-lint with a chip warns of it; chip-neutral, it says
// nothing (no source lists cumsum among the ops that fall back).

// M4:       ane-lint: warning: @f: mil.cumsum (%s): cumsum usually runs on the CPU/GPU, not the ANE: on M4 it runs on the CPU; compute it before the model and pass it in (position ids), or matmul by a constant triangular matrix of ones
// M4-NEXT:  ane-lint: 1 function, 2 ops, 0 errors, 1 warning

// NEUTRAL:  ane-lint: 1 function, 2 ops, 0 errors, 0 warnings

func.func @f(%x: tensor<1x64x1x256xf16>) {
  %s = mil.cumsum %x {axis = 3 : i64} : tensor<1x64x1x256xf16>
  %r = mil.relu %s : tensor<1x64x1x256xf16>
  func.return
}
