// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Shape ops: reshape (MIL iOS17: a 0 copies the dimension of x aligned from
// the right, one -1 is inferred), transpose, slice_by_size (size -1
// to the end), concat (variadic, interleave, scalars), tile, expand_dims,
// squeeze and split (variadic results); pixel_shuffle and pixel_unshuffle.

// CHECK-LABEL: func.func @reshape_transpose(
// GENERIC-LABEL: "func.func"() <{sym_name = "reshape_transpose"
func.func @reshape_transpose(%x: tensor<2x3x4xf32>, %b: tensor<2x50xi1>, %q: tensor<4x8xi8>) {
  // CHECK-NEXT: %flat = mil.reshape %x {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  // GENERIC: %flat = "mil.reshape"(%x) <{shape = array<i64: 24>}> : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %flat = mil.reshape %x {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  // CHECK-NEXT: %infer = mil.reshape %x {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // GENERIC-NEXT: %infer = "mil.reshape"(%x) <{shape = array<i64: -1, 4>}> : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %infer = mil.reshape %x {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: %keep = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3x8xf32>
  // GENERIC-NEXT: %keep = "mil.reshape"(%x) <{shape = array<i64: 0, -1>}> : (tensor<2x3x4xf32>) -> tensor<3x8xf32>
  %keep = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3x8xf32>
  // CHECK-NEXT: %keep_all = mil.reshape %x {shape = array<i64: 0, 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // GENERIC-NEXT: %keep_all = "mil.reshape"(%x) <{shape = array<i64: 0, 0, -1>}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %keep_all = mil.reshape %x {shape = array<i64: 0, 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %right_aligned = mil.reshape %b {shape = array<i64: 1, 0, -1, 0>} : (tensor<2x50xi1>) -> tensor<1x1x2x50xi1>
  // GENERIC-NEXT: %right_aligned = "mil.reshape"(%b) <{shape = array<i64: 1, 0, -1, 0>}> : (tensor<2x50xi1>) -> tensor<1x1x2x50xi1>
  %right_aligned = mil.reshape %b {shape = array<i64: 1, 0, -1, 0>} : (tensor<2x50xi1>) -> tensor<1x1x2x50xi1>
  // CHECK-NEXT: %int8 = mil.reshape %q {shape = array<i64: 1, 32>} : (tensor<4x8xi8>) -> tensor<1x32xi8>
  // GENERIC-NEXT: %int8 = "mil.reshape"(%q) <{shape = array<i64: 1, 32>}> : (tensor<4x8xi8>) -> tensor<1x32xi8>
  %int8 = mil.reshape %q {shape = array<i64: 1, 32>} : (tensor<4x8xi8>) -> tensor<1x32xi8>
  // CHECK-NEXT: %transpose = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // GENERIC-NEXT: %transpose = "mil.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %transpose = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: %negative_perm = mil.transpose %x {perm = array<i64: 0, -1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  // GENERIC-NEXT: %negative_perm = "mil.transpose"(%x) <{perm = array<i64: 0, -1, -2>}> : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %negative_perm = mil.transpose %x {perm = array<i64: 0, -1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @slice_concat_tile(
// GENERIC-LABEL: "func.func"() <{sym_name = "slice_concat_tile"
func.func @slice_concat_tile(%x: tensor<1x64x1x80xf16>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %s: tensor<i32>) {
  // CHECK-NEXT: %act = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 64, 1, 16>} : (tensor<1x64x1x80xf16>) -> tensor<1x64x1x16xf16>
  // GENERIC: %act = "mil.slice_by_size"(%x) <{begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 64, 1, 16>}> : (tensor<1x64x1x80xf16>) -> tensor<1x64x1x16xf16>
  %act = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 64, 1, 16>} : (tensor<1x64x1x80xf16>) -> tensor<1x64x1x16xf16>
  // CHECK-NEXT: %rest = mil.slice_by_size %x {begin = array<i64: 0, 8, 0, 16>, size = array<i64: -1, 8, -1, -1>} : (tensor<1x64x1x80xf16>) -> tensor<1x8x1x64xf16>
  // GENERIC-NEXT: %rest = "mil.slice_by_size"(%x) <{begin = array<i64: 0, 8, 0, 16>, size = array<i64: -1, 8, -1, -1>}> : (tensor<1x64x1x80xf16>) -> tensor<1x8x1x64xf16>
  %rest = mil.slice_by_size %x {begin = array<i64: 0, 8, 0, 16>, size = array<i64: -1, 8, -1, -1>} : (tensor<1x64x1x80xf16>) -> tensor<1x8x1x64xf16>
  // CHECK-NEXT: %concat = mil.concat %a, %b, %a {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  // GENERIC-NEXT: %concat = "mil.concat"(%a, %b, %a) <{axis = -1 : i64}> : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %concat = mil.concat %a, %b, %a {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  // CHECK-NEXT: %interleave = mil.concat %a, %a {axis = 0 : i64, interleave = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  // GENERIC-NEXT: %interleave = "mil.concat"(%a, %a) <{axis = 0 : i64, interleave = true}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %interleave = mil.concat %a, %a {axis = 0 : i64, interleave = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK-NEXT: %single = mil.concat %b {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  // GENERIC-NEXT: %single = "mil.concat"(%b) <{axis = 1 : i64}> : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %single = mil.concat %b {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  // CHECK-NEXT: %scalars = mil.concat %s, %s, %s {axis = 0 : i64} : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3xi32>
  // GENERIC-NEXT: %scalars = "mil.concat"(%s, %s, %s) <{axis = 0 : i64}> : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3xi32>
  %scalars = mil.concat %s, %s, %s {axis = 0 : i64} : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3xi32>
  // CHECK-NEXT: %tile = mil.tile %a {reps = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<4x9xf32>
  // GENERIC-NEXT: %tile = "mil.tile"(%a) <{reps = array<i64: 2, 3>}> : (tensor<2x3xf32>) -> tensor<4x9xf32>
  %tile = mil.tile %a {reps = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<4x9xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @expand_squeeze_split(
// GENERIC-LABEL: "func.func"() <{sym_name = "expand_squeeze_split"
func.func @expand_squeeze_split(%x: tensor<2x3xf32>, %y: tensor<1x4x1x6xf16>) {
  // CHECK-NEXT: %expand = mil.expand_dims %x {axes = array<i64: 0, -1>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  // GENERIC: %expand = "mil.expand_dims"(%x) <{axes = array<i64: 0, -1>}> : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  %expand = mil.expand_dims %x {axes = array<i64: 0, -1>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  // CHECK-NEXT: %expand_mid = mil.expand_dims %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  // GENERIC-NEXT: %expand_mid = "mil.expand_dims"(%x) <{axes = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  %expand_mid = mil.expand_dims %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  // CHECK-NEXT: %squeeze_all = mil.squeeze %y : (tensor<1x4x1x6xf16>) -> tensor<4x6xf16>
  // GENERIC-NEXT: %squeeze_all = "mil.squeeze"(%y) : (tensor<1x4x1x6xf16>) -> tensor<4x6xf16>
  %squeeze_all = mil.squeeze %y : (tensor<1x4x1x6xf16>) -> tensor<4x6xf16>
  // CHECK-NEXT: %squeeze_one = mil.squeeze %y {axes = array<i64: -2>} : (tensor<1x4x1x6xf16>) -> tensor<1x4x6xf16>
  // GENERIC-NEXT: %squeeze_one = "mil.squeeze"(%y) <{axes = array<i64: -2>}> : (tensor<1x4x1x6xf16>) -> tensor<1x4x6xf16>
  %squeeze_one = mil.squeeze %y {axes = array<i64: -2>} : (tensor<1x4x1x6xf16>) -> tensor<1x4x6xf16>
  // CHECK-NEXT: %squeeze_kept = mil.squeeze %y {axes = array<i64: 0, 1>} : (tensor<1x4x1x6xf16>) -> tensor<4x1x6xf16>
  // GENERIC-NEXT: %squeeze_kept = "mil.squeeze"(%y) <{axes = array<i64: 0, 1>}> : (tensor<1x4x1x6xf16>) -> tensor<4x1x6xf16>
  %squeeze_kept = mil.squeeze %y {axes = array<i64: 0, 1>} : (tensor<1x4x1x6xf16>) -> tensor<4x1x6xf16>
  // CHECK-NEXT: %even, %even_1, %even_2 = mil.split %y {axis = 3 : i64, num_splits = 3 : i64} : (tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>)
  // GENERIC-NEXT: %even, %even_1, %even_2 = "mil.split"(%y) <{axis = 3 : i64, num_splits = 3 : i64}> : (tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>)
  %even:3 = mil.split %y {axis = 3 : i64, num_splits = 3 : i64} : (tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>)
  // CHECK-NEXT: %sizes, %sizes_1 = mil.split %x {axis = -1 : i64, split_sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  // GENERIC-NEXT: %sizes, %sizes_1 = "mil.split"(%x) <{axis = -1 : i64, split_sizes = array<i64: 1, 2>}> : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  %sizes:2 = mil.split %x {axis = -1 : i64, split_sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  // CHECK-NEXT: %shuffled = mil.pixel_shuffle %y {upscale_factor = 2 : i64} : (tensor<1x4x1x6xf16>) -> tensor<1x1x2x12xf16>
  // GENERIC-NEXT: %shuffled = "mil.pixel_shuffle"(%y) <{upscale_factor = 2 : i64}> : (tensor<1x4x1x6xf16>) -> tensor<1x1x2x12xf16>
  %shuffled = mil.pixel_shuffle %y {upscale_factor = 2 : i64} : (tensor<1x4x1x6xf16>) -> tensor<1x1x2x12xf16>
  // CHECK-NEXT: %unshuffled = mil.pixel_unshuffle %shuffled {downscale_factor = 2 : i64} : (tensor<1x1x2x12xf16>) -> tensor<1x4x1x6xf16>
  // GENERIC-NEXT: %unshuffled = "mil.pixel_unshuffle"(%shuffled) <{downscale_factor = 2 : i64}> : (tensor<1x1x2x12xf16>) -> tensor<1x4x1x6xf16>
  %unshuffled = mil.pixel_unshuffle %shuffled {downscale_factor = 2 : i64} : (tensor<1x1x2x12xf16>) -> tensor<1x4x1x6xf16>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}
