// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s

// A dimension above 16384 is a warning (the limit of M1/M2-class ANEs;
// newer ones take 65536), with a split suggestion; an embedding lookup
// (gather) needs its table's size on the lookup axis to be at most 32768,
// and gather itself usually falls back. Exactly 16384 is fine.

// CHECK:       ane-lint: warning: @wide: argument %x: tensor<1x32768x1x16xf16>: axis 1 has size 32768, above 16384, the limit of M1/M2-class ANEs (65536 on newer ones); split axis 1 into 2 chunks of ≤ 16384
// CHECK-NEXT:  ane-lint: warning: @wide: mil.relu (%0): tensor<1x32768x1x16xf16>: axis 1 has size 32768, above 16384, the limit of M1/M2-class ANEs (65536 on newer ones); split axis 1 into 2 chunks of ≤ 16384
// CHECK-NEXT:  ane-lint: warning: @embedding: mil.const (%table): tensor<40000x64xf16>: axis 0 has size 40000, above 16384, the limit of M1/M2-class ANEs (65536 on newer ones); split axis 0 into 3 chunks of ≤ 16384
// CHECK-NEXT:  ane-lint: warning: @embedding: mil.gather (%e): gather usually runs on the CPU/GPU, not the ANE; look embeddings up on the CPU and pass them in, or multiply a one_hot by the table
// CHECK-NEXT:  ane-lint: warning: @embedding: mil.gather (%e): the gathered table has 40000 entries on the lookup axis 0, above the ANE's 32768; split the table into 2 chunks of ≤ 32768
// CHECK-NEXT:  ane-lint: 2 functions, 3 ops, 0 errors, 5 warnings
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @wide(%x: tensor<1x32768x1x16xf16>, %ok: tensor<1x16384x1x16xf16>) -> (tensor<1x32768x1x16xf16>, tensor<1x16384x1x16xf16>) {
// CHECK-NEXT:      %0 = mil.relu %x : tensor<1x32768x1x16xf16>
// CHECK-NEXT:      %1 = mil.relu %ok : tensor<1x16384x1x16xf16>
// CHECK-NEXT:      func.return %0, %1 : tensor<1x32768x1x16xf16>, tensor<1x16384x1x16xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @embedding(%ids: tensor<1x8xi32>) -> tensor<1x8x64xf16> {
// CHECK-NEXT:      %table = mil.const weight "embed_tokens.weight" : tensor<40000x64xf16>
// CHECK-NEXT:      %e = mil.gather %table, %ids : (tensor<40000x64xf16>, tensor<1x8xi32>) -> tensor<1x8x64xf16>
// CHECK-NEXT:      func.return %e : tensor<1x8x64xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

func.func @wide(%x: tensor<1x32768x1x16xf16>, %ok: tensor<1x16384x1x16xf16>) -> (tensor<1x32768x1x16xf16>, tensor<1x16384x1x16xf16>) {
  %0 = mil.relu %x : tensor<1x32768x1x16xf16>
  %1 = mil.relu %ok : tensor<1x16384x1x16xf16>
  func.return %0, %1 : tensor<1x32768x1x16xf16>, tensor<1x16384x1x16xf16>
}

func.func @embedding(%ids: tensor<1x8xi32>) -> tensor<1x8x64xf16> {
  %table = mil.const weight "embed_tokens.weight" : tensor<40000x64xf16>
  %e = mil.gather %table, %ids : (tensor<40000x64xf16>, tensor<1x8xi32>) -> tensor<1x8x64xf16>
  func.return %e : tensor<1x8x64xf16>
}
