"""PyTorch in, by numbers: Hugging Face Qwen3, Llama, GPT-2 and BERT built
from configs with random weights (nothing downloaded), as full models
(ids -> logits) and hidden-state stacks, small and at real hidden sizes
with one layer; each imported program interpreted against
`program.module()` in fp32 (1e-4), compiled by `ane-pipeline` and run in
fp16 (2e-2), and its package reloaded by coremltools (torch_check.py). The
patterns must be found: rlx.rms_norm, rlx.rope, grouped-query
rlx.attention with the causal mask, no rank-5 tensor."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import transformers
from lowering_cases import relative_error
from torch_check import check_program, export, max_rank

import xdsl_ane
from xdsl_ane.interpreter.core import run_function

# Exports torch programs and Hugging Face models built from configs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

warnings.filterwarnings("ignore", module="transformers")
transformers.logging.set_verbosity_error()

SEQ = 8
VOCAB = 256


def qwen3_config(real: bool, layers: int):
    if real:  # Qwen3-0.6B
        sizes = dict(
            hidden_size=1024,
            intermediate_size=3072,
            num_attention_heads=16,
            num_key_value_heads=8,
            head_dim=128,
        )
    else:
        sizes = dict(
            hidden_size=64,
            intermediate_size=128,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
        )
    return transformers.Qwen3Config(
        vocab_size=VOCAB, num_hidden_layers=layers, max_position_embeddings=64, **sizes
    )


def llama_config(real: bool, layers: int):
    if real:  # Llama-3.2-1B
        sizes = dict(
            hidden_size=2048,
            intermediate_size=8192,
            num_attention_heads=32,
            num_key_value_heads=8,
            rope_theta=500000.0,
        )
    else:
        sizes = dict(
            hidden_size=64,
            intermediate_size=128,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    return transformers.LlamaConfig(
        vocab_size=VOCAB, num_hidden_layers=layers, max_position_embeddings=64, **sizes
    )


def gpt2_config(real: bool, layers: int):
    sizes = dict(n_embd=768, n_head=12) if real else dict(n_embd=64, n_head=4)
    return transformers.GPT2Config(
        vocab_size=VOCAB,
        n_layer=layers,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        **sizes,
    )


def bert_config(real: bool, layers: int):
    if real:  # BERT-base
        sizes = dict(hidden_size=768, intermediate_size=3072, num_attention_heads=12)
    else:
        sizes = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4)
    return transformers.BertConfig(
        vocab_size=VOCAB, num_hidden_layers=layers, max_position_embeddings=64, **sizes
    )


FAMILIES = {
    # family -> (config, full model, stack)
    "qwen3": (qwen3_config, "Qwen3ForCausalLM", "Qwen3Model"),
    "llama": (llama_config, "LlamaForCausalLM", "LlamaModel"),
    "gpt2": (gpt2_config, "GPT2LMHeadModel", "GPT2Model"),
    "bert": (bert_config, "BertForMaskedLM", "BertModel"),
}


def build(family: str, part: str, real: bool, layers: int):
    config_of, full, stack = FAMILIES[family]
    config = config_of(real, layers)
    torch.manual_seed(0)
    cls = getattr(transformers, full if part == "full" else stack)
    model = cls(config).eval()
    decoder = family in ("qwen3", "llama", "gpt2")
    kwargs = {"use_cache": False} if decoder else {}
    generator = torch.Generator().manual_seed(1)
    if part == "full":
        args = (torch.randint(0, VOCAB, (1, SEQ), generator=generator),)
    else:
        hidden = config.hidden_size
        x = torch.randn(1, SEQ, hidden, generator=generator)
        args, kwargs = (), {**kwargs, "inputs_embeds": x}
    return model, config, args, kwargs


def check_family(family: str, part: str, real: bool, layers: int):
    model, config, args, kwargs = build(family, part, real, layers)
    program = export(model, args, kwargs)
    checked = check_program(program, args, kwargs)
    module = checked.imported.module
    assert max_rank(module) <= 4
    attention = checked.ops("rlx.attention")
    assert len(attention) == layers
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", heads)
    for op in attention:
        assert op.k.type.get_shape()[1] == kv_heads  # grouped-query kept
        assert op.q.type.get_shape()[1] == heads
        expected_mask = "none" if family == "bert" else "causal"
        assert op.mask.data == expected_mask
        assert op.bias is None
    if family in ("qwen3", "llama"):
        norms_per_layer = 4 if family == "qwen3" else 2
        assert len(checked.ops("rlx.rms_norm")) == norms_per_layer * layers + 1
        assert len(checked.ops("rlx.rope")) == 2 * layers
        assert not checked.ops("rlx.pow") and not checked.ops("rlx.rsqrt")
        assert not checked.ops("rlx.expand")
        weights = checked.imported.weights
        assert {"rope.cos", "rope.sin"} <= set(weights)
        assert weights["rope.cos"].shape == (SEQ, config.head_dim // 2)
    else:
        # two per layer, and GPT-2's final one or BERT's embedding one (and
        # its masked-LM head's)
        extra = 1 + (family == "bert" and part == "full")
        assert len(checked.ops("rlx.layer_norm")) == 2 * layers + extra
    return checked


@pytest.mark.parametrize("part", ["full", "stack"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hugging_face_small(family, part):
    checked = check_family(family, part, real=False, layers=2)
    names = checked.imported.input_names
    assert names == (["input_ids"] if part == "full" else ["inputs_embeds"])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hugging_face_real_hidden_size(family):
    check_family(family, "full", real=True, layers=1)


def test_qwen3_weights_by_state_dict_key():
    model, _, args, kwargs = build("qwen3", "full", real=False, layers=1)
    checked = check_family("qwen3", "full", real=False, layers=1)
    weights = checked.imported.weights
    state = model.state_dict()
    for key in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"):
        assert (weights[key] == state[key].numpy()).all()
    assert checked.imported.output_names == ["logits"]


def test_tied_embeddings_once():
    config = qwen3_config(False, 1)
    config.tie_word_embeddings = True
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config).eval()
    ids = torch.randint(0, VOCAB, (1, SEQ))
    checked = check_program(
        export(model, (ids,), {"use_cache": False}), (ids,), {"use_cache": False}
    )
    weights = checked.imported.weights
    assert "lm_head.weight" not in weights or "model.embed_tokens.weight" not in weights
    params = [op.param_name.data for op in checked.ops("rlx.param")]
    assert len(params) == len(set(params))


def test_half_precision_model_keeps_its_norms():
    """An fp16 model: HF normalizes in float32 between two casts; the
    pattern still finds rlx.rms_norm (computed in f32) and the program
    takes and returns f16."""
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(qwen3_config(False, 1)).eval().half()
    ids = torch.randint(0, VOCAB, (1, SEQ))
    imported = xdsl_ane.from_torch(model, (ids,))
    norms = [op for op in imported.module.walk() if op.name == "rlx.rms_norm"]
    assert len(norms) == 5
    assert all("f32" in str(op.result.type) for op in norms)
    (logits,) = run_function(
        imported.module, imported.numpy_inputs(ids), imported.weights
    )
    with torch.no_grad():
        expected = model(ids, use_cache=False).logits.float().numpy()
    assert logits.dtype == np.float16
    assert relative_error(expected, logits) < 2e-3


def test_phi3_with_an_empty_pass_through_slice():
    """Phi-3 rotates `partial_rotary_factor` of each head and concatenates
    the rest, `q[..., rotary_dim:]`, which is empty at the default factor 1:
    the empty slice folds away and the model matches transformers."""
    config = transformers.Phi3Config(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    model = transformers.Phi3ForCausalLM(config).eval()
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1))
    kwargs = {"use_cache": False}
    checked = check_program(export(model, (ids,), kwargs), (ids,), kwargs)
    assert len(checked.ops("rlx.attention")) == 2
    assert len(checked.ops("rlx.rms_norm")) == 2 * 2 + 1
    assert len(checked.ops("rlx.rope")) == 2 * 2
    assert max_rank(checked.imported.module) <= 4


TINY = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
)
"""A transformer's sizes, small."""

