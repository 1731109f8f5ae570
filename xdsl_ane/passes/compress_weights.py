"""`mil-compress-weights`: weights that stay compressed on the ANE.

The float weight consts of matmuls, linears and convs (and, when asked, of
the embedding's gather) of at least `min-size` elements become iOS18
constexpr ops, which Core ML decompresses at load time:

- `int8`, `int4`: `constexpr_blockwise_shift_scale(data, scale)`, w ≈ scale ·
  q with symmetric q (`compression.linear`), one scale per tensor, per
  output channel (`per-channel`, the default for int8) or per block of
  `group` input channels of each output channel (`per-block`, group 32 by
  default for int4);
- `lut2`, `lut3`, `lut4`, `lut6`, `lut8`: `constexpr_lut_to_dense(indices, lut)`, w ≈
  lut[index] with a k-means lookup table of 2^n values (`compression.kmeans`)
  per tensor or per group of `group` output channels
  (`per-grouped-channel`, group 16 by default; `per-channel` is group 1).

The output channels are those of the consumer: axis 0 of a conv or linear
weight (and of an embedding table), axis 1 of a conv_transpose's, the last
axis of a matmul's `y` (the one before with `transpose_y`). `head=MODE|none|same` sets the LM head's
weight apart (named `lm_head` or `head`, or `output` at the front, or shared
with the embedding), `embedding=MODE|none` the embedding table; norms and
other small or non-matmul weights stay as they are.

Weight consts need their data: `xdsl-ane compile --compress` and
`xdsl_ane.compile(compress=...)` hand the pass the weights, and the
compressed tensors join them under `NAME.indices` / `NAME.lut` or
`NAME.data` / `NAME.scale`. Run as a plain pass (`xdsl-opt`), only inline
consts are compressed and a weight const is an error. Each compressed
weight's relative error ‖w − ŵ‖ / ‖w‖ is reported (`CompressionReport`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.diagnostics import did_you_mean
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy, dense_to_numpy
from xdsl_ane.dialects.typing import (
    STORAGE_ELEMENT_TYPES,
    bool_prop,
    fmt_shape,
    ints_prop,
    is_float,
    tensor,
)
from xdsl_ane.interpreter.core import InterpretationError
from xdsl_ane.locations import copy_location, where
from xdsl_ane.passes.compression import palettize, quantize_linear
from xdsl_ane.weights.store import WeightStore

PASS = "mil-compress-weights"
MODES = {
    "int8": 8,
    "int4": 4,
    "lut2": 2,
    "lut3": 3,
    "lut4": 4,
    "lut6": 6,
    "lut8": 8,
}
"""Each mode's bits per weight (MIL's LUT indices are uint1 to uint4,
uint6 or uint8: no lut5 or lut7)."""
GRANULARITIES = ("per-tensor", "per-channel", "per-grouped-channel", "per-block")
MODE_GRANULARITIES = {
    "int": ("per-tensor", "per-channel", "per-block"),
    "lut": ("per-tensor", "per-channel", "per-grouped-channel"),
}
DEFAULT_GRANULARITY = {
    "int8": "per-channel",
    "int4": "per-block",
    **{f"lut{n}": "per-grouped-channel" for n in (2, 3, 4, 6, 8)},
}
DEFAULT_GROUP = {"per-grouped-channel": 16, "per-block": 32}
DEFAULT_MIN_SIZE = 2048
"""coremltools' default weight threshold (elements)."""
HEAD_NAMES = ("lm_head", "head")


def is_lut(mode: str) -> bool:
    return mode.startswith("lut")


