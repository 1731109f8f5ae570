"""The ATen indexing ops encoders, decoders and vision models leave after
torch.export, one module per op against torch (fp32, the fp16 package in
the interpreter, coremltools' loader): `index.Tensor` (Falcon's head split,
Hugging Face's padding mask), `index_select` (Swin's `torch.roll`),
`gather` (RoBERTa's token-type buffer), `as_strided` (1-D adaptive
pooling), strided `slice`, `cumsum` (RoBERTa's position ids), the boolean
`bitwise_*` / `logical_*` (masks), `linalg_vector_norm` (ConvNeXt V2),
BatchNorm1d on [N, C] (LeViT), adaptive pooling with uneven windows and
permutations above rank 4 (Swin's window partition)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_check import Fn, check_program, export

import xdsl_ane
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.torch import needs_decomposition
from xdsl_ane.interpreter.core import run_function

# Exports torch programs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


ROW_IDS = torch.tensor([[3, 0, 2, 2, 5, 1]])

CASES = {
    # name: (f, inputs, ops the program must have, ops it must not have)
    "index_one_constant": (
        lambda x: x[:, :, [2]] * 2,
        [randn(1, 8, 6, 4)],
        {"rlx.narrow"},
        {"rlx.gather"},
    ),
    "index_scattered_constants": (
        lambda x: x[:, [0, 2, 3, 5, 1, 4, 7, 6]],
        [randn(1, 8, 16)],
        {"rlx.gather"},
        set(),
    ),
    "index_two_adjacent_constants": (
        lambda x: x[:, torch.tensor([[0], [2]]), torch.tensor([1, 3, 0])],
        [randn(1, 3, 4, 5)],
        {"rlx.gather"},
        set(),
    ),
    "index_two_apart_constants": (
        lambda x: x[:, torch.tensor([1, 0]), :, torch.tensor([2, 3])].flatten(1),
        [randn(1, 3, 4, 5)],
        set(),
        set(),
    ),
    "index_runtime_ids": (
        lambda x, ids: x[ids] + 1,
        [randn(7, 16), ROW_IDS],
        {"rlx.gather"},
        set(),
    ),
    "index_select_roll": (
        lambda x: torch.roll(x, shifts=(2, -3), dims=(1, 2)),
        [randn(1, 8, 8, 16)],
        {"rlx.concat"},
        {"rlx.gather"},
    ),
    "index_select_runtime": (
        lambda x, ids: torch.index_select(x, 1, ids[0]),
        [randn(1, 7, 3), ROW_IDS],
        {"rlx.gather"},
        set(),
    ),
    "slice_with_step": (  # a phase of the axis split as (16, 2): no gather
        lambda x: x[:, ::2] + x[:, 1::2],
        [randn(1, 32, 8)],
        {"rlx.narrow", "rlx.reshape"},
        {"rlx.gather", "rlx.concat"},
    ),
    "slice_with_step_past_the_end": (  # 11 × 3 elements do not fit in 32
        lambda x: x[:, 1::3],
        [randn(1, 32, 8)],
        {"rlx.gather"},
        set(),
    ),
    "slice_with_step_few_runs": (
        lambda x: x[:, 1:7:3],
        [randn(1, 8, 8)],
        {"rlx.concat"},
        {"rlx.gather"},
    ),
    "gather_constant_index": (
        lambda x: torch.gather(x, 1, torch.tensor([[2, 0, 1, 1], [0, 0, 3, 2]])),
        [randn(2, 4)],
        set(),
        set(),
    ),
    "as_strided_of_a_contiguous_tensor": (
        lambda x: x.as_strided((3, 4), (1, 3)) * 1.5,
        [randn(4, 3)],
        set(),
        set(),
    ),
    "adaptive_avg_pool1d_after_permute": (
        lambda x: F.adaptive_avg_pool1d(x.transpose(1, 2), 1).flatten(1),
        [randn(1, 16, 32)],
        {"rlx.reduce_mean"},
        {"rlx.gather"},
    ),
    "bool_and_or_xor": (
        lambda x: (
            torch.where((x > 0) & (x < 1), x, -x)
            + torch.where((x < -1) | (x > 1), 1.0, 0.0)
            + torch.where(torch.logical_xor(x > 0, x > 0.5), 2.0, 0.0)
        ),
        [randn(4, 16)],
        {"rlx.where"},
        set(),
    ),
    "cumsum_float": (
        lambda x: torch.cumsum(x, dim=1),
        [randn(1, 16, 3)],
        {"rlx.cumsum"},
        set(),
    ),
    "cumsum_of_a_mask": (
        lambda x, ids: x * torch.cumsum((ids != 2).int(), dim=1).float().unsqueeze(-1),
        [randn(1, 6, 4), ROW_IDS],
        {"rlx.cumsum"},
        set(),
    ),
    "vector_norm_2": (
        lambda x: x / torch.linalg.vector_norm(x, dim=(1, 2), keepdim=True),
        [randn(1, 8, 8, 16)],
        {"rlx.sqrt"},
        set(),
    ),
    "vector_norm_1_inf_3": (
        lambda x: torch.cat(
            [
                torch.linalg.vector_norm(x, 1, dim=-1),
                torch.linalg.vector_norm(x, float("inf"), dim=-1),
                torch.linalg.vector_norm(x, 3, dim=-1),
            ]
        ),
        [randn(4, 16)],
        {"rlx.pow", "rlx.reduce_max"},
        set(),
    ),
    "adaptive_avg_pool_uneven": (
        lambda x: F.adaptive_avg_pool2d(x, (3, 5)),
        [randn(1, 4, 10, 7)],
        {"rlx.matmul"},
        set(),
    ),
    "permute_rank_6": (
        lambda x: (
            x.view(1, 2, 4, 2, 4, 16).permute(0, 1, 3, 2, 4, 5).reshape(1, -1, 16, 16)
        ),
        [randn(1, 8, 8, 16)],
        {"rlx.transpose"},
        set(),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_aten_op_against_torch(name):
    f, inputs, present, absent = CASES[name]
    checked = check_program(export(Fn(f), tuple(inputs)), tuple(inputs))
    names = {op.name for op in checked.imported.module.walk()}
    assert present <= names, (name, present - names)
    assert not absent & names, (name, absent & names)
    ranks = [  # the compiled program's: Core ML takes rank ≤ 5
        len(r.type.get_shape())
        for op in checked.compiled.module.walk()
        for r in op.results
        if hasattr(r.type, "get_shape")
    ]
    assert max(ranks) <= 5


def test_batch_norm_1d_after_a_linear():
    """LeViT: BatchNorm1d on the [N, C] a linear returns."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32)).eval()
    model[1].running_mean.uniform_(-0.5, 0.5)
    model[1].running_var.uniform_(0.5, 2.0)
    x = randn(8, 16)
    check_program(export(model, (x,)), (x,))


