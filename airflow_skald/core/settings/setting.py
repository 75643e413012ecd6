"""One per-run setting (`Setting`): how a value is coerced, validated and refused, and its DAG
Param's schema. The settings table (`table.SETTINGS`) is made of them.

Validation is JSON Schema (``jsonschema``, which Airflow's Params use too; `json_schema.is_valid`
imports it only for values not plainly valid) after one coercion step for text (CLI flags and
templated values arrive as strings). An empty value (None, "", "None", "null") means "not set":
the file's value is used, never a hidden default (docs/design.md §2). `integer_setting`,
`decimal_setting` and `choice_setting` build the common kinds of row, the words of their error
message following from their bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.json_schema import is_valid

EMPTY = (None, "", "None", "null")


def is_empty(value: Any) -> bool:
    """A setting left empty (an unset flag, an empty param, a template that rendered nothing)."""
    return value is None or (isinstance(value, str) and value.strip() in EMPTY)


def to_integer(value: Any) -> Any:
    """Whole numbers from text or floats (``"7"``, ``7.0``); anything else is left to the schema."""
    if isinstance(value, str):
        text = value.strip().lstrip("+")
        if text.isdigit():
            return int(text)
        try:
            number = float(text)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def to_decimal(value: Any) -> Any:
    """The exact fraction of the decimal written (``0.29`` is 29/100, not a binary float)."""
    if isinstance(value, bool | Fraction):
        return value
    if isinstance(value, int | float | str):
        try:
            return Fraction(str(value).strip())
        except (ValueError, ZeroDivisionError, OverflowError):
            # NaN and infinities (YAML .nan, .inf) are no decimals: shown as written, refused
            return str(value) if isinstance(value, float) else value
    return value


def to_names(value: Any) -> Any:
    """A list from comma-separated text (``"a, b"``); anything else is left to the schema."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value) if isinstance(value, tuple) else value


def to_pairs(value: Any) -> Any:
    """Pairs from text (``"a:b, c:d"``) or a list of two-item lists; else left to the schema."""
    if isinstance(value, str):
        return [[x.strip() for x in p.split(":")] for p in value.split(",") if p.strip()]
    if isinstance(value, list | tuple):
        return [list(p) if isinstance(p, list | tuple) else p for p in value]
    return value


def _shown(value: Any) -> str:
    """A bad setting as the user wrote it (settings are not personal data): 1, 2.5, 'abc'."""
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"
    if isinstance(value, bool | int | float | str):
        return repr(value)
    return f"a {type(value).__name__}"


def _as_schema_value(value: Any) -> Any:
    """JSON Schema knows no Fraction: check its float, keep the exact value."""
    return float(value) if isinstance(value, Fraction) else value


