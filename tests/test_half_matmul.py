"""The f16 matmul's fast path (torch's half kernels, `interpreter/half_matmul`)
against the plain numpy path (float32 BLAS, rounded once), and the
fallback to numpy where torch cannot be imported."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from xdsl_ane.interpreter import convolution, half_matmul, numerics


@pytest.fixture(autouse=True)
def small_products_too(monkeypatch):
    """The fast path for products of any size (by default it takes those
    with an operand of `MIN_ELEMENTS` or more)."""
    monkeypatch.setattr(half_matmul, "MIN_ELEMENTS", 0)


@pytest.fixture
def without_torch(monkeypatch):
    """`import torch` fails (a None entry in sys.modules raises ImportError)."""
    half_matmul.torch_module.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", None)
    yield
    monkeypatch.undo()
    half_matmul.torch_module.cache_clear()


def random(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def assert_same_rule(fast: np.ndarray, a: np.ndarray, b: np.ndarray, bias=None):
    """`fast` is float32 accumulation rounded once, as numpy's path: within a
    last-place rounding of numpy's result, or where a sum cancels, within
    the two orders' float32 error bounds 2·K·2⁻²⁴·Σ|a·b|."""
    plain = numerics.float32_matmul(a, b, bias)
    assert fast.dtype == np.float16 and fast.shape == plain.shape
    k = a.shape[-1]
    magnitude = np.matmul(np.abs(a.astype(np.float32)), np.abs(b.astype(np.float32)))
    largest = np.maximum(np.abs(fast), np.abs(plain))
    bound = np.spacing(largest).astype(np.float32) + 2 * k * 2.0**-24 * magnitude
    difference = np.abs(fast.astype(np.float32) - plain.astype(np.float32))
    assert np.all(difference <= bound)
    assert np.mean(fast == plain) > 0.9


THIN_PRODUCTS = [
    ((1, 3072), (3072, 8192)),  # a decode step's projection
    ((1, 1, 16384), (16384, 512)),  # large K
    ((3, 65536), (65536, 16)),
    ((16, 4096), (4096, 300)),
    ((300, 512), (512, 2)),  # thin in its columns
    ((1, 5, 1, 128), (1, 5, 128, 512)),  # batched, attention's shape
]


@pytest.mark.parametrize("shape_a, shape_b", THIN_PRODUCTS)
def test_fast_path_accumulates_in_float32_as_numpy(shape_a, shape_b):
    pytest.importorskip("torch")
    rng = np.random.default_rng(len(shape_a) + shape_a[-1])
    a = random(rng, *shape_a)
    b = random(rng, *shape_b, scale=shape_b[-2] ** -0.5)
    fast = half_matmul.half_matmul(a, b)
    assert fast is not None
    assert_same_rule(fast, a, b)
    assert np.array_equal(numerics.matmul(a, b), fast)


def test_fast_path_on_transposed_and_strided_operands():
    """q·kᵀ over a cache (a batch of transposed matrices), a conv's weight
    [1, K, N] as a transposed view, and a reversed (negative-stride) one."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    q, keys = random(rng, 1, 6, 1, 128), random(rng, 1, 6, 512, 128, scale=0.1)
    keys_t = np.swapaxes(keys, -1, -2)
    assert_same_rule(half_matmul.half_matmul(q, keys_t), q, keys_t)
    x, w = random(rng, 1, 2, 2048), random(rng, 1, 1024, 2048, scale=0.02)
    w_t = w.transpose(0, 2, 1)
    assert_same_rule(half_matmul.half_matmul(x, w_t), x, w_t)
    reversed_w = w[0, ::-1].T
    assert_same_rule(half_matmul.half_matmul(x, reversed_w), x, reversed_w)


def test_fast_path_sums_in_float32():
    """1 + 8191 terms of 2⁻¹²: fp16 accumulation would stay at 1 (1 + 2⁻¹²
    rounds back to 1), float32's is 3 exactly."""
    pytest.importorskip("torch")
    a = np.full((1, 8192), 2.0**-6, np.float16)
    b = np.full((8192, 4), 2.0**-6, np.float16)
    a[0, 0] = b[0, :] = 1
    assert np.all(half_matmul.half_matmul(a, b) == 3)


def test_fast_path_adds_the_bias_before_its_one_rounding():
    """a·b = 2⁻¹¹ + 2⁻²² (not an f16); 1 + a·b rounds up to 1 + 2⁻¹⁰ once,
    but down to 1 after rounding a·b to f16 first (a tie, to even)."""
    pytest.importorskip("torch")
    a = np.array([[2.0**-11, 2.0**-11]], np.float16)
    b = np.array([[1.0] * 3, [2.0**-11] * 3], np.float16)
    bias = np.ones(3, np.float16)
    fast = half_matmul.half_matmul(a, b, bias)
    assert np.all(fast == np.float16(1 + 2.0**-10))
    assert np.array_equal(fast, numerics.float32_matmul(a, b, bias))
    rng = np.random.default_rng(2)
    x, w = random(rng, 2, 1, 1024), random(rng, 1024, 256, scale=0.03)
    bias = random(rng, 1, 256)
    assert_same_rule(half_matmul.half_matmul(x, w, bias), x, w, bias)