def test_token_type_buffer_gathered_at_runtime_positions():
    """RoBERTa's `token_type_ids` buffer (non-zero here, so a wrong row
    shows), gathered at position ids computed from the input ids."""

    class Positions(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("types", torch.arange(10).remainder(3).expand(1, 10))
            self.embed = nn.Embedding(3, 8)

        def forward(self, ids):
            positions = torch.cumsum((ids != 1).int(), dim=1).long()
            types = torch.gather(self.types.expand(ids.shape[0], -1), 1, positions)
            return self.embed(types)

    ids = ROW_IDS
    checked = check_program(export(Positions(), (ids,)), (ids,))
    assert checked.ops("rlx.gather") and checked.ops("rlx.cumsum")


def test_gather_of_runtime_values_at_runtime_indices_is_one_line():
    f = Fn(lambda x, ids: torch.gather(x, 1, ids))
    args = (randn(1, 6), ROW_IDS)
    with pytest.raises(XdslAneError) as e:
        xdsl_ane.from_torch(export(f, args))
    message = str(e.value)
    assert "\n" not in message
    assert "gather" in message and "gather_along_axis is not supported" in message


def test_index_out_of_range_names_the_axis():
    """A constant index beyond its axis (export does not run the op)."""
    f = Fn(lambda x: torch.index_select(x, 1, torch.tensor([0, 9])))
    with pytest.raises(
        XdslAneError, match="index 9 is out of range for axis 1 of size 4"
    ):
        xdsl_ane.from_torch(export(f, (randn(2, 4),)))


def test_padding_mask_on_a_decoder_matches_where_a_key_is_visible():
    """A left-padded Llama with a runtime attention_mask: positions that see
    at least one key match transformers; the padded queries, which see none,
    are the mean of the values here and 0 in torch's sdpa (both are unused)."""
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=100,
    )
    model = transformers.LlamaModel(config).eval()
    ids = torch.randint(3, 100, (1, 8))
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1]])
    kwargs = {"attention_mask": mask, "use_cache": False}
    program = export(model, (ids,), kwargs)
    with torch.no_grad():
        expected = program.module()(ids, **kwargs)[0].numpy()
    imported = xdsl_ane.from_torch(program)
    assert imported.input_names == ["input_ids", "attention_mask"]
    (actual,) = run_function(
        imported.module, imported.numpy_inputs(ids, mask), imported.weights
    )
    visible = mask[0].bool().numpy()
    error = np.abs(actual[0, visible] - expected[0, visible]).max()
    assert error < 1e-5 * np.abs(expected).max()


PADS = {
    "constant": lambda x: F.pad(x, (1, 2, 0, 3), value=0.5),
    "reflect": lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
    "replicate": lambda x: F.pad(x, (0, 3, 2, 0), mode="replicate"),
}


@pytest.mark.parametrize("mode", sorted(PADS))
def test_pad_as_exported(mode):
    """aten.pad, as torch.export writes F.pad before any decomposition."""
    x = randn(1, 3, 6, 7)
    program = export(Fn(PADS[mode]), (x,))
    assert any(n.target is torch.ops.aten.pad.default for n in program.graph.nodes)
    assert not needs_decomposition(program)  # read by its own translation
    checked = check_program(program, (x,))
    assert checked.ops("rlx.pad")


def test_unflatten_as_exported():
    x = randn(1, 8, 12)
    program = export(Fn(lambda t: t.unflatten(2, (3, 4)).sum(-1) * 2), (x,))
    assert any(n.target is torch.ops.aten.unflatten.int for n in program.graph.nodes)
    check_program(program, (x,))


def test_strided_patch_merging_imports_the_same_every_time():
    """Swin's patch merging reads four strided slices, each a gather of a
    constant index built and freed during the import. A cache keyed by
    `id()` of those temporaries served a later slice an earlier one's index
    in some imports of a process (fp32 error ~1), so: import it again and
    again in one process, each compared with torch."""

    def merge(x):
        parts = [x[:, i::2, j::2] for i, j in ((0, 0), (1, 0), (0, 1), (1, 1))]
        return torch.cat(parts, -1)

    x = randn(1, 16, 16, 4)
    program = export(Fn(merge), (x,))
    expected = merge(x).numpy()
    for _ in range(8):
        imported = xdsl_ane.from_torch(program)
        (actual,) = run_function(
            imported.module, imported.numpy_inputs(x), imported.weights
        )
        np.testing.assert_array_equal(actual, expected)
