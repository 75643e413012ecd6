"""operators/dag_params: the DAG Params refuse at trigger time exactly the values the run
refuses for being out of range (issue 18 item 13), with no top-level minimum/maximum for the
trigger form to clamp to, and a message naming the rule."""

from __future__ import annotations

import copy

import pytest
from airflow.sdk import Param
from airflow.sdk.definitions.param import ParamValidationError

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.table import SETTINGS
from airflow_skald.operators.dag_params import PARAMS

BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
NUMERIC = [s for s in SETTINGS if s.param and s.schema["type"] in ("integer", "number")]


def candidates(schema: dict) -> list[float]:
    """Values at, just inside and just outside each bound, and halves for integers."""
    out = {0, 1, 2, 0.5, -1}
    for key in BOUNDS:
        if key in schema:
            b = schema[key]
            out |= {b, b - 1, b + 1, b - 0.001, b + 0.001, b + 0.5}
    return sorted(out)


def run_accepts(setting, value) -> bool:
    try:
        setting.parse(value)
    except ConfigError:
        return False
    return True


def trigger_accepts(setting, value) -> bool:
    try:
        Param(None, **setting.param_schema()).resolve(value)
    except ParamValidationError as exc:
        assert f"{setting.name} must be {setting.expects}" in str(exc)
        return False
    return True


@pytest.mark.parametrize("setting", NUMERIC, ids=[s.name for s in NUMERIC])
def test_trigger_refuses_what_the_run_refuses(setting):
    for value in candidates(setting.schema):
        assert trigger_accepts(setting, value) == run_accepts(setting, value), value
    assert trigger_accepts(setting, None)  # empty: the config file's value


def test_no_bound_the_form_would_clamp_to():
    for name, param in PARAMS.items():
        assert not set(param.schema) & {"minimum", "maximum"}, name


def test_dag_params_carry_the_rules():
    assert not trigger_accepts(next(s for s in SETTINGS if s.name == "k"), 1)
    k, limit = copy.deepcopy(PARAMS["k"]), copy.deepcopy(PARAMS["suppression_limit"])
    with pytest.raises(ParamValidationError, match="k must be an integer >= 2"):
        k.resolve(2.5)
    with pytest.raises(ParamValidationError, match="suppression_limit must be"):
        limit.resolve(5)
    assert k.resolve(7) == 7