@pytest.mark.parametrize("with_bias", [False, True])
def test_wide_products_widen_b_a_block_at_a_time(with_bias):
    """A prefill's product (64 rows by a weight's transposed view, more
    columns than one widened block holds): float32 GEMMs, rounded once."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = random(rng, 1, 64, 1024)
    weight = random(rng, 5000, 1024, scale=1024**-0.5)
    bias = random(rng, 5000) if with_bias else None
    assert 5000 * 1024 > half_matmul.WIDENED_ELEMENTS
    fast = half_matmul.half_matmul(a, weight.T, bias)
    assert fast is not None
    assert_same_rule(fast, a, weight.T, bias)
    row_major = np.ascontiguousarray(weight[:300].T)
    assert_same_rule(half_matmul.half_matmul(a, row_major), a, row_major)


def test_wide_batched_products():
    """A prefill's attention: q [1, H, S, D] by kᵀ over the cache."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    q, keys = random(rng, 1, 6, 64, 128), random(rng, 1, 6, 512, 128, scale=0.1)
    keys_t = np.swapaxes(keys, -1, -2)
    assert_same_rule(half_matmul.half_matmul(q, keys_t), q, keys_t)


def test_other_products_take_numpy():
    """f32, mixed dtypes, vectors and batched weights with a bias: not this
    path."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = random(rng, 1, 64), random(rng, 64, 8)
    assert half_matmul.half_matmul(a.astype(np.float32), b) is None
    assert half_matmul.half_matmul(a[0], b) is None
    assert half_matmul.half_matmul(a, random(rng, 2, 64, 8), random(rng, 8)) is None


def test_small_products_take_numpy_by_default(monkeypatch):
    """Below `MIN_ELEMENTS` numpy's widening is cheap, and a program of small
    products does not import torch."""
    monkeypatch.undo()
    rng = np.random.default_rng(8)
    a, b = random(rng, 1, 512), random(rng, 512, 512)
    assert a.size < b.size < half_matmul.MIN_ELEMENTS
    assert half_matmul.half_matmul(a, b) is None


def test_torch_threads_are_restored():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    rng = np.random.default_rng(4)
    half_matmul.half_matmul(random(rng, 1, 64), random(rng, 64, 8))
    assert torch.get_num_threads() == threads


def test_without_torch_matmul_and_conv_are_numpys(without_torch):
    rng = np.random.default_rng(5)
    a, b = random(rng, 1, 3072), random(rng, 3072, 512, scale=0.02)
    bias = random(rng, 512)
    assert half_matmul.torch_module() is None
    assert half_matmul.half_matmul(a, b) is None
    assert np.array_equal(
        numerics.matmul(a, b, bias), numerics.float32_matmul(a, b, bias)
    )
    x = random(rng, 1, 256, 1, 1)
    w = random(rng, 128, 256, 1, 1, scale=0.05)
    out = convolution.conv(x, w, bias[:128], [1, 1], [(0, 0), (0, 0)], [1, 1], 1)
    widened = x.astype(np.float32)[0, :, 0, 0] @ w.astype(np.float32)[:, :, 0, 0].T
    expected = (widened + bias[:128].astype(np.float32)).astype(np.float16)
    assert np.array_equal(out[0, :, 0, 0], expected)


def test_conv_is_the_same_with_and_without_torch(monkeypatch):
    """A decode step's 1×1 conv of [1, C, 1, 1] by an f16 weight, with a bias:
    torch's half kernel and numpy's path agree as the rule allows."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = random(rng, 1, 2048, 1, 1)
    w = random(rng, 512, 2048, 1, 1, scale=0.02)
    bias = random(rng, 512)
    args = ([1, 1], [(0, 0), (0, 0)], [1, 1], 1)
    fast = convolution.conv(x, w, bias, *args)
    half_matmul.torch_module.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", None)
    try:
        plain = convolution.conv(x, w, bias, *args)
    finally:
        monkeypatch.undo()
        half_matmul.torch_module.cache_clear()
    x2, w2 = x[0, :, 0, 0][None], w[:, :, 0, 0].T
    assert np.array_equal(
        plain[0, :, 0, 0][None], numerics.float32_matmul(x2, w2, bias)
    )
    assert_same_rule(fast[0, :, 0, 0][None], x2, w2, bias)
