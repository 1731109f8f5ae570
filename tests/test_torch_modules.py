"""PyTorch in for plain torch modules: an MLP with LayerNorm and GELU, an
attention written with matmul and softmax, an embedding with a classifier,
an nn.Module handed over directly, a masked attention (the bias operand),
GQA with `enable_gqa`, empty slices, concat operands and split pieces, and
bfloat16 and float64 modules; checked as in torch_check.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cli_helpers import cli
from torch import nn
from torch_check import check_program, export

import xdsl_ane
from xdsl_ane.interpreter.core import run_function

# Exports torch programs and Hugging Face models built from configs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


class Mlp(nn.Module):
    def __init__(self, size: int = 64, hidden: int = 256):
        super().__init__()
        self.up = nn.Linear(size, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.down = nn.Linear(hidden, size)

    def forward(self, x):
        return x + self.down(F.gelu(self.norm(self.up(x))))


class MatmulAttention(nn.Module):
    """Multi-head attention spelled out: q·kᵀ/√d, softmax, ·v."""

    def __init__(self, size: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(size, 3 * size)
        self.out = nn.Linear(size, size)

    def forward(self, x):
        b, s, c = x.shape
        d = c // self.heads
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, c))


class Classifier(nn.Module):
    def __init__(self, vocab: int = 100, size: int = 32, classes: int = 10):
        super().__init__()
        self.embedding = nn.Embedding(vocab, size)
        self.head = nn.Linear(size, classes)

    def forward(self, ids):
        return self.head(torch.tanh(self.embedding(ids).mean(dim=1)))


class MaskedAttention(nn.Module):
    """sdpa with a constant banded mask (not causal): the bias operand."""

    def __init__(self, size: int = 64, heads: int = 4, seq: int = 8):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(size, size)
        i = torch.arange(seq)
        self.register_buffer("band", (i[:, None] - i[None, :]).abs() <= 2)

    def forward(self, x):
        b, s, c = x.shape
        h = self.proj(x).view(b, s, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(h, h, h, attn_mask=self.band)
        return y.transpose(1, 2).reshape(b, s, c)


class GroupedAttention(nn.Module):
    """sdpa with 4 query heads over 2 key/value heads (`enable_gqa`), causal."""

    def __init__(self, size: int = 64):
        super().__init__()
        self.q = nn.Linear(size, size)
        self.kv = nn.Linear(size, size)

    def forward(self, x):
        b, s, c = x.shape
        q = self.q(x).view(b, s, 4, 16).transpose(1, 2)
        k, v = (t.view(b, s, 2, 16).transpose(1, 2) for t in self.kv(x).chunk(2, -1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return y.transpose(1, 2).reshape(b, s, c)


def hidden(seq: int = 8, size: int = 64) -> torch.Tensor:
    return torch.randn(1, seq, size, generator=torch.Generator().manual_seed(1))


def check_module(model: nn.Module, args: tuple):
    torch.manual_seed(0)
    return check_program(export(model.eval(), args), args)


def test_mlp_with_layer_norm_and_gelu():
    torch.manual_seed(0)
    checked = check_module(Mlp(), (hidden(),))
    assert len(checked.ops("rlx.layer_norm")) == 1
    assert len(checked.ops("rlx.gelu")) == 1
    # bias-carrying projections are x·Wᵀ + b with W under its state_dict key
    names = {op.param_name.data for op in checked.ops("rlx.param")}
    assert {"up.weight", "up.bias", "down.weight", "down.bias"} <= names


def test_attention_written_with_matmul_and_softmax():
    torch.manual_seed(0)
    checked = check_module(MatmulAttention(), (hidden(),))
    assert len(checked.ops("rlx.softmax")) == 1


def test_embedding_with_classifier():
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, 12))
    checked = check_module(Classifier(), (ids,))
    assert checked.imported.input_names == ["ids"]
    assert len(checked.ops("rlx.gather")) == 1


def test_constant_mask_becomes_the_bias_operand():
    torch.manual_seed(0)
    checked = check_module(MaskedAttention(), (hidden(),))
    (attention,) = checked.ops("rlx.attention")
    assert attention.mask.data == "bias" and attention.bias is not None


def test_grouped_query_attention_with_enable_gqa():
    torch.manual_seed(0)
    checked = check_module(GroupedAttention(), (hidden(),))
    (attention,) = checked.ops("rlx.attention")
    assert attention.mask.data == "causal"
    assert attention.k.type.get_shape()[1] == 2


def test_module_exported_from_example_args():
    torch.manual_seed(0)
    model = Mlp().eval()
    x = hidden()
    imported = xdsl_ane.from_torch(model, (x,))
    (y,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    with torch.no_grad():
        expected = model(x).numpy()
    assert abs(y - expected).max() < 1e-4 * abs(expected).max()
    compiled = xdsl_ane.compile(model, example_args=(x,))
    assert compiled.op_counts()["main"]["conv"] == 2


def test_compile_accepts_an_exported_program():
    torch.manual_seed(0)
    x = hidden()
    program = export(Mlp().eval(), (x,))
    compiled = xdsl_ane.compile(program)
    assert compiled.op_counts()["main"]["layer_norm"] == 1


# --- empty tensors: a zero-length slice, concat operand or split piece -------------------
# torch allows them; an empty tensor holds no data, so the importer knows it
# whatever its inputs and folds it away (Core ML has no empty tensors).


class EmptySliceIntoConcat(nn.Module):
    """Phi-3's partial rotary with its whole head rotated: x[..., 8:] is empty."""

    def forward(self, x):
        return torch.cat([torch.tanh(x[..., :8]), x[..., 8:] * 2], dim=-1)


