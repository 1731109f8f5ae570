"""Vision and audio models from torch.export with random weights: Hugging
Face models built from their configs and plain torch modules. Each is
checked by `torch_check.check_program`: the rlx program in the interpreter
against torch in fp32 (relative 1e-4), the fp16 `ane-pipeline` package in
the interpreter (2e-2), and the package through coremltools' loader.

Another transformers model is one more row of `HUGGING_FACE`: its model
class, its config class with small sizes, and the input's shape."""

from __future__ import annotations

import warnings

import pytest
import torch
import transformers
from torch import nn
from torch_check import check_program, export

# Exports and compiles whole vision and audio models: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

warnings.filterwarnings("ignore", module="transformers")
transformers.logging.set_verbosity_error()

TINY = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
)
"""A transformer's sizes, small."""
SPEECH_STEM = dict(
    conv_dim=(16, 16),
    conv_stride=(5, 2),
    conv_kernel=(10, 3),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=2,
)
"""wav2vec 2.0's convolutional feature encoder, small."""

HUGGING_FACE: dict[str, tuple[str, str, dict, tuple[int, ...]]] = {
    # name: (model class, config class, config fields, input shape)
    "resnet": (
        "ResNetModel",
        "ResNetConfig",
        dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1]),
        (1, 3, 64, 64),
    ),
    "resnet-basic": (
        "ResNetModel",
        "ResNetConfig",
        dict(
            embedding_size=16, hidden_sizes=[16, 32], depths=[2, 1], layer_type="basic"
        ),
        (1, 3, 64, 64),
    ),
    "mobilenet_v2": (
        "MobileNetV2Model",
        "MobileNetV2Config",
        dict(depth_multiplier=0.35, image_size=64),
        (1, 3, 64, 64),
    ),
    "vit": (
        "ViTModel",
        "ViTConfig",
        dict(TINY, image_size=32, patch_size=8),
        (1, 3, 32, 32),
    ),
    "convnext": (
        "ConvNextModel",
        "ConvNextConfig",
        dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2),
        (1, 3, 64, 64),
    ),
    "regnet": (
        "RegNetModel",
        "RegNetConfig",
        dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8),
        (1, 3, 64, 64),
    ),
    "deit": (
        "DeiTModel",
        "DeiTConfig",
        dict(TINY, image_size=32, patch_size=8),
        (1, 3, 32, 32),
    ),
    "dinov2": (
        "Dinov2Model",
        "Dinov2Config",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            mlp_ratio=2,
            image_size=32,
            patch_size=8,
        ),
        (1, 3, 32, 32),
    ),
    "segformer": (
        "SegformerModel",
        "SegformerConfig",
        dict(
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[16, 32],
            num_attention_heads=[1, 2],
            patch_sizes=[7, 3],
            strides=[4, 2],
            mlp_ratios=[2, 2],
        ),
        (1, 3, 64, 64),
    ),
    "mobilevit": (
        "MobileViTModel",
        "MobileViTConfig",
        dict(
            image_size=64,
            hidden_sizes=[16, 24, 32],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
        ),
        (1, 3, 64, 64),
    ),
    "wav2vec2": (
        "Wav2Vec2Model",
        "Wav2Vec2Config",
        dict(TINY, **SPEECH_STEM),
        (1, 1600),
    ),
    "swin": (
        "SwinModel",
        "SwinConfig",
        dict(
            image_size=32,
            patch_size=4,
            embed_dim=16,
            depths=[2, 2],
            num_heads=[1, 2],
            window_size=4,
        ),
        (1, 3, 32, 32),
    ),
    "focalnet": (
        "FocalNetModel",
        "FocalNetConfig",
        dict(
            image_size=32,
            patch_size=4,
            embed_dim=16,
            depths=[1, 1],
            hidden_sizes=[16, 32],
        ),
        (1, 3, 32, 32),
    ),
    "clip_vision": (
        "CLIPVisionModel",
        "CLIPVisionConfig",
        dict(TINY, image_size=32, patch_size=8),
        (1, 3, 32, 32),
    ),
    "siglip_vision": (
        "SiglipVisionModel",
        "SiglipVisionConfig",
        dict(TINY, image_size=32, patch_size=8),
        (1, 3, 32, 32),
    ),
    "beit": (
        "BeitModel",
        "BeitConfig",
        dict(TINY, image_size=32, patch_size=8),
        (1, 3, 32, 32),
    ),
    "yolos": (
        "YolosModel",
        "YolosConfig",
        dict(TINY, image_size=[32, 32], patch_size=8, num_detection_tokens=4),
        (1, 3, 32, 32),
    ),
    "levit": (
        "LevitModel",
        "LevitConfig",
        dict(
            image_size=64,
            hidden_sizes=[32, 48, 64],
            num_attention_heads=[2, 2, 2],
            depths=[1, 1, 1],
            key_dim=[8, 8, 8],
        ),
        (1, 3, 64, 64),
    ),
    "cvt": (
        "CvtModel",
        "CvtConfig",
        dict(
            embed_dim=[16, 32, 48],
            num_heads=[1, 2, 3],
            depth=[1, 2, 3],
            mlp_ratio=[2.0, 2.0, 2.0],
        ),
        (1, 3, 64, 64),
    ),
    "convnextv2": (
        "ConvNextV2Model",
        "ConvNextV2Config",
        dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2),
        (1, 3, 64, 64),
    ),
    "poolformer": (
        "PoolFormerModel",
        "PoolFormerConfig",
        dict(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1]),
        (1, 3, 64, 64),
    ),
    "mobilenet_v1": (
        "MobileNetV1Model",
        "MobileNetV1Config",
        dict(depth_multiplier=0.25, image_size=64),
        (1, 3, 64, 64),
    ),
    "efficientnet": (
        "EfficientNetModel",
        "EfficientNetConfig",
        dict(
            image_size=32, width_coefficient=0.5, depth_coefficient=0.2, hidden_dim=640
        ),
        (1, 3, 32, 32),
    ),
    "bit": (
        "BitModel",
        "BitConfig",
        dict(embedding_size=32, hidden_sizes=[32, 64], depths=[1, 1], num_groups=8),
        (1, 3, 64, 64),
    ),
    "ast": (
        "ASTModel",
        "ASTConfig",
        dict(
            TINY,
            num_mel_bins=16,
            max_length=32,
            patch_size=8,
            frequency_stride=8,
            time_stride=8,
        ),
        (1, 32, 16),
    ),
    "hubert": ("HubertModel", "HubertConfig", dict(TINY, **SPEECH_STEM), (1, 1600)),
    "wavlm": ("WavLMModel", "WavLMConfig", dict(TINY, **SPEECH_STEM), (1, 1600)),
    "data2vec_audio": (
        "Data2VecAudioModel",
        "Data2VecAudioConfig",
        dict(TINY, **SPEECH_STEM),
        (1, 1600),
    ),
    "whisper_encoder": (
        "WhisperEncoder",
        "WhisperConfig",
        dict(
            d_model=32,
            encoder_layers=2,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            num_mel_bins=16,
            max_source_positions=32,
        ),
        (1, 16, 64),
    ),
}


