"""The structured ATen ops real models leave after torch.export, one small
module per op against torch (fp32, the fp16 package in the interpreter,
coremltools' loader): writes at constant positions (`copy_` into a slice,
`slice_scatter`, `select_scatter`, `index_put`, `scatter`, `scatter_add`),
`grid_sampler_2d`, `unfold` / `fold`, the real FFT with `view_as_real` and
`abs` (spectrogram front ends), `fake_quantize_per_tensor_affine`,
bidirectional `lstm` and `pixel_shuffle` / `pixel_unshuffle`."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch_check import Fn, check_program, export

import xdsl_ane
from xdsl_ane.errors import XdslAneError

# Exports torch programs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def check(f, *inputs, present=(), absent=()):
    """f's program against torch; the rlx ops it must and must not have."""
    checked = check_program(export(Fn(f), tuple(inputs)), tuple(inputs))
    names = {op.name for op in checked.imported.module.walk()}
    assert set(present) <= names, set(present) - names
    assert not set(absent) & names, set(absent) & names
    return checked


# --- writes at constant positions ------------------------------------------------


def copy_into_slice(x):
    y = x * 2
    y[:, 1:3] = x[:, :2] + 1
    return y


def fill_a_slice(x):
    y = x * 2
    y[:, :, 2:4] = 0
    return y


def fill_by_mask(x):
    y = x * 2
    y[..., torch.arange(6) > 2] = 1.5
    return y


def add_at_elements(x):
    y = x * 2
    y[:, :, [1, 3], [2, 4]] += x[:, :, 0, :2]
    return y


def write_scattered_rows(x):
    y = x * 2
    y[:, [0, 2, 4, 6, 7, 9, 11]] = x[:, :7] * 3
    return y


def add_a_number_at_repeated_rows(x):
    index = (torch.tensor([0, 0, 2]),)
    return torch.index_put(x * 2, index, torch.tensor(0.5), accumulate=True)


SCATTER_INDEX = torch.tensor([[2, 0, 1, 2], [0, 1, 1, 0]])

WRITES = {
    # name: (f, inputs, ops the program must have, ops it must not)
    "copy_into_slice": (copy_into_slice, [randn(1, 4, 6)], {"rlx.concat"}, set()),
    "fill_a_slice": (fill_a_slice, [randn(1, 3, 6, 5)], {"rlx.where"}, {"rlx.concat"}),
    "fill_by_mask": (fill_by_mask, [randn(1, 3, 6)], {"rlx.where"}, set()),
    "add_at_elements": (add_at_elements, [randn(1, 2, 5, 6)], {"rlx.matmul"}, set()),
    "index_put_accumulate_repeated": (
        add_a_number_at_repeated_rows,
        [randn(4, 6)],
        {"rlx.matmul", "rlx.add"},
        set(),
    ),
    "scattered_rows": (
        write_scattered_rows,
        [randn(1, 12, 4)],
        {"rlx.matmul", "rlx.where"},
        {"rlx.gather"},
    ),
    "slice_scatter_step": (
        lambda x: torch.slice_scatter(x, x[:, :, :3] * 2, 2, 1, 7, 2),
        [randn(1, 3, 8)],
        set(),
        {"rlx.gather"},
    ),
    "select_scatter": (
        lambda x: torch.select_scatter(x, x[:, 0] * 2, 1, 2),
        [randn(1, 4, 5)],
        {"rlx.concat"},
        set(),
    ),
    "scatter_rows": (
        lambda x: torch.zeros(3, 4).scatter(0, torch.tensor([[2, 0, 1, 2]]), x[:1]),
        [randn(3, 4)],
        set(),
        set(),
    ),
    "scatter_elements": (
        lambda x: x.scatter(1, SCATTER_INDEX, x[:, :4] * 2),
        [randn(2, 5)],
        set(),
        set(),
    ),
    "scatter_value": (
        lambda x: x.scatter(1, SCATTER_INDEX, 0.25),
        [randn(2, 5)],
        {"rlx.where"},
        set(),
    ),
    "scatter_add_duplicates": (
        lambda x: x.scatter_add(1, SCATTER_INDEX, x[:, 1:] + 1),
        [randn(2, 5)],
        {"rlx.matmul"},
        set(),
    ),
    "scatter_add_rows": (
        lambda x: x.scatter_add(0, torch.tensor([[1], [1], [0]]).expand(3, 4), x),
        [randn(3, 4)],
        {"rlx.matmul"},
        set(),
    ),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_at_constant_positions(name):
    f, inputs, present, absent = WRITES[name]
    check(f, *inputs, present=present, absent=absent)


def test_write_at_runtime_positions_is_refused():
    def f(x, ids):
        return x.scatter(1, ids, 1.0)

    ids = torch.tensor([[0, 2]])
    with pytest.raises(XdslAneError, match="constant index"):
        xdsl_ane.from_torch(export(Fn(f), (randn(1, 4), ids)))


# --- grid_sample ---------------------------------------------------------------------

GRID_MODES = [
    (mode, padding, corners)
    for mode in ("bilinear", "nearest")
    for padding in ("zeros", "border")
    for corners in (False, True)
]


@pytest.mark.parametrize("mode,padding,align_corners", GRID_MODES)
def test_grid_sample_at_a_runtime_grid(mode, padding, align_corners):
    """The grid reaches past [−1, 1] so that padding matters."""

    def f(x, grid):
        return torch.nn.functional.grid_sample(
            x, grid, mode=mode, padding_mode=padding, align_corners=align_corners
        )

    grid = rand(1, 3, 5, 2, seed=1) * 2.4 - 1.2
    checked = check(f, randn(1, 3, 4, 6), grid, present={"rlx.matmul"})
    assert not checked.ops("rlx.gather")


def test_grid_sample_at_a_constant_grid_is_one_matmul():
    grid = rand(1, 4, 4, 2, seed=2) * 2 - 1

    def f(x):
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)

    checked = check(f, randn(1, 2, 5, 5))
    assert len(checked.ops("rlx.matmul")) == 1