PADDED = torch.tensor([[1] * (SEQ - 2) + [0] * 2])
"""An attention_mask with the last two positions padding."""

MORE_FAMILIES: dict[str, tuple[str, str, dict, bool]] = {
    # name: (model class, config class, config fields, with a padding mask)
    "bert": ("BertModel", "BertConfig", TINY, True),
    "roberta": ("RobertaModel", "RobertaConfig", TINY, True),
    "xlm_roberta": ("XLMRobertaModel", "XLMRobertaConfig", TINY, True),
    "mpnet": ("MPNetModel", "MPNetConfig", TINY, True),
    "distilbert": (
        "DistilBertModel",
        "DistilBertConfig",
        dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64),
        True,
    ),
    "albert": ("AlbertModel", "AlbertConfig", dict(TINY, embedding_size=16), True),
    "electra": ("ElectraModel", "ElectraConfig", dict(TINY, embedding_size=16), True),
    "mobilebert": (
        "MobileBertModel",
        "MobileBertConfig",
        dict(
            TINY,
            embedding_size=16,
            intra_bottleneck_size=16,
            true_hidden_size=16,
            num_feedforward_networks=1,
        ),
        True,
    ),
    "squeezebert": (
        "SqueezeBertModel",
        "SqueezeBertConfig",
        dict(TINY, embedding_size=32),
        True,
    ),
    "deberta_v2": ("DebertaV2Model", "DebertaV2Config", TINY, True),
    "llama": ("LlamaModel", "LlamaConfig", dict(TINY, num_key_value_heads=1), True),
    "falcon": (
        "FalconModel",
        "FalconConfig",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4),
        False,
    ),
    "falcon_new_architecture": (
        "FalconModel",
        "FalconConfig",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            new_decoder_architecture=True,
            num_kv_heads=2,
        ),
        False,
    ),
    "bloom": (
        "BloomModel",
        "BloomConfig",
        dict(hidden_size=32, n_layer=2, n_head=4),
        False,
    ),
    "opt": (
        "OPTModel",
        "OPTConfig",
        dict(TINY, ffn_dim=64, word_embed_proj_dim=32),
        False,
    ),
    "gptj": (
        "GPTJModel",
        "GPTJConfig",
        dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4),
        False,
    ),
    "codegen": (
        "CodeGenModel",
        "CodeGenConfig",
        dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4),
        False,
    ),
    "mpt": ("MptModel", "MptConfig", dict(d_model=32, n_layers=2, n_heads=4), False),
    "gpt_bigcode": (
        "GPTBigCodeModel",
        "GPTBigCodeConfig",
        dict(n_embd=32, n_layer=2, n_head=4),
        False,
    ),
    "gpt_neox": ("GPTNeoXModel", "GPTNeoXConfig", TINY, False),
    "persimmon": ("PersimmonModel", "PersimmonConfig", TINY, False),
    "phi": ("PhiModel", "PhiConfig", TINY, False),
    "starcoder2": (
        "Starcoder2Model",
        "Starcoder2Config",
        dict(TINY, num_key_value_heads=1),
        False,
    ),
    "olmo": ("OlmoModel", "OlmoConfig", TINY, False),
}
"""Another transformers encoder or decoder is one more row: its classes,
small sizes, and whether it is exported with a runtime attention_mask."""


@pytest.mark.parametrize("name", sorted(MORE_FAMILIES))
def test_more_families(name):
    """ids (and a runtime attention_mask whose last positions are padding)
    in; the hidden states against transformers, in fp32 and fp16."""
    model_class, config_class, fields, padded = MORE_FAMILIES[name]
    config = getattr(transformers, config_class)(
        vocab_size=VOCAB, max_position_embeddings=64, **fields
    )
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    ids = torch.randint(3, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1))
    kwargs: dict = {}
    if getattr(config, "use_cache", False) or not padded:
        kwargs["use_cache"] = False
    if padded:
        kwargs["attention_mask"] = PADDED
    checked = check_program(export(model, (ids,), kwargs), (ids,), kwargs)
    expected_inputs = ["input_ids"] + (["attention_mask"] if padded else [])
    assert checked.imported.input_names == expected_inputs
