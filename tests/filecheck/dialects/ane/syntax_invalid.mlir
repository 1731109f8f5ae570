// RUN: xdsl-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Parse errors of the ane dialect's records.

// CHECK: expected stored = [Cout, Cin] or [Cin, Cout]
func.func @stored() attributes {ane.weight_args = [#ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cx]>]} {
  func.return
}

// -----

// CHECK: Expected integer literal
func.func @negative() attributes {ane.arg_layouts = [#ane.layout<sc, logical = [-4, 8], ane = [1, 8, 1, 4]>]} {
  func.return
}

// -----

// CHECK: expected arg or result
func.func @port() attributes {ane.packing = #ane.packing<"port", inputs = [#ane.buffer<shape = [1, 8, 1, 4], tensors = [#ane.packed<"x", input = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>]>], outputs = []>} {
  func.return
}

// -----

// A buffer holds #ane.packed records, a packing #ane.buffer ones.
// CHECK: expected a #ane.buffer<...>
func.func @nested() attributes {ane.packing = #ane.packing<"nested", inputs = [#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>], outputs = []>} {
  func.return
}
