"""The order of a sensitive attribute's values for ordered-distance t-closeness (docs/design.md
§4b, ADR 0044), as ARX's data types order them (`DataManager.getOrder`: the dictionary sorted by
`DataType.compare`):

- `numbers` (default): numerically, a null last (the order of the attribute's codes);
- `text`: ARX's `DataType.STRING`, Java's `String.compareTo`: UTF-16 code units compared in
  turn, a shorter prefix first. A null (an empty cell) is ARX's empty text, so it comes first;
- a list of values: ARX's `DataType.createOrderedString(values)`; a null takes the place of
  the listed empty text (`""` or `null`), else the last place (ARX's `NULL`, ordered last).

`rank(values, order)` maps each value code to its place (None: the codes' own order).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_skald.core.errors import ConfigError

ORDERS = ("numbers", "text")


def value_text(value: object) -> str:
    """A sensitive value as a CSV release writes it (pyarrow's text; a null is empty): the text
    a value is ordered by and matched with."""
    return "" if value is None else pa.scalar(value).cast(pa.string()).as_py()


def java_key(text: str) -> bytes:
    """A key ordering texts as Java's `String.compareTo`: big-endian UTF-16 code units."""
    return text.encode("utf-16-be", "surrogatepass")


def rank(
    values: Sequence[object], order: str | tuple[str, ...], attribute: str, where: str
) -> np.ndarray | None:
    """Each value code's place in `order` (None for `numbers`: the codes are in order)."""
    if order == "numbers":
        return None
    if order == "text":
        keys = [b"" if v is None else java_key(value_text(v)) for v in values]
        places = sorted(range(len(values)), key=keys.__getitem__)
    else:
        listed = {v: i for i, v in enumerate(order)}
        last = len(order)
        null_place = listed.get("", last)
        places_of = []
        for i, v in enumerate(values):
            if v is None:
                places_of.append(null_place)
                continue
            place = listed.get(value_text(v))
            if place is None:
                raise ConfigError(
                    f"{where}: the order of '{attribute}' does not list a value of the input "
                    f"(value #{i + 1} in sorted order)"
                )
            places_of.append(place)
        places = sorted(range(len(values)), key=places_of.__getitem__)
    out = np.empty(len(values), dtype=np.int64)
    out[np.asarray(places, dtype=np.int64)] = np.arange(len(values), dtype=np.int64)
    return out


def as_order(value: Sequence[object], where: str) -> str | tuple[str, ...]:
    """The settings table's `t_order` value (a list; `numbers` or `text` alone is the keyword)
    as an order: a list as texts (a null as `""`), each once."""
    if len(value) == 1 and value[0] in ORDERS:
        return str(value[0])
    texts = tuple("" if v is None else value_text(v) for v in value)
    if len(set(texts)) != len(texts):
        raise ConfigError(f"{where} lists a value twice")
    return texts


def order_sha256(order: tuple[str, ...]) -> str:
    """The SHA-256 of a listed order (its JSON), what a manifest names it by."""
    return hashlib.sha256(json.dumps(list(order), ensure_ascii=False).encode()).hexdigest()


def code_of(stats: Any) -> Callable[[object], int]:
    """The code of a released value among `stats`' values (a `SensitiveStats`: `values`,
    `numeric`): the value itself, its text (a CSV
    release), or the number a text reads as ("1.0" for 1: a numerical attribute in a CSV
    release); KeyError when phase 1 did not see it."""
    index = {v: i for i, v in enumerate(stats.values)}
    text = {value_text(v): i for i, v in enumerate(stats.values)}

    def code(value: object) -> int:
        if value in index:
            return index[value]
        key = value if isinstance(value, str) else value_text(value)
        if key in text:
            return text[key]
        if stats.numeric and isinstance(value, str) and value.strip():
            try:
                return index[float(value)]  # 1.0 == 1: found as an int or a float
            except ValueError:
                pass
        raise KeyError(value)

    return code