def hugging_face_model(name: str) -> nn.Module:
    model_class, config_class, fields, _ = HUGGING_FACE[name]
    if model_class == "WhisperEncoder":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        cls = WhisperEncoder
    else:
        cls = getattr(transformers, model_class)
    model = cls(getattr(transformers, config_class)(**fields))
    # (at their initial statistics a deep stack of batch norms shrinks the
    # activations to ~1e-24, where relative errors say nothing)
    return randomize_batch_norms(model)


@pytest.mark.parametrize("name", sorted(HUGGING_FACE))
def test_hugging_face_vision_and_audio(name):
    torch.manual_seed(0)
    model = hugging_face_model(name)
    x = torch.randn(HUGGING_FACE[name][3])
    checked = check_program(export(model, (x,)), (x,))
    assert checked.ops("rlx.conv")  # every one of these has a convolution


class ConvNet(nn.Module):
    """Conv2d + BatchNorm2d + ReLU + MaxPool2d + AdaptiveAvgPool2d + Linear."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(32, 10)

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)).flatten(1))


class DepthwiseSeparable(nn.Module):
    """MobileNet's block: depthwise 3×3, pointwise 1×1, ReLU6, a residual."""

    def __init__(self, channels: int = 16):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pointwise = nn.Conv2d(channels, channels, 1)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = nn.functional.relu6(self.bn1(self.depthwise(x)))
        return x + self.bn2(self.pointwise(y))


class UNetDecoder(nn.Module):
    """A U-Net-style decoder step: ConvTranspose2d up, a skip concat,
    bilinear upsampling and a Conv2d."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.conv = nn.Conv2d(32, 8, 3, padding=1)

    def forward(self, x, skip):
        y = torch.cat([self.up(x), skip], dim=1)
        y = nn.functional.relu(self.conv(y))
        return nn.functional.interpolate(y, scale_factor=2, mode="bilinear")


def randomize_batch_norms(model: nn.Module) -> nn.Module:
    """Statistics that are not the identity, so folding them is tested."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


PLAIN = {
    "conv_net": (ConvNet, [(1, 3, 32, 32)]),
    "depthwise_separable": (DepthwiseSeparable, [(1, 16, 16, 16)]),
    "unet_decoder": (UNetDecoder, [(1, 32, 8, 8), (1, 16, 16, 16)]),
}


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_plain_vision_modules(name):
    torch.manual_seed(0)
    build, shapes = PLAIN[name]
    model = randomize_batch_norms(build())
    args = tuple(torch.randn(s) for s in shapes)
    check_program(export(model, args), args)
