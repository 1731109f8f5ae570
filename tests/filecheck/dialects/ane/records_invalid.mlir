// RUN: xdsl-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Verifier errors of the ane dialect's records, reported where the record
// is parsed.

// CHECK: #ane.layout: unknown kind 'nhwc' (expected one of scalar, c, sc, bsc, bhsd, ane, nchw, ncw, state)
func.func @unknown_kind() attributes {ane.arg_layouts = [#ane.layout<nhwc, logical = [1, 8, 2, 2], ane = [1, 8, 1, 4]>]} {
  func.return
}

// -----

// CHECK: #ane.layout: an nchw image is [1, C, H, W], held unchanged, not [1, 8, 2, 2] -> [1, 8, 1, 4]
func.func @image_changed() attributes {ane.arg_layouts = [#ane.layout<nchw, logical = [1, 8, 2, 2], ane = [1, 8, 1, 4]>]} {
  func.return
}

// -----

// CHECK: #ane.layout: ane [1, 8, 4] is not [1, C, 1, S]
func.func @not_ane_form() attributes {ane.arg_layouts = [#ane.layout<sc, logical = [4, 8], ane = [1, 8, 4]>]} {
  func.return
}

// -----

// CHECK: #ane.layout: logical [4, 8] and ane [1, 8, 1, 8] differ in element count
func.func @element_count() attributes {ane.arg_layouts = [#ane.layout<sc, logical = [4, 8], ane = [1, 8, 1, 8]>]} {
  func.return
}

// -----

// CHECK: #ane.layout: a state keeps its shape [16, 8], not [1, 8, 1, 16]
func.func @state_shape() attributes {ane.arg_layouts = [#ane.layout<state, logical = [16, 8], ane = [1, 8, 1, 16]>]} {
  func.return
}

// -----

// CHECK: #ane.weight_arg: shape [8, 6] is not [1, Cin, 1, Cout]
func.func @weight_shape() attributes {ane.weight_args = [#ane.weight_arg<"w", arg = 1, shape = [8, 6], stored = [Cout, Cin]>]} {
  func.return
}

// -----

// A packed tensor's length is its size on the buffer's axis.
// CHECK: #ane.packed "x": offset 0 and length 5 do not place [1, 8, 1, 4] on axis 3
func.func @length() attributes {ane.packing = #ane.packing<"length", inputs = [#ane.buffer<shape = [1, 8, 1, 5], tensors = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 5>]>], outputs = []>} {
  func.return
}

// -----

// CHECK: #ane.packed "y": view [1, 8, 1, 5] has another element count than [1, 4, 1, 12]
func.func @view() attributes {ane.packing = #ane.packing<"view", inputs = [#ane.buffer<shape = [1, 8, 1, 5], tensors = [#ane.packed<"y", arg = 0, shape = [1, 4, 1, 12], axis = 3, offset = 0, length = 5, view = [1, 8, 1, 5]>]>], outputs = []>} {
  func.return
}

// -----

// The tensors of a buffer follow each other and fill it.
// CHECK: #ane.buffer: "y" is not next on axis 3 (offset 4)
func.func @gap() attributes {ane.packing = #ane.packing<"gap", inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>, #ane.packed<"y", arg = 1, shape = [1, 8, 1, 4], axis = 3, offset = 6, length = 4>]>], outputs = []>} {
  func.return
}

// -----

// CHECK: #ane.buffer: the tensors fill 4 of 10 on axis 3
func.func @unfilled() attributes {ane.packing = #ane.packing<"unfilled", inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>]>], outputs = []>} {
  func.return
}

// -----

// CHECK: #ane.buffer: "x" [1, 6, 1, 4] does not fit [1, 8, 1, 4] across axis 3
func.func @across() attributes {ane.packing = #ane.packing<"across", inputs = [#ane.buffer<shape = [1, 8, 1, 4], tensors = [#ane.packed<"x", arg = 0, shape = [1, 6, 1, 4], axis = 3, offset = 0, length = 4>]>], outputs = []>} {
  func.return
}

// -----

// Inputs hold arguments, outputs results.
// CHECK: #ane.packing: "out0" in inputs is packed as result 0; inputs hold arguments
func.func @port() attributes {ane.packing = #ane.packing<"port", inputs = [#ane.buffer<shape = [1, 8, 1, 4], tensors = [#ane.packed<"out0", result = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>]>], outputs = []>} {
  func.return
}
