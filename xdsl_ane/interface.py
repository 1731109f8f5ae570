"""The runtime interface of a compiled function: how the logical tensors of
its source program are held in the function's arguments and results.

A compiled function takes `[1, C, 1, S]` tensors, some of its arguments
are weights, and `mil-pack-io` may have packed several tensors into one
input or output. `FunctionInterface` is the one typed record of all three:

- the layout of each logical argument and result (`passes.layouts.Layout`),
- the dynamic weights fed as arguments (`WeightArgument`: the weights
  file's tensor, its stored order and the argument's shape),
- the packing of inputs and outputs (`Packing`: each tensor's span on the
  spatial or channel axis of its buffer, through a row-major view).

It is read from the function's `ane.*` attributes (`of_function`), written
to and read from the manifest a compiled model carries (`manifest`,
`from_manifest`), and converts in both directions: `arguments` lays out
logical tensors and weights and packs them, `logical_results` unpacks and
lays the results back out. `xdsl-ane run`, the training runtime
(`models.runtime`) and the compiled kernels (`models.kernels`) all go
through it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, i1
from xdsl.ir import Attribute

from xdsl_ane.dialects import ane
from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.errors import XdslAneError
from xdsl_ane.passes.layouts import Layout, layout_of_kind, recorded_layout

Record = Mapping[str, Any]


def shape_of(values: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


# --- dynamic weights ---------------------------------------------------------------


@dataclass(frozen=True)
class WeightArgument:
    """A dynamic weight input: the weights file's `name`, stored [Cout, Cin]
    (`stored_out_in`, used as x·Wᵀ) or [Cin, Cout], fed as argument `arg` of
    shape [1, Cin, 1, Cout] with W[o, i] at [0, i, 0, o]."""

    name: str
    arg: int
    shape: tuple[int, ...]
    stored_out_in: bool

    @classmethod
    def of(cls, record: ane.WeightArgAttr) -> WeightArgument:
        return cls(
            record.weight.data, record.arg.data, record.arg_shape, record.stored_out_in
        )

    @classmethod
    def from_manifest(cls, record: Record) -> WeightArgument:
        stored = record["stored"]
        if stored not in ane.STORED_ORDERS.values():
            raise XdslAneError(
                f"weight argument '{record['weight']}': stored {stored}, expected "
                f"{' or '.join(ane.STORED_ORDERS.values())}"
            )
        return cls(
            record["weight"],
            int(record["arg"]),
            shape_of(record["shape"]),
            stored == ane.STORED_ORDERS[True],
        )

    def manifest(self) -> dict[str, Any]:
        return {
            "weight": self.name,
            "arg": self.arg,
            "shape": list(self.shape),
            "stored": ane.STORED_ORDERS[self.stored_out_in],
            "layout": ane.WEIGHT_ARG_LAYOUT,
        }

    def ane_value(self, weight: np.ndarray) -> np.ndarray:
        """The argument for `weight` as stored."""
        w = np.asarray(weight)
        w = w.T if self.stored_out_in else w
        return np.ascontiguousarray(w).reshape(self.shape)


# --- packing -----------------------------------------------------------------------


@dataclass(frozen=True)
class PackedTensor:
    """Argument or result `index` of `shape` inside a packed buffer: elements
    `offset` to `offset + length` on `axis`, through the row-major `view`
    where its own shape does not fit the buffer."""

    name: str
    index: int
    shape: tuple[int, ...]
    axis: int
    offset: int
    length: int
    view: tuple[int, ...] | None = None

    @classmethod
    def of(cls, record: ane.PackedTensorAttr) -> PackedTensor:
        return cls(
            record.tensor_name.data,
            record.index.data,
            record.tensor_shape,
            record.axis.data,
            record.offset.data,
            record.length.data,
            record.view_shape,
        )

    @classmethod
    def from_manifest(cls, record: Record, port: str) -> PackedTensor:
        view = record.get("view")
        return cls(
            record["name"],
            int(record[port]),
            shape_of(record["shape"]),
            int(record["axis"]),
            int(record["offset"]),
            int(record["length"]),
            None if view is None else shape_of(view),
        )

    def manifest(self, port: str) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": self.name,
            port: self.index,
            "shape": list(self.shape),
            "axis": self.axis,
            "offset": self.offset,
            "length": self.length,
        }
        if self.view is not None:
            record["view"] = list(self.view)
        return record

    @property
    def packed_shape(self) -> tuple[int, ...]:
        """The shape the tensor has in the buffer: its view, or its own."""
        return self.shape if self.view is None else self.view

    def span(self, rank: int) -> tuple[slice, ...]:
        """Where the tensor lies in a buffer of `rank`."""
        index = [slice(None)] * rank
        index[self.axis] = slice(self.offset, self.offset + self.length)
        return tuple(index)


@dataclass(frozen=True)
class PackedBuffer:
    """One packed input or output of `shape`: `tensors` side by side."""

    shape: tuple[int, ...]
    tensors: tuple[PackedTensor, ...]

    @classmethod
    def of(cls, record: ane.PackedBufferAttr) -> PackedBuffer:
        return cls(
            record.buffer_shape, tuple(PackedTensor.of(t) for t in record.tensors.data)
        )

    @classmethod
    def from_manifest(cls, record: Record, port: str) -> PackedBuffer:
        return cls(
            shape_of(record["shape"]),
            tuple(PackedTensor.from_manifest(t, port) for t in record["tensors"]),
        )

    def manifest(self, port: str) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "tensors": [t.manifest(port) for t in self.tensors],
        }

    def pack(self, tensors: Mapping[int, np.ndarray], dtype: np.dtype) -> np.ndarray:
        """The buffer holding `tensors` (by index)."""
        buffer = np.zeros(self.shape, dtype)
        for t in self.tensors:
            buffer[t.span(len(self.shape))] = tensors[t.index].reshape(t.packed_shape)
        return buffer

    def unpack(self, buffer: np.ndarray) -> dict[int, np.ndarray]:
        """The tensors of `buffer`, by index, in their own shapes."""
        return {
            t.index: buffer[t.span(buffer.ndim)].reshape(t.shape) for t in self.tensors
        }


@dataclass(frozen=True)
class Packing:
    """How `mil-pack-io` packed function `function`'s arguments into its
    `inputs` and its results into its `outputs`, one buffer each."""

    function: str
    inputs: tuple[PackedBuffer, ...]
    outputs: tuple[PackedBuffer, ...]

    @classmethod
    def of(cls, record: ane.PackingAttr) -> Packing:
        return cls(
            record.function.data,
            tuple(PackedBuffer.of(b) for b in record.inputs.data),
            tuple(PackedBuffer.of(b) for b in record.outputs.data),
        )

    @classmethod
    def from_manifest(cls, record: Record) -> Packing:
        return cls(
            record.get("function", ""),
            tuple(PackedBuffer.from_manifest(b, "arg") for b in record["inputs"]),
            tuple(PackedBuffer.from_manifest(b, "result") for b in record["outputs"]),
        )

    def manifest(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "inputs": [b.manifest("arg") for b in self.inputs],
            "outputs": [b.manifest("result") for b in self.outputs],
        }

    def pack(
        self, args: Mapping[int, np.ndarray], dtypes: Sequence[np.dtype]
    ) -> list[np.ndarray]:
        """The packed inputs from the original arguments (by index), one
        buffer per input, in its dtype."""
        return [b.pack(args, dtype) for b, dtype in zip(self.inputs, dtypes)]

    def unpack(self, outputs: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
        """The original results (by index) cut out of the packed outputs."""
        results: dict[int, np.ndarray] = {}
        for buffer, value in zip(self.outputs, outputs):
            results.update(buffer.unpack(value))
        return results


# --- a function --------------------------------------------------------------------


def layout_record(layout: Layout) -> dict[str, Any]:
    return layout.record().manifest()


def layout_from_manifest(record: Record, what: str) -> Layout:
    layout = layout_of_kind(record["layout"], record["logical"])
    if "ane" in record and shape_of(record["ane"]) != layout.ane:
        raise XdslAneError(
            f"{what}: layout {record['layout']} of logical {list(layout.logical)} "
            f"is held as {list(layout.ane)}, the manifest says {record['ane']}"
        )
    return layout


@dataclass(frozen=True)
class FunctionInterface:
    """How a compiled function holds the logical tensors of its source
    program (see the module docstring). `arg_layouts` and `result_layouts`
    are None where the function has no layout record (it was not put in
    ANE form); `outputs` are the MIL names of its results."""

    arg_layouts: tuple[Layout, ...] | None = None
    result_layouts: tuple[Layout, ...] | None = None
    weight_args: tuple[WeightArgument, ...] | None = None
    packing: Packing | None = None
    outputs: tuple[str, ...] = ()
    bool_args: tuple[int, ...] = ()
    """The logical arguments the program takes as bool (i1): a package
    declares them fp32 (Core ML has no bool multiarray) and casts them
    inside, so what its inputs say is not their type; run feeds them 0/1."""

    @classmethod
    def of_function(cls, function: func.FuncOp) -> FunctionInterface:
        """The interface recorded on `function` by `mil-ane-layout` and
        `mil-pack-io`."""
        from xdsl_ane.backend.names import boundary_names

        def layouts(key: str) -> tuple[Layout, ...] | None:
            if key not in function.attributes:
                return None
            return tuple(recorded_layout(r) for r in ane.records(function, key))

        packing = ane.packing(function)
        weights = None
        if ane.WEIGHT_ARGS in function.attributes:
            weights = tuple(WeightArgument.of(r) for r in ane.weight_args(function))
        arg_layouts = layouts(ane.ARG_LAYOUTS)
        inputs = function.function_type.inputs.data
        recorded = function.attributes.get(ane.BOOL_ARGS)
        if isinstance(recorded, DenseArrayBase):  # mil-io-types cast them
            bools = tuple(int(i) for i in recorded.get_values())
        elif packing is not None or arg_layouts is None:
            bools = ()
        else:  # the protobuf printer will cast them
            bools = tuple(
                i
                for i, t in enumerate(inputs[: len(arg_layouts)])
                if getattr(t, "element_type", None) == i1
            )
        return cls(
            arg_layouts,
            layouts(ane.RESULT_LAYOUTS),
            weights,
            None if packing is None else Packing.of(packing),
            tuple(boundary_names(function)[1]),
            bools,
        )

    @classmethod
    def from_manifest(cls, record: Record, what: str = "manifest") -> FunctionInterface:
        """The interface of a function's manifest record; `what` names it in
        errors."""
        try:

            def layouts(key: str) -> tuple[Layout, ...] | None:
                if key not in record:
                    return None
                return tuple(
                    layout_from_manifest(r, f"{what}: {key}[{i}]")
                    for i, r in enumerate(record[key])
                )

            weights = record.get("weight_args")
            packing = record.get("packing")
            return cls(
                layouts("arg_layouts"),
                layouts("result_layouts"),
                None
                if weights is None
                else tuple(WeightArgument.from_manifest(w) for w in weights),
                None if packing is None else Packing.from_manifest(packing),
                tuple(record.get("outputs", ())),
                tuple(int(i) for i in record.get("bool_args", ())),
            )
        except XdslAneError as e:
            raise XdslAneError(f"{what}: {e}") from None
        except (KeyError, TypeError, ValueError) as e:
            raise XdslAneError(f"{what}: malformed record ({e!r})") from None

    def manifest(self) -> dict[str, Any]:
        """The manifest record (what a runtime reads)."""
        record: dict[str, Any] = {"outputs": list(self.outputs)}
        if self.arg_layouts is not None:
            record["arg_layouts"] = [layout_record(x) for x in self.arg_layouts]
        if self.result_layouts is not None:
            record["result_layouts"] = [layout_record(x) for x in self.result_layouts]
        if self.weight_args is not None:
            record["weight_args"] = [w.manifest() for w in self.weight_args]
        if self.packing is not None:
            record["packing"] = self.packing.manifest()
        if self.bool_args:
            record["bool_args"] = list(self.bool_args)
        return record

    # --- conversions ---

    @property
    def args(self) -> tuple[Layout, ...]:
        return self.arg_layouts or ()

    @property
    def results(self) -> tuple[Layout, ...]:
        return self.result_layouts or ()

    def arg_elements(self, inputs: Sequence[Attribute]) -> list[Attribute]:
        """The element type each logical argument is held in, given the
        compiled function's input types."""
        types = [t.element_type for t in inputs]  # type: ignore[attr-defined]
        for i in self.bool_args:
            types[i] = i1
        if self.packing is None:
            return types[: len(self.args)]
        holder = {
            t.index: types[i]
            for i, buffer in enumerate(self.packing.inputs)
            for t in buffer.tensors
        }
        return [holder[i] for i in range(len(self.args))]

    def arguments(
        self,
        logical: Mapping[int, np.ndarray] | Sequence[np.ndarray],
        weights: Mapping[str, np.ndarray],
        inputs: Sequence[Attribute],
    ) -> list[np.ndarray]:
        """The compiled function's arguments (of types `inputs`) from the
        logical tensors (in the held element types, `arg_elements`) and
        the weights by name: each laid out, each weight in its order, all
        packed."""
        values = logical if isinstance(logical, Mapping) else dict(enumerate(logical))
        args = {i: layout.to_ane(values[i]) for i, layout in enumerate(self.args)}
        for w in self.weight_args or ():
            if w.name not in weights:
                raise XdslAneError(
                    f"dynamic weight '{w.name}' (argument {w.arg}) is not given"
                )
            args[w.arg] = w.ane_value(weights[w.name])
        dtypes = [numpy_dtype_of(t.element_type) for t in inputs]  # type: ignore[attr-defined]
        if self.packing is None:
            return [args[i].astype(dtypes[i], copy=False) for i in range(len(inputs))]
        return self.packing.pack(args, dtypes)

    def logical_results(self, results: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The logical results from the compiled function's results."""
        by_index: dict[int, np.ndarray] = (
            dict(enumerate(results))
            if self.packing is None
            else self.packing.unpack(results)
        )
        return [layout.to_logical(by_index[i]) for i, layout in enumerate(self.results)]
