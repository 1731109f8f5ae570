"""The walk over an ExportedProgram's graph that builds one rlx function.

Each node's value is one of
- a runtime value (an rlx `SSAValue`): the node depends on a user input;
- a `Const`: it does not, so it was computed here by torch itself (the
  causal mask built from `arange`, the RoPE tables, int64 position
  arithmetic) — a parameter, buffer or lifted constant is a `Const` that
  carries its state_dict key;
- a plain Python value (an int, a list, `None`).

A node whose result has no elements (a zero-length slice, a split's empty
piece) is a `Const` too, whatever its inputs: an empty tensor holds no data.
So `torch.cat` drops it, an op on it alone is folded, and no rlx value is
ever empty (Core ML has no empty tensors); a program whose input or output
is empty is refused.

Constants enter the rlx program only where a runtime op reads them: a weight
as `rlx.param` under its state_dict key, a folded tensor as `rlx.param`
`folded.<node>` (or inline `rlx.constant` when small). Ops are translated in
graph order (`aten.py`); patterns (`patterns.py`) look through a node's
producers to emit rlx's own ops, and what they make dead is removed at the
end.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FunctionType, f16, f32, i1, i8, i32
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from xdsl_ane.dialects import ane, rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.dtypes import numpy_dtype_of
from xdsl_ane.dialects.typing import element_type_of, tensor
from xdsl_ane.errors import XdslAneError, first_line
from xdsl_ane.frontend.torch.program import IN_PLACE, Signature, identifier

INLINE_LIMIT = 64
"""Folded tensors of at most this many elements are inline `rlx.constant`s;
larger ones are weights (`folded.<node>`)."""


class TranslationError(Exception):
    """A node that cannot be translated as it is (the message says why);
    reported with the node's name and source line."""


@dataclass(eq=False)
class Const:
    """A tensor known at compile time. `weight` is the state_dict key of a
    parameter, buffer or lifted constant; `origin` names the node that
    computed it (for a folded tensor's weight name)."""

    value: torch.Tensor
    origin: str
    weight: str | None = None


Value = SSAValue | Const | Any

NARROWED = {
    torch.bfloat16: "held as float32 (exact; the program computes and returns f32)",
    torch.float64: "narrowed to float32 (rlx has no f64)",
}
"""Float dtypes rlx holds as f32, and what the note about them says."""

NOTED_NAMES = 4
"""How many values a note names before it says how many more there are."""


def empty_value(meta: Any, origin: str) -> Const | None:
    """The value of a node whose recorded result (`meta["val"]`) is a tensor
    with no elements: empty of its shape and dtype, known without its inputs."""
    if isinstance(meta, torch.Tensor) and meta.numel() == 0:
        return Const(torch.empty(tuple(meta.shape), dtype=meta.dtype), origin)
    return None


def const_key(const: Const, element: Attribute) -> tuple[Any, ...]:
    """What a materialized constant is, by value: a weight by its
    state_dict key, any other tensor by its dtype, shape and bytes. (An
    `id()` would name a temporary's memory, which the next temporary can
    reuse: a strided slice's index constants are such temporaries.)"""
    if const.weight is not None:
        return ("weight", const.weight, element)
    value = const.value.detach().contiguous().reshape(-1)
    data = value.view(torch.uint8).numpy() if value.numel() else b""
    digest = hashlib.blake2b(data, digest_size=16).digest()
    return ("value", str(const.value.dtype), tuple(const.value.shape), digest, element)


def is_empty(value: Value) -> bool:
    return isinstance(value, Const) and value.value.numel() == 0


def element_type(dtype: torch.dtype, what: str) -> Attribute:
    """rlx's element type for a torch dtype: int64 (and other integers) as
    i32, bool as i1, bfloat16 as f32 (exact), float64 as f32 (narrowed: the
    translator notes where, `Translator.notes`)."""
    if dtype in NARROWED or dtype == torch.float32:
        return f32
    if dtype == torch.float16:
        return f16
    if dtype == torch.bool:
        return i1
    if dtype == torch.int8:
        return i8
    if dtype in (torch.int64, torch.int32, torch.int16, torch.uint8):
        return i32
    raise TranslationError(
        f"{what} has dtype {dtype}, which rlx does not have (f32, f16; bf16 and "
        "f64 as f32, integers as i32, bool); convert the model to float32 or "
        "float16 first"
    )


def to_numpy(value: torch.Tensor, element: Attribute, what: str) -> np.ndarray:
    """A tensor's data as numpy of `element`'s dtype; integers must fit i32."""
    t = value.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    array = t.contiguous().numpy()
    if element == i32 and array.dtype.kind in "iu" and array.size:
        if array.min() < -(2**31) or array.max() >= 2**31:
            raise TranslationError(f"{what} holds integers outside the int32 range")
    return array.astype(numpy_dtype_of(element), copy=False)


