// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s

// The ane dialect's records of a function's boundary, as mil-ane-layout
// and mil-pack-io leave them: each prints as it is written and parses back.

// Layouts of each kind: a logical shape and its [1, C, 1, S] form; a state
// keeps its own shape.
// CHECK-LABEL: func.func @layouts(
// CHECK-SAME: ane.arg_layouts = [#ane.layout<scalar, logical = [], ane = [1, 1, 1, 1]>, #ane.layout<c, logical = [8], ane = [1, 8, 1, 1]>, #ane.layout<sc, logical = [4, 8], ane = [1, 8, 1, 4]>, #ane.layout<bsc, logical = [1, 4, 8], ane = [1, 8, 1, 4]>, #ane.layout<state, logical = [16, 8], ane = [16, 8]>]
// CHECK-SAME: ane.result_layouts = [#ane.layout<bhsd, logical = [1, 2, 4, 4], ane = [1, 8, 1, 4]>, #ane.layout<ane, logical = [1, 8, 1, 4], ane = [1, 8, 1, 4]>]
func.func @layouts() attributes {
  ane.arg_layouts = [
    #ane.layout<scalar, logical = [], ane = [1, 1, 1, 1]>,
    #ane.layout<c, logical = [8], ane = [1, 8, 1, 1]>,
    #ane.layout<sc, logical = [4, 8], ane = [1, 8, 1, 4]>,
    #ane.layout<bsc, logical = [1, 4, 8], ane = [1, 8, 1, 4]>,
    #ane.layout<state, logical = [16, 8], ane = [16, 8]>],
  ane.result_layouts = [
    #ane.layout<bhsd, logical = [1, 2, 4, 4], ane = [1, 8, 1, 4]>,
    #ane.layout<ane, logical = [1, 8, 1, 4], ane = [1, 8, 1, 4]>]} {
  func.return
}

// Dynamic weights: the weights file's tensor, the argument that holds it
// and how the file stores it.
// CHECK-LABEL: func.func @weights(
// CHECK-SAME: ane.weight_args = [#ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cin]>, #ane.weight_arg<"layers.0.up", arg = 2, shape = [1, 6, 1, 8], stored = [Cin, Cout]>]
func.func @weights() attributes {
  ane.weight_args = [
    #ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cin]>,
    #ane.weight_arg<"layers.0.up", arg = 2, shape = [1, 6, 1, 8], stored = [Cin, Cout]>]} {
  func.return
}

// I/O packing: each packed input and output buffer with the tensors in it,
// through a row-major view where a tensor's own shape does not fit.
// CHECK-LABEL: func.func @packing(
// CHECK-SAME: ane.packing = #ane.packing<"packing", inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>, #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4, length = 6, view = [1, 8, 1, 6]>]>], outputs = [#ane.buffer<shape = [1, 14, 1, 4], tensors = [#ane.packed<"out0", result = 0, shape = [1, 6, 1, 4], axis = 1, offset = 0, length = 6>, #ane.packed<"out1", result = 1, shape = [1, 8, 1, 4], axis = 1, offset = 6, length = 8>]>]>
func.func @packing() attributes {
  ane.packing = #ane.packing<"packing",
    inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [
      #ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>,
      #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4, length = 6, view = [1, 8, 1, 6]>]>],
    outputs = [#ane.buffer<shape = [1, 14, 1, 4], tensors = [
      #ane.packed<"out0", result = 0, shape = [1, 6, 1, 4], axis = 1, offset = 0, length = 6>,
      #ane.packed<"out1", result = 1, shape = [1, 8, 1, 4], axis = 1, offset = 6, length = 8>]>]>} {
  func.return
}
