"""The config's quasi-identifiers (docs/design.md §2, §3a): `QidSpec`, one per QID as configured, and
the parser of the `quasi_identifiers:` section (categorical hierarchies listed in full or built
from an `order`, numerical widths or `bins`, dates, masked codes, microaggregation)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from airflow_skald.core.data.builders import Rule
from airflow_skald.core.data.builders.dates import parse_date_rule
from airflow_skald.core.data.builders.intervals import parse_interval_rule
from airflow_skald.core.data.builders.masked import parse_masked_rule
from airflow_skald.core.data.builders.ordered import parse_ordered_rule
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.data.hierarchies import hierarchy_of as _hierarchy
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.microaggregation import QidMicroaggregation, parse_microaggregation
from airflow_skald.core.settings.parse import mapping as _mapping
from airflow_skald.core.settings.parse import no_unknown as _no_unknown
from airflow_skald.core.text import decimal_text


@dataclass(frozen=True)
class QidSpec:
    """One quasi-identifier as configured: `hierarchy` is set for categorical QIDs listed in
    full; `rule` for hierarchies built from a rule over phase 1's domain (docs/design.md §3a: date,
    masked, numerical `bins`, categorical `order`)."""

    name: str
    type: str  # "categorical" | "numerical" | "date" | "masked"
    hierarchy: Hierarchy | None = None
    min_width: Fraction | None = None
    widths: tuple[Fraction, ...] | None = None
    encode: bool = False
    rule: Rule | None = None
    microaggregation: QidMicroaggregation | None = (
        None  # docs/design.md §4f: released as a class aggregate
    )

    def describe(self) -> dict[str, Any]:
        """JSON-safe summary (hierarchies hashed, not copied) for manifests; a rule as written
        (the hierarchy it builds is hashed in the manifest's `hierarchies`)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.microaggregation is not None:
            out["microaggregation"] = self.microaggregation.describe()
        if self.rule is not None:
            out["rule"] = self.rule.describe()
        if self.type in ("date", "masked"):
            return out
        if self.type == "categorical":
            if self.hierarchy is not None:
                out["hierarchy_sha256"] = self.hierarchy.sha256
                out["hierarchy_levels"] = self.hierarchy.top_level + 1
        else:
            out["min_width"] = decimal_text(self.min_width)
            out["widths"] = [decimal_text(w) for w in self.widths] if self.widths else None
            out["encode"] = self.encode
        return out


def parse_qids(raw: Any, base_dir: Path | None) -> list[QidSpec]:
    """The `quasi_identifiers:` list, every QID checked (hierarchy files read from `base_dir`)."""
    if not isinstance(raw, list) or not raw:
        raise ConfigError("quasi_identifiers must be a non-empty list")
    out = [_parse_qid(i, item, base_dir) for i, item in enumerate(raw)]
    names = [q.name for q in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"quasi-identifier '{dup[0]}' is listed twice")
    return out


def _parse_qid(i: int, item: Any, base_dir: Path | None) -> QidSpec:
    """Entry `i` of the list: its type's keys, and its microaggregation when it asks for one."""
    item = _mapping(item, f"quasi_identifiers[{i}]")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"quasi_identifiers[{i}] needs a 'name'")
    kind = item.get("type")
    where = f"quasi-identifier '{name}'"
    micro = None
    if "microaggregation" in item:
        if kind not in ("numerical", "categorical"):
            raise ConfigError(f"{where}: microaggregation needs a numerical or categorical QID")
        micro = parse_microaggregation(item["microaggregation"], where)
        item = {key: v for key, v in item.items() if key != "microaggregation"}
    spec = _parse_typed(name, kind, item, where, base_dir)
    return spec if micro is None else replace(spec, microaggregation=micro)


def _parse_typed(name: str, kind: Any, item: dict, where: str, base_dir: Path | None) -> QidSpec:
    """A QID of type `kind`: its rule, hierarchy or widths."""
    if kind == "categorical" and "order" in item:
        _no_unknown(item, {"name", "type", "order", "group", "labels"}, where)
        return QidSpec(name=name, type=kind, rule=parse_ordered_rule(name, item))
    if kind == "categorical":
        _no_unknown(item, {"name", "type", "hierarchy", "hierarchy_file"}, where)
        if ("hierarchy" in item) == ("hierarchy_file" in item):
            raise ConfigError(
                f"{where} needs exactly one of 'hierarchy', 'hierarchy_file' or 'order'"
            )
        hierarchy = _hierarchy(item, name, base_dir)
        return QidSpec(name=name, type="categorical", hierarchy=hierarchy)
    if kind == "date":
        _no_unknown(item, {"name", "type", "levels"}, where)
        return QidSpec(name=name, type=kind, rule=parse_date_rule(name, item))
    if kind == "masked":
        _no_unknown(item, {"name", "type", "steps", "from", "pad", "align"}, where)
        return QidSpec(name=name, type=kind, rule=parse_masked_rule(name, item))
    if kind == "numerical" and "bins" in item:
        keys = {"name", "type", "min_width", "bins", "group", "below", "above"}
        _no_unknown(item, keys | {"widths", "encode"}, where)
        min_width = _width(item.get("min_width", 1), f"{where}: min_width")
        rule = parse_interval_rule(name, item, min_width)
        return QidSpec(name=name, type=kind, min_width=min_width, rule=rule)
    if kind == "numerical":
        return _parse_numerical(name, item, where)
    raise ConfigError(f"{where}: type must be categorical, numerical, date or masked")


def _parse_numerical(name: str, item: dict, where: str) -> QidSpec:
    """A numerical QID binned by widths (min_width, then whole multiples of it)."""
    _no_unknown(item, {"name", "type", "min_width", "widths", "encode"}, where)
    min_width = _width(item.get("min_width", 1), f"{where}: min_width")
    widths = item.get("widths")
    if widths is not None:
        if not isinstance(widths, list) or not widths:
            raise ConfigError(f"{where}: widths must be a non-empty list")
        widths = tuple(_width(w, f"{where}: widths") for w in widths)
        if widths[0] != min_width:
            raise ConfigError(f"{where}: widths must start with min_width ({min_width})")
        for a, b in zip(widths, widths[1:], strict=False):
            if b <= a or (b / a).denominator != 1:
                raise ConfigError(
                    f"{where}: width {_fmt(b)} is not a larger whole multiple of {_fmt(a)}"
                )
    encode = item.get("encode", False)
    if not isinstance(encode, bool):
        raise ConfigError(f"{where}: encode must be true or false")
    if encode and min_width.denominator != 1:
        raise ConfigError(f"{where}: an encoded QID's min_width counts ranks: use 1, 2, ...")
    return QidSpec(name=name, type="numerical", min_width=min_width, widths=widths, encode=encode)


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def _width(value: Any, where: str) -> Fraction:
    if isinstance(value, bool):
        raise ConfigError(f"{where} must be a positive number")
    try:
        w = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ConfigError(f"{where} must be a positive number") from None
    if w <= 0:
        raise ConfigError(f"{where} must be a positive number")
    return w