@dataclass(frozen=True)
class CompressionSetting:
    """A mode, its granularity and group size, all checked."""

    mode: str
    granularity: str
    group: int

    @classmethod
    def make(
        cls, mode: str, granularity: str = "auto", group: int = 0
    ) -> CompressionSetting:
        """The setting with defaults filled in; unknown or inapplicable
        values are a `ValueError` with a one-line message."""
        if mode not in MODES:
            raise ValueError(
                f"unknown compression mode '{mode}'{did_you_mean(mode, MODES)} "
                f"(modes: {', '.join(MODES)})"
            )
        if granularity in ("auto", ""):
            granularity = DEFAULT_GRANULARITY[mode]
        if granularity not in GRANULARITIES:
            raise ValueError(
                f"unknown granularity '{granularity}'"
                f"{did_you_mean(granularity, GRANULARITIES)} (granularities: "
                f"{', '.join(GRANULARITIES)})"
            )
        allowed = MODE_GRANULARITIES["lut" if is_lut(mode) else "int"]
        if granularity not in allowed:
            raise ValueError(
                f"granularity {granularity} does not apply to {mode} (it takes "
                f"{', '.join(allowed)})"
            )
        if granularity == "per-channel" and is_lut(mode):
            granularity, group = "per-grouped-channel", 1
        if granularity in DEFAULT_GROUP:
            group = group or DEFAULT_GROUP[granularity]
            if group < 1:
                raise ValueError(f"group {group} must be a positive number")
        elif group:
            raise ValueError(
                f"a group applies only to per-grouped-channel and per-block, not {granularity}"
            )
        return cls(mode, granularity, group)

    @classmethod
    def parse(cls, text: str) -> CompressionSetting:
        """`MODE[:GRANULARITY[:GROUP]]` (the `--compress` argument)."""
        parts = text.split(":")
        if len(parts) > 3 or not parts[0]:
            raise ValueError(
                f"'{text}': expected MODE[:GRANULARITY[:GROUP]] (e.g. lut4, "
                "int8:per-channel, int4:per-block:32)"
            )
        group = 0
        if len(parts) == 3:
            try:
                group = int(parts[2])
            except ValueError:
                raise ValueError(f"group '{parts[2]}' is not a number") from None
            if group < 1:
                raise ValueError(f"group {group} must be a positive number")
        return cls.make(parts[0], parts[1] if len(parts) > 1 else "auto", group)

    def text(self) -> str:
        group = f" {self.group}" if self.granularity in DEFAULT_GROUP else ""
        return f"{self.mode} {self.granularity}{group}"

    @property
    def bits(self) -> int:
        return MODES[self.mode]


@dataclass(frozen=True)
class CompressionPlan:
    """The setting of each kind of weight: linear layers, the LM head (None:
    left as is) and the embedding table (None: left as is)."""

    linear: CompressionSetting
    head: CompressionSetting | None
    embedding: CompressionSetting | None
    min_size: int = DEFAULT_MIN_SIZE
    per_weight: Mapping[str, CompressionSetting | None] | None = None
    """Where given (`--compress auto:BITS`), each linear weight's own
    setting by name (absent or None: left as is), in place of `linear`
    and `head`."""


@dataclass
class WeightCompression:
    """What happened to one weight."""

    name: str
    shape: tuple[int, ...]
    setting: CompressionSetting
    relative_error: float
    """‖w − ŵ‖ / ‖w‖ of the decompressed weight (0 for an all-zero one)."""
    bytes_before: int
    bytes_after: int


@dataclass
class CompressionReport:
    """The compressed weights of a module, in program order."""

    weights: list[WeightCompression] = field(default_factory=list)
    auto: Any = None
    """`--compress auto:BITS`'s plan (`api.auto_bits.AutoReport`)."""

    def summary(self) -> str:
        """One line: how many weights, their size before and after, and
        their reconstruction errors (mean and worst)."""
        if not self.weights:
            return "compression: no weight was large enough to compress"
        before = sum(w.bytes_before for w in self.weights)
        after = sum(w.bytes_after for w in self.weights)
        settings = sorted({w.setting.text() for w in self.weights})
        worst = max(self.weights, key=lambda w: w.relative_error)
        mean = float(np.mean([w.relative_error for w in self.weights]))
        line = (
            f"compression: {len(self.weights)} weights ({'; '.join(settings)}), "
            f"{before:,} -> {after:,} bytes; relative error mean {mean:.4f}, "
            f"max {worst.relative_error:.4f} ('{worst.name}')"
        )
        return line if self.auto is None else line + "\n  " + self.auto.summary()


# --- which weights, along which axes ---------------------------------------------


@dataclass(frozen=True)
class WeightUse:
    """How a weight const is used: 'linear' (a matmul, linear or conv
    weight) or 'embedding' (a gather table), and its output / input axes."""

    kind: str
    out_axis: int
    in_axis: int


