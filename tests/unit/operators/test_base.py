"""The operators' keywords are the settings table's rows, written out (issue 19 item 6).

Each setting of `core.settings.table.SETTINGS` is an explicit, typed, keyword-only argument
of `SkaldBaseOperator.__init__` (default None: the file's value), in the table's order, with a
`:param name: <the table's description> (templated)` line in the class docstring, and is a
template field. Read from the source (no Airflow import: this is the unit layer), so a setting
added to the table without its keyword fails here, with the lines to paste.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

from airflow_skald.core.settings.table import SETTINGS

SOURCE = Path(__file__).resolve().parents[3] / "airflow_skald" / "operators" / "base.py"
#: a templated value may be a Jinja string whatever the setting's type
ANNOTATION = {
    "integer": "int | str | None",
    "number": "float | str | None",
    "string": "str | None",
    "boolean": "bool | str | None",
    "array": "list | str | None",
}


def _operator() -> ast.ClassDef:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    return next(
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SkaldBaseOperator"
    )


def _init(cls: ast.ClassDef) -> ast.FunctionDef:
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def expected_lines() -> str:
    """What to paste: the keywords, the docstring lines and the assignments."""
    params = [
        f"        {s.name}: {ANNOTATION[s.schema['type']]} = None,"
        + ("  # noqa: E741 (the setting's name)" if s.name == "l" else "")
        for s in SETTINGS
    ]
    docs = [
        textwrap.fill(
            f":param {s.name}: {s.description} (templated)",
            width=99,
            initial_indent="    ",
            subsequent_indent="        ",
            break_on_hyphens=False,
        )
        for s in SETTINGS
    ]
    sets = [f"        self.{s.name} = {s.name}" for s in SETTINGS]
    return "\n".join(["# __init__ keywords", *params, "# docstring", *docs, "# body", *sets])


def test_every_setting_is_an_explicit_typed_keyword_in_table_order():
    init = _init(_operator())
    own = ["config", "artifacts", "mode", "chunk_group", "dp_key_conn_id", "dp_key_variable"]
    names = [a.arg for a in init.args.kwonlyargs]
    wanted = own + [s.name for s in SETTINGS]
    assert names == wanted, "operator keywords differ from the settings table:\n" + expected_lines()
    pairs = zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True)
    by_name = dict(zip(names, pairs, strict=True))
    for s in SETTINGS:
        arg, default = by_name[s.name]
        assert isinstance(default, ast.Constant) and default.value is None, s.name
        assert ast.unparse(arg.annotation) == ANNOTATION[s.schema["type"]], s.name
        assigned = [
            n
            for n in ast.walk(init)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == s.name for t in n.targets)
        ]
        assert assigned, f"__init__ does not keep {s.name} (self.{s.name} = {s.name})"


def test_every_setting_has_its_param_line_from_the_table():
    doc = " ".join((ast.get_docstring(_operator()) or "").split())
    for s in SETTINGS:
        line = " ".join(f":param {s.name}: {s.description} (templated)".split())
        assert line in doc, f"docstring line missing or stale:\n{expected_lines()}"
    documented = re.findall(r":param (\w+):", doc)
    assert len(documented) == len(set(documented)), "a keyword documented twice"


def test_settings_are_template_fields():
    source = SOURCE.read_text(encoding="utf-8")
    assert re.search(r"template_fields[^=]*=\s*\([^)]*\*OVERRIDE_KEYS", source)
