// RUN: xdsl-opt %s -p ane-lint 2>&1 | filecheck %s
// RUN: xdsl-opt %s -p 'ane-lint{strict=true}' 2>&1 | filecheck %s

// A program in the ANE's preferred form (fp16, [1, C, 1, S] activations, a
// linear layer as a 1x1 conv, softmax over channels) has no findings, also
// under strict=true, and is printed unchanged.

// CHECK-NOT:   ane-lint: {{warning|error}}
// CHECK:       ane-lint: 1 function, 4 ops, 0 errors, 0 warnings
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @ffn(%x: tensor<1x64x1x256xf16>) -> tensor<1x128x1x256xf16> {
// CHECK-NEXT:      %w = mil.const weight "ffn.weight" : tensor<128x64x1x1xf16>
// CHECK-NEXT:      %b = mil.const weight "ffn.bias" : tensor<128xf16>
// CHECK-NEXT:      %h = mil.conv %x, %w, bias %b : (tensor<1x64x1x256xf16>, tensor<128x64x1x1xf16>, tensor<128xf16>) -> tensor<1x128x1x256xf16>
// CHECK-NEXT:      %r = mil.relu %h : tensor<1x128x1x256xf16>
// CHECK-NEXT:      %s = mil.softmax %r {axis = 1 : i64} : tensor<1x128x1x256xf16>
// CHECK-NEXT:      %y = mil.add %s, %h : (tensor<1x128x1x256xf16>, tensor<1x128x1x256xf16>) -> tensor<1x128x1x256xf16>
// CHECK-NEXT:      func.return %y : tensor<1x128x1x256xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @ffn(%x: tensor<1x64x1x256xf16>) -> tensor<1x128x1x256xf16> {
  %w = mil.const weight "ffn.weight" : tensor<128x64x1x1xf16>
  %b = mil.const weight "ffn.bias" : tensor<128xf16>
  %h = mil.conv %x, %w, bias %b : (tensor<1x64x1x256xf16>, tensor<128x64x1x1xf16>, tensor<128xf16>) -> tensor<1x128x1x256xf16>
  %r = mil.relu %h : tensor<1x128x1x256xf16>
  %s = mil.softmax %r {axis = 1 : i64} : tensor<1x128x1x256xf16>
  %y = mil.add %s, %h : (tensor<1x128x1x256xf16>, tensor<1x128x1x256xf16>) -> tensor<1x128x1x256xf16>
  func.return %y : tensor<1x128x1x256xf16>
}
