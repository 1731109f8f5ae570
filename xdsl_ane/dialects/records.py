"""The `ane.*` function records (layouts, dynamic weights, I/O packing) as
builtin attributes, and back: plain values (dicts, lists, ints, strings)
map to `DictionaryAttr`, `ArrayAttr` (a list of ints, or an empty list:
`array<i64: ...>`),
`IntegerAttr` (i64) and `StringAttr`, so a record is typed IR, printed and
parsed with the module, never JSON inside a string."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute


def record_attribute(value: Any) -> Attribute:
    """A plain value as builtin attributes (bools and floats are not record
    values)."""
    if isinstance(value, dict):
        return record_dict(value)
    if isinstance(value, list | tuple):
        if all(type(v) is int for v in value):
            return DenseArrayBase.from_list(i64, list(value))
        return ArrayAttr([record_attribute(v) for v in value])
    if type(value) is int:
        return IntegerAttr(value, i64)
    if isinstance(value, str):
        return StringAttr(value)
    raise TypeError(f"{value!r} is not a record value")


def record_dict(value: dict[str, Any]) -> DictionaryAttr:
    """`record_attribute` of a dict."""
    return DictionaryAttr({k: record_attribute(v) for k, v in value.items()})


def record_value(attr: Attribute) -> Any:
    """The plain value of a record attribute (`record_attribute`'s inverse;
    an attribute of another kind reads as its text)."""
    if isinstance(attr, ArrayAttr):
        return [record_value(a) for a in attr.data]
    if isinstance(attr, DictionaryAttr):
        return {k: record_value(v) for k, v in attr.data.items()}
    if isinstance(attr, DenseArrayBase):
        return list(attr.get_values())
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return str(attr)
