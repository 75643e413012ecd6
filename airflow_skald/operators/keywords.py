"""The three operators' settings keywords, from the settings table (issue 42 item 5, ADR 0108).

Each row of ``core.settings.table.SETTINGS`` marked ``operator`` is a keyword-only argument of
`SkaldBaseOperator` (default None: the config file's value), in the table's order, typed by its
schema; a template field when the row is ``templated``; documented by the row's description as
its ``:param`` line. Nothing here is written per setting: a new row reaches the operators as it
reaches the CLI's flags and the DAG params.

Airflow reads an operator's ``__init__`` signature (``inspect.signature``): its metaclass fills
keywords from ``default_args`` by name, ``.partial()``/``.expand()`` check keywords against it,
and the docs show it. So the settings are in the signature (`signature`), not hidden in
``**kwargs``; a keyword that is neither a setting nor Airflow's is refused by BaseOperator as
before.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from airflow_skald.core.settings.table import SETTINGS

OPERATOR_SETTINGS = tuple(s for s in SETTINGS if s.operator)
NAMES: tuple[str, ...] = tuple(s.name for s in OPERATOR_SETTINGS)
TEMPLATED: tuple[str, ...] = tuple(s.name for s in OPERATOR_SETTINGS if s.templated)

#: a templated value may be a Jinja string whatever the setting's type
ANNOTATION = {
    "integer": "int | str | None",
    "number": "float | str | None",
    "string": "str | None",
    "boolean": "bool | str | None",
    "array": "list | str | None",
}


def take_settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The settings keywords taken out of an ``__init__``'s kwargs (None when not given)."""
    return {name: kwargs.pop(name, None) for name in NAMES}


def signature(init: Callable[..., Any]) -> inspect.Signature:
    """`init`'s signature with one keyword-only parameter per operator setting, before its
    ``**kwargs``: what Airflow, ``help()`` and the docs read."""
    own = inspect.signature(init)
    *named, rest = own.parameters.values()
    if rest.kind is not inspect.Parameter.VAR_KEYWORD:
        raise TypeError(f"{init.__qualname__} must end with **kwargs to take the settings")
    settings = [
        inspect.Parameter(
            s.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=ANNOTATION[s.schema["type"]],
        )
        for s in OPERATOR_SETTINGS
    ]
    return own.replace(parameters=[*named, *settings, rest])


def docstring(head: str | None) -> str:
    """`head` (a class docstring) followed by one ``:param`` line per operator setting."""
    lines = [
        textwrap.fill(
            f":param {s.name}: {s.description}" + (" (templated)" if s.templated else ""),
            width=99,
            initial_indent="    ",
            subsequent_indent="        ",
            break_on_hyphens=False,
        )
        for s in OPERATOR_SETTINGS
    ]
    return (head or "").rstrip() + "\n\n" + "\n".join(lines) + "\n"