@dataclass(frozen=True)
class Setting:
    """One per-run setting.

    ``path`` is where it sits in the YAML file (None: a run option only, e.g. ``overwrite``);
    ``expects`` completes "<name> must be ..." in the error message of every route;
    ``default`` is the value when the file leaves it out (the only place it is written);
    ``cli``, ``param`` and ``operator``: a ``skald run`` flag with a value, a DAG param, a
    keyword of the three operators (``operators/keywords.py``), ``templated`` one of their
    template fields; ``description`` is its help, Param description and ``:param`` line.
    """

    name: str
    path: tuple[str, ...] | None
    schema: dict
    expects: str
    description: str
    coerce: Callable[[Any], Any] = lambda v: v
    cli: bool = True
    param: bool = True
    default: Any = None
    operator: bool = True
    templated: bool = True

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-").removesuffix("-path")

    @property
    def where(self) -> str:
        """The name an error message gives: the file's key path, else the setting's name."""
        return ".".join(self.path) if self.path and len(self.path) > 1 else self.name

    def parse(self, value: Any, where: str | None = None) -> Any:
        """The validated value; ConfigError with one line naming the setting otherwise."""
        value = self.coerce(value)
        if not is_valid(_as_schema_value(value), self.schema):
            raise ConfigError(f"{where or self.where} must be {self.expects} (got {_shown(value)})")
        return value

    def param_schema(self) -> dict:
        """The DAG Param's schema: the type (or null), and the bounds in a form the trigger
        form cannot clamp to.

        Airflow's trigger form clamps a number field to the schema's top-level `minimum` and
        `maximum` before sending it (k=1 would silently become 2). So no such keyword stands at
        the top: the values outside the setting's bounds (and a non-integer for an integer
        setting) are the `if` of an `if`/`then`, which the form does not read; the `then` is
        a `const` holding the rule, so the trigger (form or REST) refuses such a value with
        HTTP 400 whose first line is the rule (Airflow shows jsonschema's message:
        ``Invalid input for param k: 'k must be an integer >= 2' was expected``, then
        jsonschema's "Failed validating ... On instance: 1" lines). The run checks every value
        again, as every route does.

        A numeric setting's type also admits text, which the `if` refuses with the same rule
        (issue 40, ADR 0106): the form's number field (a param of one non-null numeric type)
        sends anything typed that is no number as null, the same as an empty field, so `abc`
        ran with the file's k. A param of two non-null types is a field that sends a number
        typed as that number and anything else as the text typed; empty is still null.
        """
        kind = self.schema["type"]
        numeric = kind in ("integer", "number")
        schema: dict[str, Any] = {
            "type": ["null", "number", "string"] if numeric else ["null", kind]
        }
        if "enum" in self.schema:
            schema["enum"] = [None, *self.schema["enum"]]
            # the form's label of the empty choice (it would read "null")
            schema["values_display"] = {"null": "(the config file's value)"}
        outside = [
            {opposite: self.schema[bound]}
            for bound, opposite in _OUTSIDE.items()
            if bound in self.schema
        ]
        if kind == "integer":
            outside.append({"not": {"multipleOf": 1}})
        refused = [{"type": "string"}] if numeric else []
        if outside:
            refused.append({"type": "number", "anyOf": outside})
        if refused:
            schema["if"] = {"anyOf": refused}
            schema["then"] = {"const": f"{self.name} must be {self.expects}"}
        return schema


#: a bound of a setting's schema -> the keyword that matches the numbers beyond it
_OUTSIDE = {
    "minimum": "exclusiveMaximum",
    "maximum": "exclusiveMinimum",
    "exclusiveMinimum": "maximum",
    "exclusiveMaximum": "minimum",
}


#: the ranges of a decimal setting: its schema's bounds and the words "<name> must be ..."
ABOVE_ZERO = ({"exclusiveMinimum": 0}, "a number > 0")
AT_LEAST_ZERO = ({"minimum": 0}, "a number >= 0")
SHARE = ({"exclusiveMinimum": 0, "maximum": 1}, "a number in (0, 1]")
OPEN_SHARE = ({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, "a number in (0, 1)")
ZERO_TO_ONE = ({"minimum": 0, "maximum": 1}, "a number between 0 and 1")


def integer_setting(
    name: str, path: tuple[str, ...] | None, minimum: int, description: str, **options: Any
) -> Setting:
    """A whole number >= `minimum` (from text too: ``"7"``, ``7.0``)."""
    expects = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    schema = {"type": "integer", "minimum": minimum}
    return Setting(name, path, schema, expects, description, coerce=to_integer, **options)


def decimal_setting(
    name: str,
    path: tuple[str, ...] | None,
    bounds: tuple[dict, str],
    description: str,
    **options: Any,
) -> Setting:
    """An exact decimal within `bounds` (one of the ranges above)."""
    limits, expects = bounds
    schema = {"type": "number", **limits}
    return Setting(name, path, schema, expects, description, coerce=to_decimal, **options)


def choice_setting(
    name: str, path: tuple[str, ...] | None, choices: Any, description: str, **options: Any
) -> Setting:
    """One of the names `choices` lists."""
    schema = {"type": "string", "enum": list(choices)}
    return Setting(name, path, schema, "one of " + ", ".join(choices), description, **options)