def weight_use(const: mil.ConstOp) -> WeightUse | None:
    """The use that makes a const compressible: as the table of a gather
    (which wins when the const is shared with the head), else as the weight
    of a conv or linear, or an operand of a matmul."""
    rank = len(const.result.type.get_shape())  # type: ignore[union-attr]
    uses: list[WeightUse] = []
    for use in const.result.uses:
        user = use.operation
        if isinstance(user, mil.GatherOp) and user.x is const.result and rank == 2:
            return WeightUse("embedding", 0, 1)
        if isinstance(user, mil.ConvOp | mil.LinearOp) and user.weight is const.result:
            uses.append(WeightUse("linear", 0, 1))
        elif isinstance(user, mil.ConvTransposeOp) and user.weight is const.result:
            # [C_in, C_out/groups, *K]: the output channels are axis 1.
            uses.append(WeightUse("linear", 1, 0))
        elif isinstance(user, mil.MatmulOp) and rank >= 2:
            if user.y is const.result:
                transposed = bool_prop(user.properties, "transpose_y")
                uses.append(
                    WeightUse(
                        "linear", -2 if transposed else -1, -1 if transposed else -2
                    )
                )
            elif user.x is const.result:
                transposed = bool_prop(user.properties, "transpose_x")
                uses.append(
                    WeightUse(
                        "linear", -1 if transposed else -2, -2 if transposed else -1
                    )
                )
    return uses[0] if uses else None


def value_name(text: str) -> str:
    """An SSA name hint from a weight name: characters xDSL does not allow
    in names (a chunk's `[0:100]`) become `_`."""
    name = re.sub(r"[^A-Za-z0-9_$.-]", "_", text.replace(".", "_"))
    return name if name and not name[0].isdigit() else f"w_{name}"


def is_head_name(name: str) -> bool:
    parts = name.split(".")
    return any(p in HEAD_NAMES for p in parts) or parts[0] == "output"


# --- compressing one tensor ------------------------------------------------------


@dataclass
class Compressed:
    """The const inputs of the constexpr op (arrays and element types, in
    MIL's input order) and the decompression's squared error."""

    op: type[mil.MilOp]
    inputs: list[tuple[str, np.ndarray, object]]
    squared_error: float
    stored_bits: int


def compress_array(
    value: np.ndarray, setting: CompressionSetting, use: WeightUse, name: str
) -> Compressed:
    """`value` compressed as `setting` says, along `use`'s axes."""
    rank = value.ndim
    out_axis, in_axis = use.out_axis % rank, use.in_axis % rank
    channels, inputs = value.shape[out_axis], value.shape[in_axis]
    group = setting.group
    if setting.granularity == "per-grouped-channel" and channels % group:
        raise PassFailedException(
            f"{PASS}: group {group} does not divide the {channels} output channels "
            f"of weight '{name}' {fmt_shape(value.shape)} (per-grouped-channel)"
        )
    if setting.granularity == "per-block" and inputs % group:
        raise PassFailedException(
            f"{PASS}: block size {group} does not divide the {inputs} input channels "
            f"of weight '{name}' {fmt_shape(value.shape)} (per-block)"
        )
    if is_lut(setting.mode):
        return compress_lut(value, setting, out_axis)
    return compress_linear(value, setting, out_axis, in_axis)


def compress_lut(
    value: np.ndarray, setting: CompressionSetting, out_axis: int
) -> Compressed:
    """Rows of `group` output channels (or the whole tensor) share a LUT;
    the LUT has shape [1, .., C / group at out_axis, .., 1, 2^n, 1]."""
    moved = np.moveaxis(value, out_axis, 0)
    rows = 1 if setting.granularity == "per-tensor" else moved.shape[0] // setting.group
    result = palettize(
        np.ascontiguousarray(moved).reshape(rows, -1), setting.bits, value.dtype
    )
    indices = np.moveaxis(result.indices.reshape(moved.shape), 0, out_axis)
    lut_shape = [1] * value.ndim + [2**setting.bits, 1]
    lut_shape[out_axis] = rows
    lut = result.lut.reshape(lut_shape)
    index_type = STORAGE_ELEMENT_TYPES[f"ui{setting.bits}"]
    return Compressed(
        mil.ConstexprLutToDenseOp,
        [("indices", np.ascontiguousarray(indices), index_type), ("lut", lut, None)],
        float(result.squared_error.sum()),
        value.size * setting.bits + lut.size * value.dtype.itemsize * 8,
    )