def source_of(node: torch.fx.Node) -> str:
    """`file.py:123` of the innermost frame of the node's stack trace."""
    trace = node.meta.get("stack_trace") or ""
    location = ""
    for line in trace.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            try:
                file, rest = line[6:].split('", line ', 1)
                number = rest.split(",", 1)[0]
                location = f"{Path(file).name}:{number}"
            except ValueError:
                continue
    return location


def describe(node: torch.fx.Node) -> str:
    """`node add_3 (aten.add.Tensor) at modeling_qwen3.py:61`."""
    where = source_of(node)
    text = f"node {node.name} ({target_name(node)})"
    return f"{text} at {where}" if where else text


def target_name(node: torch.fx.Node) -> str:
    target = node.target
    if target is operator.getitem:
        return "getitem"
    return (
        str(target)
        if not callable(target) or hasattr(target, "_schema")
        else (getattr(target, "__name__", str(target)))
    )


Translation = Callable[..., Value]


class Translator:
    """Builds `@main` from the graph; see the module docstring."""

    def __init__(
        self,
        signature: Signature,
        translations: dict[Any, Translation],
        shape_only: set[Any],
        no_ops: set[Any],
        where: str,
    ):
        self.signature = signature
        self.translations = translations
        self.shape_only = shape_only
        self.no_ops = no_ops
        self.where = where
        self.env: dict[torch.fx.Node, Value] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.materialized: dict[tuple[Any, ...], SSAValue] = {}
        """Constants already in the program, by value (`const_key`)."""
        self.named_tables: dict[str, Const] = {}
        self.facts: dict[str, dict[torch.fx.Node, Any]] = {}
        """What patterns learned about a node (`rms`: (input, eps) of a
        normalization without its weight), keyed by pattern."""
        self.node: torch.fx.Node | None = None
        self.narrowed: dict[torch.dtype, list[str]] = {d: [] for d in NARROWED}
        """The values held as f32 although torch's are bfloat16 or float64:
        inputs, weights and runtime results, by name."""

    # --- the walk --------------------------------------------------------------

    def runtime_nodes(self, graph: torch.fx.Graph) -> set[torch.fx.Node]:
        """Nodes that depend on a user input (shape-only ops do not)."""
        runtime = set(self.signature.user_inputs)
        for node in graph.nodes:
            if node.op != "call_function" or node.target in self.shape_only:
                continue
            if empty_value(node.meta.get("val"), node.name) is not None:
                continue
            if any(i in runtime for i in node.all_input_nodes):
                runtime.add(node)
        return runtime

    def check_supported(self, graph: torch.fx.Graph) -> None:
        """One error naming every runtime node without a translation."""
        missing = [
            node
            for node in self.runtime_nodes(graph)
            if node.op == "call_function" and not self.translatable(node.target)
        ]
        if missing:
            order = {n: i for i, n in enumerate(graph.nodes)}
            missing.sort(key=order.__getitem__)
            ops = sorted({target_name(n) for n in missing})
            listed = "; ".join(describe(n) for n in missing)
            raise XdslAneError(
                f"{self.where}: {len(missing)} node(s) with ATen ops that have no "
                f"rlx translation ({', '.join(ops)}): {listed}"
            )

    def translatable(self, target: Any) -> bool:
        """Whether an op (an in-place one as its functional op) translates."""
        target = IN_PLACE.get(target, target)
        return (
            target in self.translations
            or target in self.no_ops
            or target is operator.getitem
        )

    def build(self, graph: torch.fx.Graph) -> builtin.ModuleOp:
        self.check_supported(graph)
        inputs = self.signature.user_inputs
        arg_types = []
        for node in inputs:
            meta = node.meta["val"]
            with self.at(node):
                arg_types.append(
                    tensor(
                        tuple(meta.shape),
                        element_type(meta.dtype, f"input '{node.name}'"),
                    )
                )
        block = Block(arg_types=arg_types)
        for arg, node in zip(block.args, inputs):
            arg.name_hint = identifier(node.name)
            self.env[node] = arg
            self.note_narrowed(node, f"input '{node.name}'")
        for name, (key, value) in self.signature.weights.items():
            placeholder = next(n for n in graph.nodes if n.name == name)
            self.env[placeholder] = Const(value, name, weight=key)
        with ImplicitBuilder(block):
            for node in graph.nodes:
                if node.op == "call_function":
                    with self.at(node):
                        self.env[node] = self.translate(node)
                        self.note_narrowed(node, f"node {node.name}")
            results = []
            for name, out in zip(self.signature.output_names, self.signature.outputs):
                results.append(self.output_value(out, name))
            func.ReturnOp(*results)
        remove_dead_ops(block)
        used = {op.param_name.data for op in block.ops if isinstance(op, rlx.ParamOp)}
        self.weights = {k: v for k, v in self.weights.items() if k in used}
        function_type = FunctionType.from_lists(arg_types, [r.type for r in results])
        main = func.FuncOp("main", function_type, Region(block))
        ane.record_result_names(main, self.signature.output_names)
        module = builtin.ModuleOp([main])
        try:
            module.verify()
        except DiagnosticException as e:
            raise XdslAneError(f"{self.where}: {first_line(e)}") from None
        return module

    def at(self, node: torch.fx.Node):
        return NodeContext(self, node)

    def note_narrowed(self, node: torch.fx.Node, what: str) -> None:
        """Records a runtime value whose torch dtype rlx holds as f32."""
        meta = node.meta.get("val")
        if isinstance(self.env.get(node), SSAValue) and isinstance(meta, torch.Tensor):
            if meta.dtype in self.narrowed:
                self.narrowed[meta.dtype].append(what)

    @property
    def notes(self) -> list[str]:
        """One line per float dtype held as f32, naming the first values."""
        lines = []
        for dtype, names in self.narrowed.items():
            names = list(dict.fromkeys(names))
            if not names:
                continue
            listed = ", ".join(names[:NOTED_NAMES])
            more = len(names) - NOTED_NAMES
            if more > 0:
                listed += f" and {more} more"
            kind = str(dtype).removeprefix("torch.")
            lines.append(f"{self.where}: {kind} {NARROWED[dtype]}: {listed}")
        return lines

    def output_value(self, out: Any, name: str) -> SSAValue:
        value = self.env.get(out) if isinstance(out, torch.fx.Node) else out
        if isinstance(value, SSAValue):
            return value
        if is_empty(value):
            raise XdslAneError(
                f"{self.where}: output '{name}' is empty (shape "
                f"{list(value.value.shape)}); Core ML has no empty tensors"
            )
        if isinstance(value, Const):
            return self.materialize(value)
        raise XdslAneError(
            f"{self.where}: output '{name}' is {type(value).__name__}, not a tensor"
        )

    def translate(self, node: torch.fx.Node) -> Value:
        empty = empty_value(node.meta.get("val"), node.name)
        if empty is not None:
            return empty
        lookup = self.stand_in if node.target in self.shape_only else self.lookup
        args, kwargs = pytree.tree_map(lookup, (node.args, node.kwargs))
        leaves = pytree.tree_leaves((args, kwargs))
        composite = next((v for v in leaves if isinstance(v, Composite)), None)
        if composite is not None:
            return composite.read(self, node, args, kwargs)
        if not any(isinstance(v, SSAValue) for v in leaves):
            return self.fold(node, args, kwargs)
        target = IN_PLACE.get(node.target, node.target)
        if target in self.no_ops:
            return args[0] if target not in NONE_RESULTS else None
        if target is operator.getitem:
            return args[0][args[1]]
        if target is not node.target:
            node = AsFunctional(node, target)
        return self.translations[target](self, node, *args, **kwargs)

    def lookup(self, x: Any) -> Any:
        return self.env[x] if isinstance(x, torch.fx.Node) else x

    def stand_in(self, x: Any) -> Any:
        """A runtime node as zeros of its shape, for ops that only read the
        shape and dtype (`new_ones`, `zeros_like`)."""
        value = self.lookup(x)
        if not isinstance(value, SSAValue):
            return value
        meta = x.meta["val"]
        return Const(torch.zeros(meta.shape, dtype=meta.dtype), x.name)

    def fold(self, node: torch.fx.Node, args: Any, kwargs: Any) -> Value:
        """Runs the node with torch on its constant inputs."""
        raw_args, raw_kwargs = pytree.tree_map(
            lambda v: v.value if isinstance(v, Const) else v, (args, kwargs)
        )
        try:
            with torch.no_grad():
                result = node.target(*raw_args, **raw_kwargs)
        except Exception as e:
            raise TranslationError(
                f"folding failed: {type(e).__name__}: {first_line(e)}"
            ) from None
        return self.wrap(result, node.name)

    def wrap(self, result: Any, origin: str) -> Value:
        if isinstance(result, torch.Tensor):
            return Const(result, origin)
        if isinstance(result, tuple | list):
            return [self.wrap(r, f"{origin}.{i}") for i, r in enumerate(result)]
        return result

    # --- values ----------------------------------------------------------------

    def value(self, x: Value, element: Attribute | None = None) -> SSAValue:
        """`x` as a runtime value, cast to `element` if given."""
        if isinstance(x, SSAValue):
            if element is not None and element_type_of(x) != element:
                return rlx.CastOp(x, element).result
            return x
        if isinstance(x, Const):
            return self.materialize(x, element)
        if isinstance(x, bool | int | float):
            if element is None:
                element = (
                    f32
                    if isinstance(x, float)
                    else (i1 if isinstance(x, bool) else i32)
                )
            return self.constant(np.asarray(x), element)
        raise TranslationError(f"expected a tensor, got {type(x).__name__}")

    def materialize(self, const: Const, element: Attribute | None = None) -> SSAValue:
        """A constant in the program: a weight as `rlx.param` (state_dict
        key), a large folded tensor as `rlx.param "folded.<node>"`, a small
        one inline."""
        what = f"constant '{const.weight or const.origin}'"
        if is_empty(const):
            raise TranslationError(
                f"{what} is empty (shape {list(const.value.shape)}) and read by an "
                "op whose result is not; Core ML has no empty tensors"
            )
        element = element or element_type(const.value.dtype, what)
        key = const_key(const, element)
        if key in self.materialized:
            return self.materialized[key]
        if const.value.dtype in self.narrowed and element == f32:
            self.narrowed[const.value.dtype].append(
                f"weight '{const.weight}'" if const.weight else f"node {const.origin}"
            )
        array = to_numpy(const.value, element, what)
        if const.weight is not None or array.size > INLINE_LIMIT:
            name = const.weight or f"folded.{const.origin}"
            result = self.param(name, array, element)
        else:
            result = self.constant(array, element)
        self.materialized[key] = result
        return result

    def param(self, name: str, array: np.ndarray, element: Attribute) -> SSAValue:
        if name in self.weights and self.weights[name].dtype != array.dtype:
            name = f"{name}.{array.dtype}"
        self.weights[name] = array
        return rlx.ParamOp(name, tensor(array.shape, element)).result

    def constant(self, array: np.ndarray, element: Attribute) -> SSAValue:
        return rlx.ConstantOp(dense_from_numpy(array, element)).result

    def named_table(self, base: str, table: torch.Tensor) -> Const:
        """A derived weight with a readable name (`rope.cos`), one per
        distinct content (`rope.cos.1` for a second table)."""
        same_base = [
            c
            for n, c in self.named_tables.items()
            if n.rsplit(".", 1)[0] == base or n == base
        ]
        for const in same_base:
            if const.value.shape == table.shape and torch.equal(const.value, table):
                return const
        name = base if not same_base else f"{base}.{len(same_base)}"
        const = Const(table.contiguous(), name, weight=name)
        self.named_tables[name] = const
        return const

    def result_element(self, node: torch.fx.Node) -> Attribute:
        meta = node.meta["val"]
        return element_type(meta.dtype, f"the result of {node.name}")

    def result_shape(self, node: torch.fx.Node) -> tuple[int, ...]:
        return tuple(int(d) for d in node.meta["val"].shape)


