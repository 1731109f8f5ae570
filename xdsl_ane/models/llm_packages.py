"""How a compiled LLM is cut into packages: the weight bytes of each unit
(the embedding, each layer, the head) as the blob will hold them, and the
packages a size limit and `--layers-per-package` give.

A unit's bytes come from the params of its own program (`build_llm` of
that part), each weight counted once: fp16, or as `mil-compress-weights`
stores it where a compression applies (the matmul weights of at least
`min-size` elements: packed indices and their LUTs, or quantized data and
their scales), plus each blob record's metadata and alignment. A tied
model's embedding and head read one table: split, both go into one
package (`embed_head`, functions `embed_prefill` / `embed_decode` beside
`prefill` / `decode`), so that the table is still stored once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl_ane.ane.limits import WEIGHTS_ERROR_BYTES
from xdsl_ane.errors import XdslAneError, from_command_line, option

if TYPE_CHECKING:
    from xdsl.dialects import builtin

    from xdsl_ane.models.llm import Decoder, LlmShape

DEFAULT_MAX_PACKAGE_SIZE = 1 << 30
"""The largest package written without asking: iOS fails to load larger
ones (ANE_FACTS.md); macOS fails past 2 GB."""
PROGRAM_LIMIT = WEIGHTS_ERROR_BYTES
"""The most fp16 weight bytes of one package's program (ane-lint's error,
macOS' limit; the lint runs before the compression): a compressed model's
runs of layers stay within it too."""
RECORD_BYTES = 128
"""A blob record's metadata (64 bytes) and, at most, its alignment."""

SIZE_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_size(text: str) -> int:
    """`--max-package-size`: bytes, or a number with KB, MB, GB or TB
    (powers of 1024; KiB ... accepted too): "1GB", "1.5GB", "500MB"."""
    value = text.strip().upper().replace("IB", "B").replace(" ", "")
    number = value.rstrip("KMGTB")
    unit = value[len(number) :]
    try:
        size = float(number) * SIZE_UNITS[unit]
    except (KeyError, ValueError):
        raise XdslAneError(
            f"{option('max_package_size', text)}: expected bytes or a size like "
            "1GB, 1.5GB, 500MB"
        ) from None
    if not size >= 1:
        raise XdslAneError(
            f"{option('max_package_size', text)}: must be at least 1 byte"
        )
    return int(size)


def size_text(size: float) -> str:
    """Bytes in the largest unit that keeps a number of at least 1 (GB =
    2^30 bytes, as parse_size reads it)."""
    for unit in ("TB", "GB", "MB", "KB"):
        if size >= SIZE_UNITS[unit]:
            return f"{size / SIZE_UNITS[unit]:.3g} {unit}"
    return f"{int(size)} bytes"


def size_option(limit: int) -> str:
    """The package size limit as the caller gave it, for a message:
    `--max-package-size 1 KB`, or from Python `max_package_size=1024 (1
    KB)`."""
    if from_command_line():
        return option("max_package_size", size_text(limit))
    return f"{option('max_package_size', limit)} ({size_text(limit)})"


@dataclass(frozen=True)
class Compression:
    """The `--compress` settings (None: fp16)."""

    mode: str | None = None
    head: str = "same"
    embedding: str = "none"

    def settings(self):
        """(linear, head, embedding) `CompressionSetting`s, None where
        uncompressed."""
        from xdsl_ane.passes.compress_weights import (
            CompressionSetting,
            MilCompressWeightsPass,
        )

        if self.mode is None:
            return None, None, None
        try:
            linear = CompressionSetting.parse(self.mode)
            kind = MilCompressWeightsPass.kind_setting
            return (
                linear,
                kind("head", self.head, linear),
                kind("embedding", self.embedding, linear),
            )
        except ValueError as e:
            raise XdslAneError(f"{option('compress', self.mode)}: {e}") from None