def compress_linear(
    value: np.ndarray, setting: CompressionSetting, out_axis: int, in_axis: int
) -> Compressed:
    """Blocks of one scale: the tensor, an output channel, or `group`
    input channels of an output channel (the whole of every other axis)."""
    moved = np.moveaxis(value, (out_axis, in_axis), (0, 1))
    channels, inputs = moved.shape[:2]
    rest = math.prod(moved.shape[2:])
    if setting.granularity == "per-tensor":
        counts = (1, 1)
    elif setting.granularity == "per-channel":
        counts = (channels, 1)
    else:
        counts = (channels, inputs // setting.group)
    # [C, I, R] -> [C', c, I', i, R] -> [C', I', c·i·R]: one row per block.
    blocked = np.ascontiguousarray(moved).reshape(
        counts[0], channels // counts[0], counts[1], inputs // counts[1], rest
    )
    rows = blocked.transpose(0, 2, 1, 3, 4).reshape(counts[0] * counts[1], -1)
    result = quantize_linear(rows, setting.bits)
    data = (
        result.data.reshape(
            counts[0], counts[1], channels // counts[0], inputs // counts[1], rest
        )
        .transpose(0, 2, 1, 3, 4)
        .reshape(moved.shape)
    )
    data = np.moveaxis(data, (0, 1), (out_axis, in_axis))
    scale_moved = result.scale.reshape(counts + (1,) * (value.ndim - 2))
    scale = np.moveaxis(scale_moved, (0, 1), (out_axis, in_axis))
    data_type = (
        STORAGE_ELEMENT_TYPES["i4"] if setting.bits == 4 else mil.MIL_DTYPES["int8"]
    )
    return Compressed(
        mil.ConstexprBlockwiseShiftScaleOp,
        [
            ("data", np.ascontiguousarray(data), data_type),
            ("scale", np.ascontiguousarray(scale), None),
        ],
        float(result.squared_error.sum()),
        value.size * setting.bits + scale.size * value.dtype.itemsize * 8,
    )


# --- rewriting the module --------------------------------------------------------


COMPRESSION_THREADS = 2
"""Threads compressing weights at once (one per core of the machine the
project is measured on): the k-means and quantization run in numpy, most
of it without the GIL."""


@dataclass
class CompressionJob:
    """One distinct weight to compress, with what it is read as."""

    const: mil.ConstOp
    name: str
    setting: CompressionSetting
    use: WeightUse


def compress_module(
    module: builtin.ModuleOp,
    plan: CompressionPlan,
    weights: MutableMapping[str, np.ndarray] | None,
) -> CompressionReport:
    """Rewrites the module's compressible weight consts; compressed weight
    tensors are added to `weights` (required when the module has weight
    consts to compress). The distinct weights are compressed on
    COMPRESSION_THREADS threads, then the consts rewritten in order, so
    that the result does not depend on the threads."""
    store = WeightStore(weights) if weights is not None else None
    jobs: dict[object, CompressionJob] = {}
    uses: list[tuple[mil.ConstOp, object, str]] = []
    for const in [op for op in module.walk() if isinstance(op, mil.ConstOp)]:
        t = const.result.type
        assert isinstance(t, TensorType)
        if not is_float(t.element_type) or math.prod(t.get_shape()) < plan.min_size:
            continue
        use = weight_use(const)
        if use is None:
            continue
        name = (
            const.weight.data
            if const.weight is not None
            else (const.result.name_hint or "const")
        )
        setting = choose_setting(plan, use, name)
        if setting is None:
            continue
        key = const_key(const)
        jobs.setdefault(key, CompressionJob(const, name, setting, use))
        uses.append((const, key, name))

    def compress(job: CompressionJob) -> tuple[Compressed, WeightCompression]:
        value = const_data(job.const, store, job.name)
        compressed = compress_array(value, job.setting, job.use, job.name)
        norm = squared_norm(value)
        return compressed, WeightCompression(
            job.name,
            value.shape,
            job.setting,
            math.sqrt(compressed.squared_error / norm) if norm else 0.0,
            value.size * value.dtype.itemsize,
            -(-compressed.stored_bits // 8),
        )

    if len(jobs) > 1 and COMPRESSION_THREADS > 1:
        with ThreadPoolExecutor(COMPRESSION_THREADS) as pool:
            results = list(pool.map(compress, jobs.values()))
    else:
        results = [compress(job) for job in jobs.values()]
    report = CompressionReport()
    done: dict[object, tuple[list[tuple[str, object]], Compressed]] = {}
    for (key, job), (compressed, record) in zip(jobs.items(), results):
        sources = shared_sources(compressed, job, jobs, done, weights)
        if sources is None:
            sources = const_sources(compressed, job.name, weights)
        done[key] = (sources, compressed)
        report.weights.append(record)
    for const, key, name in uses:
        sources, compressed = done[key]
        replace_const(const, compressed, sources, name)
    return report


def choose_setting(
    plan: CompressionPlan, use: WeightUse, name: str
) -> CompressionSetting | None:
    if use.kind == "embedding":
        return plan.embedding
    if plan.per_weight is not None:
        return plan.per_weight.get(name)
    if is_head_name(name):
        return plan.head
    return plan.linear


def const_key(const: mil.ConstOp) -> object:
    """What identifies a const's content: a weight and its view (consts of
    the same weight share their compressed tensors), else the op."""
    if const.weight is None:
        return const
    perm = ints_prop(const.properties, "perm")
    return (const.weight.data, const.file_shape(), perm, const.result.type)


NORM_BLOCK = 1 << 20
"""The elements `squared_norm` widens to float64 at a time."""


def squared_norm(value: np.ndarray) -> float:
    """Σ x² of `value` in float64, NORM_BLOCK elements at a time (not a
    float64 copy of the whole tensor and another of its squares)."""
    flat = value.reshape(-1)
    total = 0.0
    for start in range(0, flat.size, NORM_BLOCK):
        block = flat[start : start + NORM_BLOCK].astype(np.float64)
        # einsum, not np.dot: BLAS's threads would spin beside the
        # compression threads (12 core-s more at 3B with lut4)
        total += float(np.einsum("i,i->", block, block))
    return total


def const_data(const: mil.ConstOp, store: WeightStore | None, name: str) -> np.ndarray:
    if const.val is not None:
        return dense_to_numpy(const.val)
    if store is None:
        raise PassFailedException(
            f"{where(const)}{PASS}: weight const '{name}' needs its data; the pass "
            "gets the weights from xdsl-ane compile --compress or "
            "xdsl_ane.compile(compress=...)"
        )
    try:
        return store.get(
            name,
            const.result.type,
            f"{PASS}: mil.const",
            file_shape=const.file_shape(),
            perm=ints_prop(const.properties, "perm"),
        )
    except InterpretationError as e:
        raise PassFailedException(f"{where(const)}{e}") from None


def shared_sources(
    compressed: Compressed,
    job: CompressionJob,
    jobs: dict[object, CompressionJob],
    done: dict[object, tuple[list[tuple[str, object]], Compressed]],
    weights: MutableMapping[str, np.ndarray] | None,
) -> list[tuple[str, object]] | None:
    """The weights of a job done before that compressed the same weight to
    the same values in another shape (a tied table's gather [V, D] and head
    conv [V, D, 1, 1]), each read through a reshape: the blob then holds
    the compressed table once, as it holds the fp16 one. None if none."""
    if weights is None or job.const.weight is None:
        return None
    for key, (sources, earlier) in done.items():
        other = jobs[key]
        if (
            other.const.weight is not None
            and other.const.weight.data == job.const.weight.data
            and other.setting == job.setting
            and earlier.op is compressed.op
            and all(
                ours[2] == theirs[2]
                and ours[1].dtype == theirs[1].dtype
                and np.array_equal(ours[1].reshape(-1), theirs[1].reshape(-1))
                for ours, theirs in zip(compressed.inputs, earlier.inputs)
            )
        ):
            return sources  # each (name, stored shape): read with a reshape
    return None


def const_sources(
    compressed: Compressed,
    name: str,
    weights: MutableMapping[str, np.ndarray] | None,
) -> list[tuple[str, object]]:
    """Where each input of the constexpr op comes from: a new weight (its
    name and the shape it is stored in) when there are weights, else an
    inline value."""
    sources: list[tuple[str, object]] = []
    for input_name, array, _ in compressed.inputs:
        if weights is None:
            sources.append(("inline", array))
            continue
        weight, n = f"{name}.{input_name}", 0
        while weight in weights:
            n += 1
            weight = f"{name}.{input_name}_{n}"
        weights[weight] = array
        sources.append(("weight", (weight, array.shape)))
    return sources


def replace_const(
    const: mil.ConstOp,
    compressed: Compressed,
    sources: list[tuple[str, object]],
    name: str,
) -> None:
    """Puts consts of the compressed inputs and the constexpr op in front of
    `const` and replaces it."""
    float_type = const.result.type.element_type  # type: ignore[union-attr]
    new_ops: list[Operation] = []
    values: list[SSAValue] = []
    for (input_name, array, element_type), (kind, source) in zip(
        compressed.inputs, sources
    ):
        element_type = element_type or float_type
        if kind == "weight":  # read through a reshape where stored otherwise
            assert isinstance(source, tuple)
            weight, stored = source
            op = mil.ConstOp.from_weight(
                weight, tensor(array.shape, element_type), weight_shape=stored
            )
        else:
            op = mil.ConstOp(dense_from_numpy(array, element_type))
        op.result.name_hint = value_name(f"{name}_{input_name}")
        copy_location(op, const)
        new_ops.append(op)
        values.append(op.result)
    decompressed = compressed.op(*values)
    decompressed.result.name_hint = const.result.name_hint or value_name(name)
    copy_location(decompressed, const)
    new_ops.append(decompressed)
    Rewriter.insert_op(new_ops, InsertPoint.before(const))
    const.result.replace_all_uses_with(decompressed.result)
    Rewriter.erase_op(const)


# --- the pass --------------------------------------------------------------------


@dataclass(frozen=True)
class MilCompressWeightsPass(ModulePass):
    """Compresses the weights of matmuls, linears and convs of at least
    `min-size` elements to iOS18 constexpr ops: `mode` int8, int4 (shift
    and scale) or lut4, lut6, lut8 (k-means palettes), `granularity`
    per-tensor, per-channel, per-grouped-channel (lut) or per-block (int),
    `group` channels per LUT or per scale block; `head` and `embedding`
    set the LM head and embedding table apart (a mode, `none`, or `same`
    as the rest)."""

    name = "mil-compress-weights"

    mode: str = "lut4"
    granularity: str = "auto"
    group: int = 0
    min_size: int = DEFAULT_MIN_SIZE
    head: str = "same"
    embedding: str = "none"

    def plan(self) -> CompressionPlan:
        """The checked settings; a bad one fails the pass in one line."""
        try:
            linear = CompressionSetting.make(self.mode, self.granularity, self.group)
            head = self.kind_setting("head", self.head, linear)
            embedding = self.kind_setting("embedding", self.embedding, linear)
        except ValueError as e:
            raise PassFailedException(f"{PASS}: {e}") from None
        if self.min_size < 0:
            raise PassFailedException(f"{PASS}: min-size {self.min_size} is negative")
        return CompressionPlan(linear, head, embedding, self.min_size)

    @staticmethod
    def kind_setting(
        option: str, mode: str, linear: CompressionSetting
    ) -> CompressionSetting | None:
        if mode == "none":
            return None
        if mode == "same":
            return linear
        if mode not in MODES:
            raise ValueError(
                f"{option}={mode}: expected none, same or a mode"
                f"{did_you_mean(mode, [*MODES, 'none', 'same'])}"
            )
        # The granularity of the rest where it applies to this mode.
        family = MODE_GRANULARITIES["lut" if is_lut(mode) else "int"]
        if linear.granularity in family:
            return CompressionSetting.make(mode, linear.granularity, linear.group)
        return CompressionSetting.make(mode)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        compress_module(op, self.plan(), None)


@dataclass(frozen=True)
class CompressWeightsWithData(MilCompressWeightsPass):
    """`mil-compress-weights` as `xdsl_ane.compile` runs it: with the data of
    the module's weight consts (`weights`, which gains the compressed
    tensors), keeping its report (`reports`) and, with `keep_uncompressed`,
    the module as it was before (`uncompressed`). Not registered: a pass
    spec cannot hold arrays."""

    weights: MutableMapping[str, np.ndarray] = field(
        default_factory=dict, compare=False, repr=False
    )
    keep_uncompressed: bool = False
    reports: list[CompressionReport] = field(
        default_factory=list, init=False, compare=False, repr=False
    )
    uncompressed: list[builtin.ModuleOp] = field(
        default_factory=list, init=False, compare=False, repr=False
    )

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        plan = self.plan()
        if self.keep_uncompressed:
            self.uncompressed.append(op.clone())
        self.reports.append(compress_module(op, plan, self.weights))