def test_grid_sample_bicubic_is_refused():
    def f(x, grid):
        return torch.nn.functional.grid_sample(x, grid, mode="bicubic")

    program = export(Fn(f), (randn(1, 1, 4, 4), rand(1, 2, 2, 2)))
    with pytest.raises(XdslAneError, match="only bilinear and nearest"):
        xdsl_ane.from_torch(program)


# --- unfold and fold ------------------------------------------------------------------

PATCHES = {
    "unfold_3x3_padded": (
        lambda x: torch.nn.functional.unfold(x, 3, padding=1),
        [randn(1, 2, 5, 6)],
        {"rlx.conv"},
    ),
    "unfold_strided_dilated": (
        lambda x: torch.nn.functional.unfold(x, (2, 3), dilation=(2, 1), stride=2),
        [randn(1, 3, 7, 8)],
        {"rlx.conv"},
    ),
    "fold_overlapping": (
        lambda c: torch.nn.functional.fold(c, (5, 6), 3, padding=1),
        [randn(1, 18, 30)],
        {"rlx.conv_transpose"},
    ),
    "fold_strided_with_a_remainder": (
        lambda c: torch.nn.functional.fold(c, (7, 6), 2, stride=2),
        [randn(1, 8, 9)],
        {"rlx.conv_transpose"},
    ),
    "unfold_then_fold": (
        lambda x: torch.nn.functional.fold(
            torch.nn.functional.unfold(x, 2, stride=2) * 2, (4, 6), 2, stride=2
        ),
        [randn(1, 3, 4, 6)],
        {"rlx.conv", "rlx.conv_transpose"},
    ),
}


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_unfold_and_fold(name):
    f, inputs, present = PATCHES[name]
    check(f, *inputs, present=present, absent={"rlx.gather"})


# --- the real FFT ---------------------------------------------------------------------

WINDOW = torch.hann_window(16)

SIGNALS = {
    "rfft_view_as_real": (
        lambda s: torch.view_as_real(torch.fft.rfft(s)),
        [randn(1, 16)],
    ),
    "rfft_ortho_abs": (lambda s: torch.fft.rfft(s, norm="ortho").abs(), [randn(1, 12)]),
    "rfft_real_along_axis_1": (
        lambda s: torch.fft.rfft(s, dim=1, norm="forward").real * 2,
        [randn(1, 8, 3)],
    ),
    "stft_magnitude": (
        lambda s: torch.stft(
            s, 16, hop_length=4, window=WINDOW, return_complex=True
        ).abs(),
        [randn(1, 64)],
    ),
    "whisper_power_spectrum": (
        lambda s: (
            torch.stft(s, 16, 4, window=WINDOW, return_complex=True)[..., :-1]
            .abs()
            .pow(2)
        ),
        [randn(1, 48)],
    ),
}


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_real_fft(name):
    f, inputs = SIGNALS[name]
    check(f, *inputs, present={"rlx.matmul"}, absent={"rlx.gather"})


def test_other_complex_uses_are_refused():
    def f(s):
        spectrum = torch.fft.rfft(s)
        return torch.view_as_real(spectrum * spectrum)

    with pytest.raises(XdslAneError, match="complex value read by"):
        xdsl_ane.from_torch(export(Fn(f), (randn(1, 8),)))


# --- fake quantization ----------------------------------------------------------------

FAKE_QUANTIZE = {
    "int8": (0.05, 3, -128, 127),
    "uint8": (0.04, 128, 0, 255),
    "int4_range": (0.3, 0, -8, 7),
}


@pytest.mark.parametrize("name", sorted(FAKE_QUANTIZE))
def test_fake_quantize_per_tensor(name):
    scale, zero_point, low, high = FAKE_QUANTIZE[name]

    def f(x):
        y = torch.fake_quantize_per_tensor_affine(x, scale, zero_point, low, high)
        return y * 2

    # values a third of a step or more from a rounding boundary, so that
    # fp16's rounding of x / scale picks torch's level
    levels = torch.randint(
        -140, 140, (1, 8, 16), generator=torch.Generator().manual_seed(0)
    )
    x = scale * (levels + (rand(1, 8, 16) - 0.5) * 0.6)
    check(f, x, present={"rlx.quantize", "rlx.dequantize"})


