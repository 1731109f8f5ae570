builtin.module {
  func.func @attention_block(%x: tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32> {
    %0 = rlx.param "layers.0.input_layernorm.weight" : tensor<1024xf32>
    %1 = rlx.rms_norm %x, %0 {eps = 1.000000e-06 : f32} : (tensor<1x256x1024xf32>, tensor<1024xf32>) -> tensor<1x256x1024xf32>
    %2 = rlx.param "layers.0.self_attn.q_proj.weight" : tensor<2048x1024xf32>
    %3 = rlx.matmul %1, %2 {transpose_rhs = true} : (tensor<1x256x1024xf32>, tensor<2048x1024xf32>) -> tensor<1x256x2048xf32>
    %4 = rlx.reshape %3 : tensor<1x256x2048xf32> -> tensor<1x256x16x128xf32>
    %5 = rlx.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x256x16x128xf32>) -> tensor<1x16x256x128xf32>
    %6 = rlx.param "layers.0.self_attn.k_proj.weight" : tensor<1024x1024xf32>
    %7 = rlx.matmul %1, %6 {transpose_rhs = true} : (tensor<1x256x1024xf32>, tensor<1024x1024xf32>) -> tensor<1x256x1024xf32>
    %8 = rlx.reshape %7 : tensor<1x256x1024xf32> -> tensor<1x256x8x128xf32>
    %9 = rlx.transpose %8 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x256x8x128xf32>) -> tensor<1x8x256x128xf32>
    %10 = rlx.param "layers.0.self_attn.v_proj.weight" : tensor<1024x1024xf32>
    %11 = rlx.matmul %1, %10 {transpose_rhs = true} : (tensor<1x256x1024xf32>, tensor<1024x1024xf32>) -> tensor<1x256x1024xf32>
    %12 = rlx.reshape %11 : tensor<1x256x1024xf32> -> tensor<1x256x8x128xf32>
    %13 = rlx.transpose %12 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x256x8x128xf32>) -> tensor<1x8x256x128xf32>
    %14 = rlx.param "layers.0.self_attn.q_norm.weight" : tensor<128xf32>
    %15 = rlx.rms_norm %5, %14 {eps = 1.000000e-06 : f32} : (tensor<1x16x256x128xf32>, tensor<128xf32>) -> tensor<1x16x256x128xf32>
    %16 = rlx.param "layers.0.self_attn.k_norm.weight" : tensor<128xf32>
    %17 = rlx.rms_norm %9, %16 {eps = 1.000000e-06 : f32} : (tensor<1x8x256x128xf32>, tensor<128xf32>) -> tensor<1x8x256x128xf32>
    %18 = rlx.param "rope.cos" : tensor<256x64xf32>
    %19 = rlx.param "rope.sin" : tensor<256x64xf32>
    %20 = rlx.rope %15, %18, %19 {style = "half"} : (tensor<1x16x256x128xf32>, tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<1x16x256x128xf32>
    %21 = rlx.rope %17, %18, %19 {style = "half"} : (tensor<1x8x256x128xf32>, tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<1x8x256x128xf32>
    %22 = rlx.attention %20, %21, %13 {mask = "causal"} : (tensor<1x16x256x128xf32>, tensor<1x8x256x128xf32>, tensor<1x8x256x128xf32>) -> tensor<1x16x256x128xf32>
    %23 = rlx.transpose %22 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x256x128xf32>) -> tensor<1x256x16x128xf32>
    %24 = rlx.reshape %23 : tensor<1x256x16x128xf32> -> tensor<1x256x2048xf32>
    %25 = rlx.param "layers.0.self_attn.o_proj.weight" : tensor<1024x2048xf32>
    %26 = rlx.matmul %24, %25 {transpose_rhs = true} : (tensor<1x256x2048xf32>, tensor<1024x2048xf32>) -> tensor<1x256x1024xf32>
    %27 = rlx.add %x, %26 : (tensor<1x256x1024xf32>, tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32>
    func.return %27 : tensor<1x256x1024xf32>
  }
}
