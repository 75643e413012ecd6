"""A template that cannot render is bad input, not a passing failure.

A SKALD setting may hold a template (``releases/daily-{{ ds }}``). Airflow renders a task's
templated fields before ``execute`` and retries a task whose rendering raised like any other
failure; but a template that names what the run does not have fails the same way every time.
So the operators turn a rendering error into one line naming the setting and what is missing
(for ``{{ ds }}`` and its kin: the run's logical date, absent when it was triggered with
``"logical_date": null``), raised so that no retry runs (``AirflowFailException`` from the
first rendering, ``ConfigError`` from the operators' second pass over path settings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: context keys Airflow sets only for a run with a logical date (task SDK's template context)
LOGICAL_DATE_KEYS = frozenset(
    {
        "logical_date",
        "ds",
        "ds_nodash",
        "ts",
        "ts_nodash",
        "ts_nodash_with_tz",
        "task_instance_key_str",
        "data_interval_start",
        "data_interval_end",
        "prev_data_interval_start_success",
        "prev_data_interval_end_success",
    }
)

_UNDEFINED = re.compile(r"'([^']+)' is undefined")


def template_failure(name: str, template: Any, exc: BaseException, context: Mapping) -> str:
    """One line: which setting's template could not be rendered, and why."""
    found = _UNDEFINED.search(str(exc))
    missing = found.group(1) if found else None
    if missing in LOGICAL_DATE_KEYS and context.get(missing) is None:
        return (
            f"{name} {template!r} needs the run's logical date ({{{{ {missing} }}}}), and this "
            'run has none (it was triggered without one, e.g. with "logical_date": null): '
            'trigger it with a logical date (REST: "logical_date": "2026-03-01T00:00:00Z"; '
            f"the trigger form: Logical date) or set {name} without {{{{ {missing} }}}}"
        )
    return f"{name} {template!r} cannot be rendered: {type(exc).__name__}: {exc}"
