// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=int4 granularity=per-channel min-size=16}' | filecheck %s --check-prefix=INT4
// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=lut4 granularity=per-tensor min-size=16}' | filecheck %s --check-prefix=LUT4
// RUN: xdsl-opt %s -p 'mil-compress-weights{mode=lut4 min-size=64}' | filecheck %s --check-prefix=SMALL

// mil-compress-weights on inline consts (run as a plain pass, without a
// weights file): a conv weight becomes a constexpr op before it, the rest
// of the program unchanged.
//
// Each output channel r of the weight is c_r · [-7, -5, ..., 7] (c_0 = 1/8,
// c_1 = −2, powers of two): int4 per channel stores it exactly (scale c_r, data -7..7; any
// clipped scale is worse), and its 16 distinct values are lut4's exact LUT,
// sorted, with each index the rank of its value. Under min-size (64
// elements) nothing changes.

// INT4-LABEL: func.func @conv(
// INT4-NEXT:    %w_data = mil.const dense<{{\[}}{{\[}}{{\[}}[-7]], {{\[}}[-5]], {{\[}}[-3]], {{\[}}[-1]], {{\[}}[1]], {{\[}}[3]], {{\[}}[5]], {{\[}}[7]]], {{\[}}{{\[}}[7]], {{\[}}[5]], {{\[}}[3]], {{\[}}[1]], {{\[}}[-1]], {{\[}}[-3]], {{\[}}[-5]], {{\[}}[-7]]]]> : tensor<2x8x1x1xi4>
// INT4-NEXT:    %w_scale = mil.const dense<{{\[}}{{\[}}{{\[}}[1.250000e-01]]], {{\[}}{{\[}}[2.000000e+00]]]]> : tensor<2x1x1x1xf16>
// INT4-NEXT:    %w = mil.constexpr_blockwise_shift_scale %w_data, %w_scale : (tensor<2x8x1x1xi4>, tensor<2x1x1x1xf16>) -> tensor<2x8x1x1xf16>
// INT4-NEXT:    %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<2x8x1x1xf16>) -> tensor<1x2x1x4xf16>
// INT4-NEXT:    func.return %y : tensor<1x2x1x4xf16>

// LUT4-LABEL: func.func @conv(
// LUT4-NEXT:    %w_indices = mil.const dense<{{\[}}{{\[}}{{\[}}[4]], {{\[}}[5]], {{\[}}[6]], {{\[}}[7]], {{\[}}[8]], {{\[}}[9]], {{\[}}[10]], {{\[}}[11]]], {{\[}}{{\[}}[15]], {{\[}}[14]], {{\[}}[13]], {{\[}}[12]], {{\[}}[3]], {{\[}}[2]], {{\[}}[1]], {{\[}}[0]]]]> : tensor<2x8x1x1xui4>
// LUT4-NEXT:    %w_lut = mil.const dense<{{\[}}{{\[}}{{\[}}{{\[}}{{\[}}{{\[}}-1.400000e+01], [-1.000000e+01], [-6.000000e+00], [-2.000000e+00], [-8.750000e-01], [-6.250000e-01], [-3.750000e-01], [-1.250000e-01], [1.250000e-01], [3.750000e-01], [6.250000e-01], [8.750000e-01], [2.000000e+00], [6.000000e+00], [1.000000e+01], [1.400000e+01]]]]]]> : tensor<1x1x1x1x16x1xf16>
// LUT4-NEXT:    %w = mil.constexpr_lut_to_dense %w_indices, %w_lut : (tensor<2x8x1x1xui4>, tensor<1x1x1x1x16x1xf16>) -> tensor<2x8x1x1xf16>
// LUT4-NEXT:    %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<2x8x1x1xf16>) -> tensor<1x2x1x4xf16>

// SMALL-LABEL: func.func @conv(
// SMALL-NEXT:    %w = mil.const dense<
// SMALL-NOT:     constexpr
func.func @conv(%x: tensor<1x8x1x4xf16>) -> tensor<1x2x1x4xf16> {
  %w = mil.const dense<[[[[-0.875]], [[-0.625]], [[-0.375]], [[-0.125]], [[0.125]], [[0.375]], [[0.625]], [[0.875]]], [[[14.0]], [[10.0]], [[6.0]], [[2.0]], [[-2.0]], [[-6.0]], [[-10.0]], [[-14.0]]]]> : tensor<2x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<2x8x1x1xf16>) -> tensor<1x2x1x4xf16>
  func.return %y : tensor<1x2x1x4xf16>
}
