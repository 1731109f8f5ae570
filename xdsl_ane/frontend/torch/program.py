"""Getting an ExportedProgram into the form the translator reads: exported
(from an `nn.Module`), loaded (from a `.pt2` file), decomposed to core ATen
except for the ops rlx has as ops of its own, and its signature read into
user inputs, weights and outputs.

Every failure is an `XdslAneError` with one line: torch's own reason for a
module that does not export, the input and dimension for a symbolic shape.
"""

from __future__ import annotations

import importlib
import inspect
import io
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind

from xdsl_ane.errors import XdslAneError, first_line

aten = torch.ops.aten

KEPT_OPS = (
    aten.scaled_dot_product_attention.default,
    aten.linear.default,
    aten.rms_norm.default,
    aten.layer_norm.default,
    aten.gelu.default,
    aten.silu.default,
    # one rlx.upsample, rlx.pad or activation each, which the table would
    # turn into index arithmetic and gathers
    aten.upsample_nearest1d.vec,
    aten.upsample_nearest2d.vec,
    aten.upsample_linear1d.vec,
    aten.upsample_bilinear2d.vec,
    aten.upsample_bicubic2d.vec,
    aten.reflection_pad1d.default,
    aten.reflection_pad2d.default,
    aten.replication_pad1d.default,
    aten.replication_pad2d.default,
    aten.hardswish.default,
    aten.hardsigmoid.default,
    # one conv or conv_transpose each, and writes kept as slices (aten_spatial,
    # aten_scatter)
    aten.im2col.default,
    aten.col2im.default,
    aten.select_scatter.default,
    aten.fake_quantize_per_tensor_affine.default,
    aten.lstm.input,
    aten.pixel_shuffle.default,
    aten.pixel_unshuffle.default,
)
"""Ops that stay whole: each is one rlx op (or matmul + add), and splitting
them would only make the translator re-discover them."""


def decomposition_table() -> dict[Any, Any]:
    """torch.export's core ATen table without `KEPT_OPS`."""
    table = torch.export.default_decompositions()
    for op in KEPT_OPS:
        table.pop(op, None)
    return table


def accepts_use_cache(module: torch.nn.Module) -> bool:
    """Whether `module.forward` takes `use_cache` (Hugging Face models): the
    key/value cache it returns otherwise is no tensor and does not export."""
    try:
        return "use_cache" in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def export_module(
    module: torch.nn.Module,
    example_args: tuple[Any, ...] | list[Any] | None,
    example_kwargs: dict[str, Any] | None = None,
) -> ExportedProgram:
    """`torch.export.export` of `module` on the example inputs; a failure is
    torch's reason in one line. A Hugging Face model is exported with
    `use_cache=False` unless the keyword arguments say otherwise."""
    if example_args is None and not example_kwargs:
        raise XdslAneError(
            f"from_torch: a {type(module).__name__} needs example_args to be exported"
        )
    if isinstance(example_args, torch.Tensor):
        example_args = (example_args,)
    kwargs = dict(example_kwargs or {})
    if "use_cache" not in kwargs and accepts_use_cache(module):
        kwargs["use_cache"] = False
    try:
        with torch.no_grad(), quiet_torch_logs():
            return torch.export.export(module, tuple(example_args or ()), kwargs=kwargs)
    except Exception as e:
        raise XdslAneError(
            f"from_torch: {type(module).__name__} does not export: "
            f"{type(e).__name__}: {first_line(e)}"
        ) from None


@contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """torch's own output while exporting (warnings, and the graph it
    prints to stderr when export fails) stays quiet: the failure is
    reported in one line instead."""
    loggers = [
        logging.getLogger(name)
        for name in ("torch", "torch.fx.experimental.symbolic_shapes", "torch.export")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with redirect_stderr(io.StringIO()):
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def load_program(path: str | Path) -> ExportedProgram:
    """A program written by `torch.export.save`. An output type that torch
    cannot rebuild until its module registers it with pytree (Hugging Face's
    `CausalLMOutputWithPast`) has its module imported, and the load retried."""
    path = Path(path)
    if not path.exists():
        raise XdslAneError(f"{path}: file does not exist")
    imported: set[str] = set()
    while True:
        failures = CapturedErrors()
        try:
            with warnings.catch_warnings(), quiet_torch_logs(), failures.capturing():
                warnings.simplefilter("ignore", FutureWarning)
                return torch.export.load(str(path))
        except Exception as e:
            module = failures.unregistered_module()
            if module is not None and module not in imported:
                imported.add(module)
                try:
                    importlib.import_module(module)
                    continue
                except ImportError:
                    pass
            reason = failures.reason() or f"{type(e).__name__}: {first_line(e)}"
            raise XdslAneError(
                f"{path}: not a torch.export program: {reason}"
            ) from None


UNREGISTERED = re.compile(r"Deserializing ([\w.]+)\.(\w+) in pytree is not registered")


class CapturedErrors(logging.Handler):
    """The exceptions torch logs (rather than raises) while loading."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[BaseException] = []

    @contextmanager
    def capturing(self) -> Iterator[None]:
        """Records of `torch.export` come here only (not to torch's own
        handlers, which would print them)."""
        logger = logging.getLogger("torch.export")
        level, propagate, handlers = logger.level, logger.propagate, logger.handlers
        logger.setLevel(logging.WARNING)
        logger.propagate = False
        logger.handlers = [self]
        try:
            yield
        finally:
            logger.handlers = handlers
            logger.setLevel(level)
            logger.propagate = propagate

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])

    def unregistered_module(self) -> str | None:
        for error in self.errors:
            match = UNREGISTERED.search(str(error))
            if match:
                return match.group(1)
        return None

    def reason(self) -> str | None:
        if not self.errors:
            return None
        error = self.errors[-1]
        return f"{type(error).__name__}: {first_line(error)}"


def in_place_ops() -> dict[Any, Any]:
    """In-place ATen ops of torch.export's graph -> their functional op."""
    pairs = {}
    for name in (
        "add_.Tensor add_.Scalar sub_.Tensor mul_.Tensor mul_.Scalar div_.Tensor "
        "div_.Scalar relu_.default hardtanh_.default silu_.default gelu_.default "
        "sigmoid_.default tanh_.default clamp_.default hardswish_.default "
        "hardsigmoid_.default leaky_relu_.default elu_.default"
    ).split():
        packet, overload = name.split(".")
        op = getattr(getattr(aten, packet, None), overload, None)
        functional = getattr(getattr(aten, packet[:-1], None), overload, None)
        if op is not None and functional is not None:
            pairs[op] = functional
    return pairs


IN_PLACE = in_place_ops()
"""In-place ops the translation reads as their functional ops, where the
tensor they mutate is read by nothing else (`translatable_as_is`)."""


def translatable_as_is(
    program: ExportedProgram, runtime: set[Any], translatable: Any
) -> bool:
    """Whether `program`'s graph translates without `run_decompositions`
    (which re-traces the whole program: most of an import's time): every
    runtime node's op (in-place ones as their functional op) has a
    translation, every in-place op mutates a runtime value that nothing
    else reads (torch.export's later reads of it are the op's result; an
    earlier view of it would alias), no batch norm is in training mode,
    and the program mutates no buffer or input."""
    signature = program.graph_signature
    if signature.buffers_to_mutate or signature.user_inputs_to_mutate:
        return False
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        target = IN_PLACE.get(node.target, node.target)
        if node.target in IN_PLACE:
            mutated = node.args[0]
            if not isinstance(mutated, torch.fx.Node) or mutated not in runtime:
                return False
            # nothing else reads it, before (a view of it would see the
            # mutation) or after
            if mutated.op == "placeholder" or set(mutated.users) != {node}:
                return False
        if node not in runtime:
            continue
        if target is aten.batch_norm.default and node.args[5]:
            return False
        if not translatable(target):
            return False
    return True


def decompose(program: ExportedProgram, where: str) -> ExportedProgram:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return program.run_decompositions(decomposition_table())
    except Exception as e:
        raise XdslAneError(
            f"{where}: run_decompositions failed: {type(e).__name__}: {first_line(e)}"
        ) from None


# --- the signature -------------------------------------------------------------


@dataclass
class Signature:
    """What the graph's placeholders and outputs are."""

    user_inputs: list[torch.fx.Node]
    """Tensor user inputs, in the program's argument order."""
    weights: dict[str, tuple[str, torch.Tensor]]
    """Placeholder name -> (state_dict key, tensor) for parameters, buffers
    and lifted constants."""
    unused_inputs: list[str]
    """Non-tensor user inputs (a flag such as `use_cache`) that no node reads."""
    outputs: list[torch.fx.Node | Any]
    output_names: list[str]


def identifier(name: str) -> str:
    """A name usable as an SSA name hint and an `.npz` key."""
    cleaned = re.sub(r"[^A-Za-z0-9_.]", "_", name).strip("_.")
    return cleaned or "value"


def output_names(program: ExportedProgram, count: int) -> list[str]:
    """Names of the flattened outputs from the output pytree: `logits`,
    `last_hidden_state`; `output` for a lone tensor, `output_0`, ... for a
    tuple."""
    from torch.utils import _pytree as pytree

    spec = program.call_spec.out_spec
    if spec is None:
        return [f"output_{i}" for i in range(count)]
    tree = pytree.tree_unflatten(list(range(count)), spec)
    names = []
    for path, _ in pytree.tree_flatten_with_path(tree)[0]:
        parts = []
        for key in path:
            for attribute in ("key", "name", "idx"):
                if hasattr(key, attribute):
                    parts.append(str(getattr(key, attribute)))
                    break
        names.append("output" if not parts else identifier("_".join(parts)))
    if len(names) == 1 and names[0] in ("0", "output_0"):
        return ["output"]
    return [n if not n[0].isdigit() else f"output_{n}" for n in names]


def read_signature(program: ExportedProgram, where: str) -> Signature:
    graph = program.graph_module.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    state = program.state_dict
    constants = program.constants
    user_inputs, weights, unused = [], {}, []
    for spec in program.graph_signature.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                check_static(node, value, where)
                user_inputs.append(node)
            elif node.users:
                raise XdslAneError(
                    f"{where}: input '{node.name}' is a {type(value).__name__}, "
                    "not a tensor; only tensor inputs are supported"
                )
            else:
                unused.append(node.name)
            continue
        key = spec.target
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and key in state:
            tensor = state[key]
        elif key in constants:
            tensor = constants[key]
        else:
            raise XdslAneError(
                f"{where}: input '{node.name}' ({spec.kind.name.lower()} "
                f"'{key}') has no value in the program"
            )
        if not isinstance(tensor, torch.Tensor):
            raise XdslAneError(
                f"{where}: {spec.kind.name.lower()} '{key}' is a "
                f"{type(tensor).__name__}, not a tensor"
            )
        weights[node.name] = (key, tensor.detach())
    outputs = []
    output_node = next(n for n in graph.nodes if n.op == "output")
    flat = list(output_node.args[0])
    for spec, value in zip(program.graph_signature.output_specs, flat):
        if spec.kind != OutputKind.USER_OUTPUT:
            raise XdslAneError(
                f"{where}: the program writes {spec.kind.name.lower()} "
                f"'{spec.target}'; programs that mutate their state are not supported"
            )
        outputs.append(value)
    return Signature(
        user_inputs, weights, unused, outputs, output_names(program, len(outputs))
    )


def check_static(node: torch.fx.Node, value: torch.Tensor, where: str) -> None:
    """An input's shape is static and not empty (Core ML has no empty
    tensors)."""
    for axis, size in enumerate(value.shape):
        if not isinstance(size, int):
            raise XdslAneError(
                f"{where}: input '{node.name}' dimension {axis} is symbolic "
                f"({size}); xdsl-ane compiles static shapes only (export without "
                "dynamic_shapes)"
            )
    if value.numel() == 0:
        raise XdslAneError(
            f"{where}: input '{node.name}' is empty (shape {list(value.shape)}); "
            "Core ML has no empty tensors"
        )
