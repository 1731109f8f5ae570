"""MIL value and function names, shared by both printers (the protobuf and
MIL text): one identifier rule, one set of reserved words, one uniquer.

A name is a MIL identifier, [A-Za-z_][A-Za-z0-9_]*, spelled as coremltools'
sanitizer leaves it (`NameSanitizer.sanitize_name`): other characters become
`_`, a leading digit gets `var_` before it, a reserved word `_workaround`
after it. Within one function (and among a program's functions) names are
unique: a name already taken gets `_1`, `_2`, ... (`claim`); unnamed ops and
parameter consts get coremltools' builder's automatic names `op_0`, `op_1`,
... (`fresh`).

A function's outputs are named after its results (`ane.result_names`), the
same in both printers and in the manifest (`boundary_names`): the value an
output returns takes the output's name, as coremltools renames an output's
var; an output that returns an argument, or a value already returned, is an
`identity` of that name. Output names are claimed right after the inputs, so
no other value takes them, and one that is an input's or an earlier
output's name becomes `{name}_output` (Core ML's input and output names are
one namespace).
"""

from __future__ import annotations

import re
from collections import defaultdict

from xdsl.dialects import func
from xdsl.ir import BlockArgument, SSAValue

from xdsl_ane.dialects import ane

RESERVED = frozenset(
    # coremltools' sanitizer's words
    "any bool program func tensor list dict tuple true false string bf16 fp16 "
    "fp32 fp64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 state "
    # and the words of MIL text that are not names: keywords and literals
    "const BLOBFILE inf nan".split()
)
"""Words no value or function is named, so that no name reads like a type,
keyword or literal."""

_SUFFIX = re.compile(r"(_\d+)+$")


def mil_identifier(hint: str) -> str:
    """`hint` as a MIL identifier (coremltools' sanitizer's rule)."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", hint) or "var"
    if name[0].isdigit():
        name = "var_" + name
    if name in RESERVED:
        name += "_workaround"
    return name


def stable_base(hint: str) -> str:
    """A MIL identifier from a name hint or weight name without the `_N`
    suffix that xDSL drops from name hints when it parses them, so that a
    printed name survives import (`y_1` → `y`; `var` if nothing is left)."""
    base = _SUFFIX.sub("", re.sub(r"[^a-zA-Z0-9_]", "_", hint))
    if not base.strip("_"):
        return "var"
    return mil_identifier(base)


class NameTable:
    """Unique MIL names within one scope, and the names given to values."""

    def __init__(self, strip_suffix: bool = False) -> None:
        """With `strip_suffix`, a hint's `_N` suffix is dropped before it is
        claimed (MIL text, which is read back through xDSL's parser)."""
        self.strip_suffix = strip_suffix
        self.taken: set[str] = set()
        self.claims: dict[str, int] = {}
        self.counts: defaultdict[str, int] = defaultdict(int)
        self.values: dict[SSAValue, str] = {}
        self.outputs: dict[SSAValue, str] = {}
        """Op results returned by the function -> the (first) output name
        they take (`claim_boundary`)."""

    def claim(self, hint: str, keep_suffix: bool = False) -> str:
        """`hint` as an identifier, or `hint_1`, `hint_2`, ... when taken;
        `keep_suffix` keeps a `_N` suffix (symbol names do not lose it)."""
        base = (
            stable_base(hint)
            if self.strip_suffix and not keep_suffix
            else mil_identifier(hint)
        )
        name, n = base, self.claims.get(base, 0)
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.claims[base] = n
        self.taken.add(name)
        return name

    def fresh(self, base: str) -> str:
        """`base_0`, `base_1`, ...: coremltools' builder's automatic names
        (`Builder._get_free_name`) for ops and their parameter consts."""
        base = mil_identifier(base)
        while True:
            name = f"{base}_{self.counts[base]}"
            self.counts[base] += 1
            if name not in self.taken:
                self.taken.add(name)
                return name

    def define(self, value: SSAValue, default: str) -> str:
        """Names `value`: the output name it takes, else its hint (or
        `default`)."""
        name = self.outputs.get(value) or self.claim(value.name_hint or default)
        self.values[value] = name
        return name

    def claim_boundary(self, function: func.FuncOp) -> tuple[list[str], list[str]]:
        """Claims the names of `function`'s inputs (their hints, else `arg0`,
        `arg1`, ...) and then of its outputs (see the module docstring);
        returns both."""
        block = function.body.blocks.first
        if block is None:  # a declaration: the printers refuse it
            return [], []
        inputs = [self.define(a, f"arg{i}") for i, a in enumerate(block.args)]
        outputs = []
        for value, hint in zip(
            ane.returned_values(function), ane.result_names(function)
        ):
            base = mil_identifier(hint)
            if base in self.taken:
                base = f"{base}_output"
            name = self.claim(base, keep_suffix=True)
            outputs.append(name)
            if not isinstance(value, BlockArgument):
                self.outputs.setdefault(value, name)
        return inputs, outputs

    def __getitem__(self, value: SSAValue) -> str:
        return self.values[value]


def boundary_names(function: func.FuncOp) -> tuple[list[str], list[str]]:
    """The MIL names of `function`'s inputs and outputs, as the printers
    write them."""
    return NameTable().claim_boundary(function)
