"""Masked-code hierarchies (docs/design.md §3a `type: masked`, ARX's redaction builder).

Level i replaces the last `steps[i]` characters of a code with `*` (`from: left`: the first
ones); the fully masked level is the top `*`. Codes must share one length unless `pad` is
given: then every code is padded on the `align` side to the longest code of the data's domain
(a ZIP stored as the number 2139 becomes 02139). Phase 1 collects the distinct codes as text
(`code_text`, vectorised); the padding width is fixed by the whole domain, so it is applied
when the hierarchy is built and, in phases 2 and 3, to each chunk's distinct entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.data.builders.levels import hierarchy_from_levels, rule_error
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.errors import ConfigError, DataError

_NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
MASK = "*"


@dataclass(frozen=True)
class MaskedRule:
    """Validated masking rule of a text code."""

    steps: tuple[int, ...] | None = None  # None: 1, 2, ..., length
    side: str = "right"  # which end is masked first (`from`)
    pad: str | None = None
    align: str = "right"
    kind: str = "masked"

    def describe(self) -> dict[str, Any]:
        return {
            "type": "masked",
            "steps": list(self.steps) if self.steps else None,
            "from": self.side,
            "pad": self.pad,
            "align": self.align,
        }


def parse_masked_rule(name: str, item: dict) -> MaskedRule:
    """`steps` strictly increasing positive whole numbers; `pad` one character; `from` and
    `align` left or right."""
    steps = item.get("steps")
    if steps is not None:
        if (
            not isinstance(steps, list)
            or not steps
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in steps)
        ):
            raise ConfigError(rule_error(name, "steps", "must be a list of whole numbers >= 1"))
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            raise ConfigError(rule_error(name, "steps", "must strictly increase"))
        steps = tuple(steps)
    side = item.get("from", "right")
    align = item.get("align", "right")
    for key, value in (("from", side), ("align", align)):
        if value not in ("left", "right"):
            raise ConfigError(rule_error(name, key, "must be left or right"))
    pad = item.get("pad")
    if pad is not None and (not isinstance(pad, str) or len(pad) != 1):
        raise ConfigError(rule_error(name, "pad", "must be one character"))
    return MaskedRule(steps, side, pad, align)


def is_numeric_type(typ: pa.DataType) -> bool:
    return pa.types.is_integer(typ) or pa.types.is_floating(typ)


def code_text(name: str, arr: pa.Array) -> tuple[pa.Array, bool]:
    """Distinct entries of a chunk as code text, and whether they are all numbers (a numeric
    column: docs/design.md §3a reads it as a code only with `pad`). Whole floats lose their `.0`."""
    typ = arr.type
    if is_numeric_type(typ):
        if pa.types.is_floating(typ):
            whole = pc.equal(pc.floor(arr), arr)
            if pc.all(whole).as_py() not in (True, None):
                raise DataError(
                    rule_error(
                        name, "masked", "a numeric code holds a fraction: store codes as text"
                    )
                )
            arr = pc.cast(arr, pa.int64())
        return pc.cast(arr, pa.string()), True
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        arr = pc.cast(arr, pa.string())
    numeric = pc.all(pc.match_substring_regex(arr, _NUMBER)).as_py()
    return arr, numeric is not False


def padded(arr: pa.Array, rule: MaskedRule, width: int) -> pa.Array:
    """Codes padded to `width` with the rule's character (no-op without `pad`)."""
    if rule.pad is None:
        return arr
    pad = pc.utf8_lpad if rule.align == "right" else pc.utf8_rpad
    return pad(arr, width=width, padding=rule.pad)


def code_width(name: str, rule: MaskedRule, codes: Sequence[str], numeric: bool) -> int:
    """The length every code has once padded; mixed lengths without `pad` and numeric columns
    without `pad` are bad rules."""
    if numeric and rule.pad is None:
        raise ConfigError(
            rule_error(name, "masked", "the column holds numbers: give 'pad' to read them as codes")
        )
    lengths = {len(c) for c in codes}
    if len(lengths) > 1 and rule.pad is None:
        lo, hi = min(lengths), max(lengths)
        raise ConfigError(
            rule_error(name, "pad", f"codes have lengths {lo} to {hi}: give 'pad' to align them")
        )
    return max(lengths, default=0)


def build_masked(name: str, rule: MaskedRule, codes: Sequence[str], width: int) -> Hierarchy:
    """The hierarchy over the distinct padded `codes` (all of length `width`)."""
    steps = rule.steps or tuple(range(1, width + 1))
    if steps[-1] > width:
        raise ConfigError(
            rule_error(name, "steps", f"step {steps[-1]} is beyond the code length {width}")
        )
    levels = []
    for n in steps:
        if n >= width:  # fully masked: the top
            break
        if rule.side == "right":
            levels.append([c[: width - n] + MASK * n for c in codes])
        else:
            levels.append([MASK * n + c[n:] for c in codes])
    return hierarchy_from_levels(name, list(codes), levels)