class Composite:
    """A runtime value held as several rlx values (a complex tensor as its
    real and imaginary parts, `aten_signal.py`): a node that reads one is
    translated by its `read`, not by the op's own translation."""

    def read(self, tr: Translator, node: torch.fx.Node, args: Any, kwargs: Any):
        raise NotImplementedError


class AsFunctional:
    """An in-place op's node seen as its functional op (`target`), for the
    translation of that op; everything else is the node's."""

    def __init__(self, node: torch.fx.Node, target: Any):
        self._node, self.target = node, target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


NONE_RESULTS: set[Any] = set()
"""No-op targets whose result is nothing (`_assert_tensor_metadata`); filled
by aten.py."""


class NodeContext:
    """Reports any failure while translating `node` as one line naming it."""

    def __init__(self, translator: Translator, node: torch.fx.Node):
        self.translator = translator
        self.node = node

    def __enter__(self) -> None:
        self.translator.node = self.node

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None or isinstance(error, XdslAneError):
            return False
        if isinstance(error, TranslationError | DiagnosticException):
            node = self.node
            what = f"{describe(node)}: " if node.op != "placeholder" else ""
            raise XdslAneError(
                f"{self.translator.where}: {what}{first_line(error)}"
            ) from None
        return False


def remove_dead_ops(block: Block) -> None:
    """Erases ops whose results nothing reads (what patterns looked through)."""
    for op in reversed(list(block.ops)):
        if isinstance(op, func.ReturnOp):
            continue
        if all(not r.uses for r in op.results):
            block.erase_op(op)