def stored_bytes(shape: tuple[int, ...], setting) -> int:
    """The blob bytes of a weight of `shape` (rows first) stored by
    `setting` (None: fp16): data and its LUTs or scales, each a record."""
    count = math.prod(shape)
    if setting is None:
        return 2 * count + RECORD_BYTES
    from xdsl_ane.passes.compress_weights import is_lut

    rows = shape[0]
    columns = count // rows
    data = -(-count * setting.bits // 8)
    if setting.granularity == "per-tensor":
        groups = 1
    elif setting.granularity == "per-grouped-channel":
        groups = -(-rows // setting.group)
    elif setting.granularity == "per-channel":
        groups = rows
    else:  # per-block
        groups = rows * -(-columns // setting.group)
    if is_lut(setting.mode):
        extra = groups * 2 * 2**setting.bits  # an fp16 LUT per group
    else:
        extra = groups * 3  # an fp16 scale and an offset per group
    return data + extra + 3 * RECORD_BYTES


@dataclass(frozen=True, eq=False)
class Unit:
    """What can go into a package: the embedding, one layer or the head,
    with the blob bytes of each weight it reads, keyed by the weight and
    how it is stored (a tied table is the embedding's and the head's)."""

    name: str
    part: str
    layers: tuple[int, int] | None
    sizes: dict[tuple[str, str], int]
    fp16_sizes: dict[tuple[str, str], int]
    """The same in fp16 (what ane-lint's limit per program counts: it
    runs before the compression)."""

    @property
    def bytes(self) -> int:
        return sum(self.sizes.values())


def unit_weights(
    module: builtin.ModuleOp, part: str, compression: Compression
) -> dict[tuple[str, str], int]:
    """The blob bytes of each weight the module's params read; in the
    embedding's part, as mil-compress-weights tells them apart, a table
    gathered from (the embedding, Gemma 4's per-layer one) as the
    embedding and any other (a projection) as the linear weights."""
    from xdsl_ane.dialects import rlx
    from xdsl_ane.dialects.typing import shape_of

    linear, head, embedding = compression.settings()
    sizes: dict[tuple[str, str], int] = {}
    min_size = 2048  # mil-compress-weights' min-size
    for op in module.walk():
        if not isinstance(op, rlx.ParamOp):
            continue
        name, shape = op.param_name.data, tuple(shape_of(op.result))
        setting = None
        if len(shape) == 2 and math.prod(shape) >= min_size:
            if part == "embed":
                gathered = any(
                    isinstance(use.operation, rlx.GatherOp)
                    and use.operation.operands[0] is op.result
                    for use in op.result.uses
                )
                setting = embedding if gathered else linear
            elif part == "head":
                setting = head
            elif not name.startswith("rope"):
                setting = linear
        key = (name, "fp16" if setting is None else setting.text())
        sizes[key] = stored_bytes(shape, setting)
    return sizes


def llm_units(decoder: Decoder, compression: Compression) -> list[Unit]:
    """The embedding, each layer and the head, with their weight bytes."""
    config = decoder.config
    units = []
    parts: list[tuple[str, str, tuple[int, int] | None]] = [("embed", "embed", None)]
    parts += [(f"layer {i}", "layers", (i, i + 1)) for i in range(config.num_layers)]
    parts.append(("head", "head", None))
    for name, part, layers in parts:
        module = decoder.part(part=part, layers=layers).build()
        sizes = unit_weights(module, part, compression)
        fp16 = unit_weights(module, part, Compression()) if compression.mode else sizes
        units.append(Unit(name, part, layers, sizes, fp16))
    return units


ENDS = "embed_head"
"""The package of a tied model's embedding and head, split."""
ENDS_FUNCTIONS = {"prefill": "embed_prefill", "decode": "embed_decode"}
"""The embedding's functions in `embed_head` (the head's keep their names)."""


def ends_module(decoder: Decoder) -> builtin.ModuleOp:
    """The embedding's functions (renamed as ENDS_FUNCTIONS says) and the
    head's in one module, so that a tied table is one blob record."""
    from xdsl.dialects import builtin
    from xdsl.dialects.builtin import StringAttr

    functions = []
    for part in ("embed", "head"):
        module = decoder.part(part=part, layers=None).build()
        for f in list(module.ops):
            f.detach()
            if part == "embed":
                f.sym_name = StringAttr(ENDS_FUNCTIONS[f.sym_name.data])
            functions.append(f)
    return builtin.ModuleOp(functions)


@dataclass(frozen=True)
class PackagePlan:
    """The packages of a split model in calling order: (name, part, layer
    range, package) as models.llm.split_parts gives the first three, the
    package's file stem last (`embed_head` for both ends of a tied
    model); why it is split; each package's estimated weight bytes."""

    parts: list[tuple[str, str, tuple[int, int] | None, str]]
    reason: str
    sizes: dict[str, int]


def position_bytes(shape: LlmShape) -> int:
    """An upper bound of the blob bytes of a layers package's program
    constants (position ids, causal masks of each function: two where a
    family has sliding layers) besides its weights."""
    tokens = shape.prefill + 1
    return 2 * (4 * tokens + 10 * shape.context + 2 * tokens * shape.context) + 1024


def plan_packages(
    units: list[Unit],
    max_package_size: int | None,
    layers_per_package: int | None,
    tied: bool,
    constants: int = 0,
) -> PackagePlan | None:
    """The split into packages of at most `max_package_size` bytes of
    weights and `layers_per_package` layers (None: one package, when the
    whole fits and no layer count is given); a tied model's embedding and
    head share a package where they fit in one. `constants`: the bytes of
    a layers package besides its weights (`position_bytes`). A unit alone
    over the limit is an error naming it."""
    embed, *layers, head = units
    total = weight_bytes(units) + constants
    limit = max_package_size
    program = weight_bytes(units, fp16=True) + constants
    fits = limit is None or (total <= limit and program <= PROGRAM_LIMIT)
    if layers_per_package is None and fits:
        return None
    if limit is not None:
        for unit in units:
            if unit.bytes + (constants if unit.part == "layers" else 0) > limit:
                raise XdslAneError(
                    f"the {unit.name} alone holds {size_text(unit.bytes)} of weights, "
                    f"over {size_option(limit)} (raise it, or compress with "
                    f"{option('compress')})"
                )
    groups: list[list[Unit]] = []
    for unit in layers:
        if (
            not groups
            or (
                layers_per_package is not None and len(groups[-1]) >= layers_per_package
            )
            or (
                limit is not None
                and weight_bytes([*groups[-1], unit]) + constants > limit
            )
            or (
                limit is not None
                and weight_bytes([*groups[-1], unit], fp16=True) > PROGRAM_LIMIT
            )
        ):
            groups.append([unit])
        else:
            groups[-1].append(unit)
    ends = weight_bytes([embed, head])
    together = tied and (limit is None or ends <= limit)
    first, last = (ENDS, ENDS) if together else ("embed", "head")
    parts: list[tuple[str, str, tuple[int, int] | None, str]] = [
        ("embed", "embed", None, first)
    ]
    sizes = {ENDS: ends} if together else {"embed": embed.bytes}
    for group in groups:
        start, end = group[0].layers[0], group[-1].layers[1]  # type: ignore[index]
        name = f"layers_{start}-{end - 1}"
        parts.append((name, "layers", (start, end), name))
        sizes[name] = weight_bytes(group) + constants
    parts.append(("head", "head", None, last))
    if not together:
        sizes["head"] = head.bytes
    if fits:
        reason = option("layers_per_package", layers_per_package)
    elif total <= limit:  # type: ignore[operator]
        reason = (
            f"the weights, about {size_text(program)} in fp16, exceed "
            f"{size_text(PROGRAM_LIMIT)} per program (ane-lint's limit, "
            "checked before compression)"
        )
        if layers_per_package is not None:
            reason += f"; at most {layers_per_package} layers each"
    else:
        reason = f"the weights, about {size_text(total)}, exceed {size_option(limit)}"
        if layers_per_package is not None:
            reason += f"; at most {layers_per_package} layers each"
    return PackagePlan(parts, reason, sizes)


def weight_bytes(units: list[Unit], fp16: bool = False) -> int:
    """The blob bytes of the units in one package (`fp16`: uncompressed):
    a weight that several read (a tied table, the RoPE tables) once."""
    merged: dict[tuple[str, str], int] = {}
    for unit in units:
        merged |= unit.fp16_sizes if fp16 else unit.sizes
    return sum(merged.values())


SEGMENT_FUNCTIONS = {
    "embed": {"prefill": "embed_prefill", "decode": "embed_decode"},
    "layers": {},
    "head": {"prefill": "head_prefill", "decode": "head_decode"},
}
"""One package's functions when its embedding is a step of its own
(a vision-language decoder: the runtime merges the image features into
the embedding's rows): each part's functions, renamed as this says."""


def segments_module(decoder: Decoder) -> builtin.ModuleOp:
    """The embedding's, the layers' and the head's functions in one
    module (renamed as SEGMENT_FUNCTIONS says): one blob, a tied table
    once, the caches the layers' states."""
    from xdsl.dialects import builtin
    from xdsl.dialects.builtin import StringAttr

    functions = []
    for part, names in SEGMENT_FUNCTIONS.items():
        module = decoder.part(part=part, layers=None).build()
        for f in list(module.ops):
            f.detach()
            f.sym_name = StringAttr(names.get(f.sym_name.data, f.sym_name.data))
            functions.append(f)
    return builtin.ModuleOp(functions)
