"""The settings reference page of the documentation site, written from the settings table itself
(`table.SETTINGS`), so the page names every setting the file, the CLI, the DAG params and the
operators take.

`python -m airflow_skald.core.settings.reference [FILE]` writes it (`make docs` does, into
docs/reference/settings.md); the site's build and `make test` fail when the page in docs/ is not
what this writes.
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from airflow_skald.core.settings.quality import QUALITY_WEIGHT
from airflow_skald.core.settings.setting import Setting
from airflow_skald.core.settings.table import SETTINGS

PAGE = Path("docs/reference/settings.md")

_HEADER = """# Settings reference

<!-- Written by `python -m airflow_skald.core.settings.reference` (`make docs`) from the settings
table, airflow_skald/core/settings/table.py: edit the table, not this page. -->

Every per-run setting, as the one settings table defines it (ADR 0010): its name, which is also
its DAG param's and the three operators' keyword (ADR 0108), where it sits in the YAML file, its
`skald run` flag, whether the operators template it, the values it takes and its default when
the file leaves it out. A flag or param left empty means the file's value,
never a hidden default ([§2](../design.md#s2)); a bad value is refused on every route with the
same one line, `<setting> must be <values> (got ...)`. The file's other sections (input and output, the QIDs
and their hierarchies, the criteria themselves) are described in the
[configuration guide](../guide/configuration.md) and the [design](../design.md).

| setting (DAG param) | YAML key | `skald run` flag | operators | values (default) | what |
|---|---|---|---|---|---|
"""

_FOOTER = """
A YAML key "—" marks a setting that only a run sets: a criterion's threshold (`l`, `t`, `c`, the
risk models', differential privacy's) replaces the value of the one criterion of that kind the
file configures (several of that kind: the run is refused), and `overwrite` is a flag
without a value on the command line. Beside the table, the file's
`quality.weights` maps each QID to {weight}; `c` (recursive
(c,l)-diversity) is set in the file only.
"""


def _value(value: Any) -> str:
    """A default as the user would write it (0.2, not Fraction(1, 5))."""
    if value is None:
        return "—"
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


def _linked(text: str) -> str:
    """Citations of the design (``docs/design.md §4d``) as links to its section."""
    return re.sub(r"docs/design\.md §(\d[a-f]?)", r"[§\1](../design.md#s\1)", text).replace(
        "|", "\\|"
    )


def _flag(setting: Setting) -> str:
    """The CLI's flag, as cli._add_settings makes it: a boolean one takes no value."""
    if setting.cli:
        return f"`{setting.flag}`"
    return f"`{setting.flag}` (no value)" if setting.schema["type"] == "boolean" else "—"


def _keyword(setting: Setting) -> str:
    """The operators' keyword (operators/keywords.py): templated, plain, or none."""
    if not setting.operator:
        return "—"
    return "templated" if setting.templated else "not templated"


def _row(setting: Setting) -> str:
    default = "" if setting.default is None else f" ({_value(setting.default)})"
    cells = (
        f"`{setting.name}`" + ("" if setting.param else " (not a param)"),
        f"`{'.'.join(setting.path)}`" if setting.path else "—",
        _flag(setting),
        _keyword(setting),
        setting.expects.replace("|", "\\|") + default,
        _linked(setting.description),
    )
    return "| " + " | ".join(cells) + " |"


def render() -> str:
    """The page's Markdown."""
    rows = "\n".join(_row(s) for s in SETTINGS)
    weight = f"{QUALITY_WEIGHT.expects} ({_linked(QUALITY_WEIGHT.description)})"
    return _HEADER + rows + "\n" + _FOOTER.replace("{weight}", weight)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else PAGE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
