"""The operators' keywords are the settings table's rows (issue 19 item 6, issue 42 item 5).

Each setting of `core.settings.table.SETTINGS` marked ``operator`` is a typed, keyword-only
argument of the three operators (default None: the file's value), in the table's order, with a
`:param name: <the table's description> (templated)` line in their base's docstring, a template
field iff the row says ``templated``, filled from ``default_args`` by name as Airflow's own
keywords are; a keyword that is no setting is refused. A row added to the table reaches the
operators, the CLI and the DAG params with no other edit (`test_a_new_row_reaches_...`).
Airflow is imported inside the tests (tests/airflow/conftest.py sets its home first).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from airflow_skald.core.settings.setting import choice_setting, decimal_setting, integer_setting
from airflow_skald.core.settings.table import SETTINGS

BASE = Path(__file__).resolve().parents[3] / "airflow_skald" / "operators" / "base.py"
OWN = ["config", "artifacts", "mode", "chunk_group", "dp_key_conn_id", "dp_key_variable"]
#: a templated value may be a Jinja string whatever the setting's type
ANNOTATION = {
    "integer": "int | str | None",
    "number": "float | str | None",
    "string": "str | None",
    "boolean": "bool | str | None",
    "array": "list | str | None",
}


def _operators(module) -> list[type]:
    return [module.EncodeOperator, module.HistogramLatticeOperator, module.GeneraliseOperator]


def check_keywords(module, settings) -> None:
    """Every operator row of `settings` is a keyword, documented and templated as it says."""
    rows = [s for s in settings if s.operator]
    base = module.SkaldBaseOperator
    params = inspect.signature(base.__init__).parameters
    assert list(params)[1:-1] == OWN + [s.name for s in rows]
    doc = " ".join((base.__doc__ or "").split())
    lines = re.findall(r":param (\w+): (.*?)(?= :param |$)", doc)
    assert len(lines) == len(dict(lines)), "a keyword documented twice"
    for s in settings:
        if not s.operator:
            assert s.name not in params and s.name not in dict(lines), s.name
            continue
        param = params[s.name]
        assert param.kind is param.KEYWORD_ONLY and param.default is None, s.name
        assert param.annotation == ANNOTATION[s.schema["type"]], s.name
        line = s.description + (" (templated)" if s.templated else "")
        assert dict(lines)[s.name] == " ".join(line.split()), s.name
    for op in _operators(module):
        for s in settings:
            assert (s.name in op.template_fields) == (s.operator and s.templated), s.name
        values = {s.name: f"{{{{ params.{s.name} }}}}" for s in rows}
        task = op(task_id="t", **values)
        assert all(getattr(task, s.name) == values[s.name] for s in rows)
        unset = op(task_id="u")
        assert all(getattr(unset, s.name) is None for s in rows)


def test_every_operator_setting_is_a_typed_keyword_in_table_order():
    import airflow_skald.operators.skald as skald

    check_keywords(skald, SETTINGS)


def test_keywords_are_checked_and_filled_from_default_args():
    """An unknown keyword is refused as Airflow refuses any; ``default_args`` fill a setting by
    its name (the metaclass reads the signature), an explicit keyword wins."""
    from airflow.sdk import DAG

    from airflow_skald.operators import EncodeOperator, GeneraliseOperator

    with pytest.raises(TypeError, match="Invalid arguments were passed to EncodeOperator"):
        EncodeOperator(task_id="e", k_anonymity=3)
    defaults = {"k": 7, "suppression_limit": "0.1", "retries": 2, "chunks_per_task": 3}
    op = EncodeOperator(task_id="e", default_args=defaults, suppression_limit=0.2)
    assert (op.k, op.suppression_limit, op.retries, op.chunks_per_task) == (7, 0.2, 2, 3)
    with DAG("unit_defaults", schedule=None, default_args={"k": 5, "overwrite": True}):
        g = GeneraliseOperator(task_id="g", output_path="/out")
    assert (g.k, g.overwrite, g.output_path, g.objective) == (5, True, "/out", None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'kk'"):
        GeneraliseOperator.partial(task_id="p", kk=1).expand(chunk_group=[{}])


def test_settings_render_as_templates():
    from airflow_skald.operators import HistogramLatticeOperator

    op = HistogramLatticeOperator(
        task_id="h", k="{{ params.k }}", output_path="rel/{{ params.day }}", objective="dm"
    )
    op.render_template_fields({"params": {"k": 4, "day": "d1"}})
    assert (op.k, op.output_path, op.objective) == ("4", "rel/d1", "dm")


def test_base_is_well_under_400_lines():
    assert len(BASE.read_text(encoding="utf-8").splitlines()) < 300


THROW_AWAY = (
    integer_setting("top_code", None, 1, "Throw-away: the largest value released of a QID."),
    decimal_setting(
        "top_share", None, ({"minimum": 0}, "a number >= 0"), "Throw-away.", templated=False
    ),
    choice_setting("top_how", None, ("cap", "drop"), "Throw-away, not for tasks.", operator=False),
)


def test_a_new_row_reaches_the_operators_the_cli_and_the_params(monkeypatch):
    """Rows added to the table (and taken out again after the test) are keywords of the three
    operators, flags of `skald run` and DAG params, each as its row says; nothing else edited."""
    from airflow_skald import cli
    from airflow_skald.core.settings import table

    monkeypatch.setattr(table, "SETTINGS", (*table.SETTINGS, *THROW_AWAY))
    for row in THROW_AWAY:
        monkeypatch.setitem(table.BY_NAME, row.name, row)
    import airflow_skald.operators as package

    for name in ("keywords", "base", "skald", "dag_params"):  # imported anew from the table
        importlib.import_module(f"airflow_skald.operators.{name}")
        monkeypatch.delitem(sys.modules, f"airflow_skald.operators.{name}")
        monkeypatch.setattr(package, name, getattr(package, name))
    skald = importlib.import_module("airflow_skald.operators.skald")
    check_keywords(skald, table.SETTINGS)
    op = skald.GeneraliseOperator(
        task_id="g", top_code="{{ params.top }}", top_share="{{ x }}", default_args={"k": 3}
    )
    op.render_template_fields({"params": {"top": 90}})
    assert (op.top_code, op.top_share, op.k) == ("90", "{{ x }}", 3)
    with pytest.raises(TypeError, match="top_how"):
        skald.EncodeOperator(task_id="e", top_how="cap")
    params = importlib.import_module("airflow_skald.operators.dag_params").PARAMS
    assert {"top_code", "top_share", "top_how"} <= set(params)
    args = cli._parser().parse_args(["run", "c.yaml", "--top-code", "7", "--top-how", "cap"])
    assert (args.top_code, args.top_how) == ("7", "cap")
    assert table.parse_overrides({"top_code": "7"}) == {"top_code": 7}