class ConcatWithEmptyOperand(nn.Module):
    def forward(self, x):
        return torch.cat([x.new_zeros(1, 4, 0), x, x.new_empty(1, 4, 0)], dim=-1)


class SplitWithEmptyPiece(nn.Module):
    def forward(self, x):
        a, b, c = torch.split(x, [3, 0, 5], dim=-1)
        return torch.cat([c, torch.exp(b), a], dim=-1) + b.sum()


class SplitWithSizesEmptyPiece(nn.Module):
    def forward(self, x):
        a, b = x.split_with_sizes([0, 8], dim=-1)
        return b * 3 + torch.cat([a, a], dim=-1).sum(-1, keepdim=True)


class NarrowToNothing(nn.Module):
    """A zero-length narrow combined with non-empty values: its sum is 0."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        nothing = x.narrow(-1, 2, 0)
        y = torch.cat([nothing, self.proj(x), nothing], dim=-1)
        return y + nothing.sum(-1, keepdim=True)


@pytest.mark.parametrize(
    "model",
    [
        EmptySliceIntoConcat,
        ConcatWithEmptyOperand,
        SplitWithEmptyPiece,
        SplitWithSizesEmptyPiece,
        NarrowToNothing,
    ],
)
def test_empty_tensors_fold_away(model):
    torch.manual_seed(0)
    checked = check_module(model(), (torch.randn(1, 4, 8),))
    for op in checked.imported.module.walk():
        for result in op.results:
            shape = getattr(result.type, "get_shape", lambda: (1,))()
            assert 0 not in shape, op


def test_bfloat16_module_matches_torch_in_float32():
    """bf16 → f32 is exact: the program is the f32 model's, with a note."""
    torch.manual_seed(0)
    model = Mlp(32, 64).eval().to(torch.bfloat16)
    x = hidden(size=32).to(torch.bfloat16)
    imported = xdsl_ane.from_torch(export(model, (x,)))
    assert imported.input_dtypes == [np.dtype(np.float32)]
    (y,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    with torch.no_grad():
        expected = model.float()(x.float()).numpy()
    assert y.dtype == np.float32
    assert abs(y - expected).max() < 1e-5 * abs(expected).max()
    assert any("bfloat16" in note for note in imported.notes), imported.notes


def test_float64_is_narrowed_with_a_note():
    torch.manual_seed(0)
    model = Mlp(32, 64).eval().double()
    x = hidden(size=32).double()
    imported = xdsl_ane.from_torch(export(model, (x,)))
    (note,) = [n for n in imported.notes if "float64" in n]
    assert "float32" in note and "input 'x'" in note and "up.weight" in note
    (y,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    with torch.no_grad():
        expected = model(x).numpy()
    assert abs(y - expected).max() < 1e-4 * abs(expected).max()


@pytest.mark.parametrize("command", ["import", "compile"])
def test_import_and_compile_print_the_float64_note(tmp_path, command):
    model = Mlp(32, 64).eval().double()
    path = tmp_path / "mlp.pt2"
    torch.export.save(export(model, (hidden(size=32).double(),)), path)
    output = tmp_path / ("mlp.mlir" if command == "import" else "mlp.mlpackage")
    result = cli(command, str(path), "-o", str(output))
    assert result.returncode == 0, result.stderr
    (note,) = [ln for ln in result.stderr.splitlines() if "float64" in ln]
    assert note.startswith(f"xdsl-ane: note: {path}: float64 narrowed to float32")
    if command == "compile":
        assert xdsl_ane.compile(path).notes == [note.removeprefix("xdsl-ane: note: ")]


def test_float32_module_has_no_notes():
    imported = xdsl_ane.from_torch(export(Mlp(32, 64).eval(), (hidden(size=32),)))
    assert imported.notes == []