# --- LSTM -------------------------------------------------------------------------------


class Recurrent(nn.Module):
    def __init__(self, layers: int, batch_first: bool, bidirectional: bool = True):
        super().__init__()
        self.batch_first = batch_first
        self.lstm = nn.LSTM(
            6, 5, layers, batch_first=batch_first, bidirectional=bidirectional
        )

    def forward(self, x):
        # [T, I] and [L·D, H] in and out: Core ML's [1, C, 1, S] form has no
        # layout for [T, 1, I] or [L·D, 1, H]
        if not self.batch_first:
            x = x.unsqueeze(1)
        output, (h, c) = self.lstm(x)
        return output if self.batch_first else output[:, 0], h[:, 0], c[:, 0]


@pytest.mark.parametrize(
    "layers,batch_first,bidirectional",
    [(1, True, True), (2, True, True), (2, False, True), (1, False, False)],
)
def test_lstm(layers, batch_first, bidirectional):
    torch.manual_seed(0)
    model = Recurrent(layers, batch_first, bidirectional).eval()
    x = randn(1, 4, 6) if batch_first else randn(4, 6)
    checked = check_program(export(model, (x,)), (x,))
    assert checked.ops("rlx.sigmoid")


def test_lstm_with_an_initial_state():
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 3, batch_first=True, bidirectional=True).eval()
    x, h0, c0 = randn(1, 3, 4), randn(2, 3, seed=1), randn(2, 3, seed=2)

    def f(x, h0, c0):
        return lstm(x, (h0.unsqueeze(1), c0.unsqueeze(1)))[0]

    check(f, x, h0, c0, present={"rlx.matmul"})


# --- pixel shuffle ----------------------------------------------------------------------

F = torch.nn.functional

SHUFFLES = {
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [1, 8, 3, 5]),
    "pixel_shuffle_3": (lambda x: F.pixel_shuffle(x, 3), [1, 9, 2, 4]),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), [1, 3, 4, 6]),
    "unshuffle_then_shuffle": (
        lambda x: F.pixel_shuffle(F.pixel_unshuffle(x, 2) * 2, 2),
        [1, 2, 6, 4],
    ),
    # torch's [*, C, H, W]: no batch axis, two batch axes (merged for rlx's
    # [N, C, H, W])
    "pixel_shuffle_unbatched": (lambda x: F.pixel_shuffle(x[0], 2)[None], [1, 8, 3, 5]),
    "pixel_unshuffle_two_batch_axes": (
        lambda x: F.pixel_unshuffle(x.reshape(2, 2, 3, 6, 9), 3).reshape(1, 108, 2, 3),
        [1, 12, 6, 9],
    ),
}


@pytest.mark.parametrize("name", sorted(SHUFFLES))
def test_pixel_shuffle_is_one_op(name):
    """Each pixel_shuffle / pixel_unshuffle is one rlx op of that name (no
    transposes), one MIL op of that name after the pipeline."""
    f, shape = SHUFFLES[name]
    shuffles = {"rlx.pixel_shuffle", "rlx.pixel_unshuffle"}
    checked = check(f, randn(*shape), absent={"rlx.transpose"})
    imported = [op.name for op in checked.imported.module.walk()]
    expected = name.count("shuffle")  # "unshuffle_then_shuffle": two
    assert sum(n in shuffles for n in imported) == expected, imported
    compiled = [op.name for op in checked.compiled.module.walk()]
    assert sum(n in {"mil.pixel_shuffle", "mil.pixel_unshuffle"} for n in compiled) == (
        expected
    )


def test_single_pixel_shuffle_has_no_layout_ops():
    """A module that only shuffles an image compiles to that one op."""
    f, shape = SHUFFLES["pixel_shuffle"]
    checked = check(f, randn(*shape))
    ops = [
        op.name
        for op in checked.compiled.module.walk()
        if op.name.startswith("mil.") and op.name != "mil.const"
    ]
    assert ops == ["mil.pixel_shuffle"]


def test_integer_pixel_shuffle_is_two_rank_4_transposes():
    """rlx's pixel ops take floats (MIL's take fp16 and fp32): an integer
    tensor is shuffled by two rank-4 transposes, exactly."""

    def f(x):
        ids = F.pixel_shuffle((x > 0).int() + 2 * (x > 1).int(), 2)
        return ids.float() + x[:, :2].repeat(1, 1, 2, 2)

    checked = check(
        f,
        randn(1, 8, 3, 5),
        present={"rlx.transpose"},
        absent={"rlx.pixel_shuffle"},
    )
    ranks = [
        len(r.type.get_shape())
        for op in checked.compiled.module.walk()
        for r in op.results
        if hasattr(r.type, "get_shape")
    ]
    assert max(ranks) <= 4
