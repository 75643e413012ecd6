"""Whether a value is valid under a JSON Schema, without importing `jsonschema` when it
plainly is.

Settings and manifest fields are checked against small schemas (type, bounds, enum, lengths,
items, properties). Importing `jsonschema` costs ~0.1-0.2 s of every run's start-up (issue
23), so `is_valid` first checks those keywords directly and answers True only when it is
sure; anything else (a schema keyword not listed here, a value that looks invalid, NaN) is
decided by `jsonschema` itself, so a refused value is always `jsonschema`'s answer.
"""

from __future__ import annotations

import math
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}
_KNOWN = frozenset(
    {
        "type",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "enum",
        "minLength",
        "maxLength",
        "items",
        "properties",
        "additionalProperties",
        "propertyNames",
        "minProperties",
        "required",
        "description",
        "title",
    }
)


def is_valid(value: Any, schema: dict) -> bool:
    """`jsonschema.validate(value, schema)` would pass (the same answer, cheaper)."""
    if _plainly_valid(value, schema):
        return True
    import jsonschema  # only for values that may be invalid, or schemas beyond the subset

    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _of_type(value: Any, kind: str) -> bool:
    if kind not in _TYPES or (isinstance(value, bool) and kind not in ("boolean",)):
        return False
    return isinstance(value, _TYPES[kind])


def _plainly_valid(value: Any, schema: Any) -> bool:
    """True when `value` surely satisfies `schema`; False when unsure or invalid."""
    if schema is True:
        return True
    if not isinstance(schema, dict) or not schema.keys() <= _KNOWN:
        return False
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_of_type(value, k) for k in kinds):
            return False
    if "enum" in schema and not (
        isinstance(value, str | int | float | bool | None)
        and any(type(e) is type(value) and e == value for e in schema["enum"])
    ):
        return False
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not (math.isfinite(value) and _in_bounds(value, schema)):
        return False
    if isinstance(value, str) and not (
        schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", math.inf)
    ):
        return False
    if isinstance(value, list) and "items" in schema:
        return all(_plainly_valid(item, schema["items"]) for item in value)
    if isinstance(value, dict):
        return _object_valid(value, schema)
    return True


def _in_bounds(value: float, schema: dict) -> bool:
    checks = (
        ("minimum", lambda b: value >= b),
        ("maximum", lambda b: value <= b),
        ("exclusiveMinimum", lambda b: value > b),
        ("exclusiveMaximum", lambda b: value < b),
    )
    return all(
        isinstance(schema[key], int | float) and ok(schema[key])
        for key, ok in checks
        if key in schema
    )


def _object_valid(value: dict, schema: dict) -> bool:
    if len(value) < schema.get("minProperties", 0):
        return False
    if any(key not in value for key in schema.get("required", ())):
        return False
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames", True)
    for key, item in value.items():
        if names is not True and not _plainly_valid(key, names):
            return False
        sub = props.get(key, extra)
        if sub is False or not _plainly_valid(item, sub):
            return False
    return True
