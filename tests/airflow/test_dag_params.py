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
from airflow_skald.operators.dag_params import DRAFT, PARAMS

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
    assert {**setting.param_schema(), **DRAFT} == PARAMS[setting.name].schema  # the DAGs' own
    try:
        Param(None, **PARAMS[setting.name].schema).resolve(value)
    except ParamValidationError as exc:
        assert f"{setting.name} must be {setting.expects}" in str(exc)
        return False
    return True


@pytest.mark.parametrize("setting", NUMERIC, ids=[s.name for s in NUMERIC])
def test_trigger_refuses_what_the_run_refuses(setting):
    for value in candidates(setting.schema):
        assert trigger_accepts(setting, value) == run_accepts(setting, value), value
    assert trigger_accepts(setting, None)  # empty: the config file's value


def test_a_number_param_refuses_any_text():
    """Issue 40 item 6: the numeric params take text (so the form sends what was typed, not
    null for a non-number) and refuse every text with the rule; a number or empty is as before."""
    for setting in NUMERIC:
        param = PARAMS[setting.name]
        assert param.schema["type"] == ["null", "number", "string"], setting.name
        for text in ("abc", "", "7", "0.5", "null"):
            with pytest.raises(ParamValidationError, match=f"{setting.name} must be"):
                copy.deepcopy(param).resolve(text)
        assert copy.deepcopy(param).resolve(None) is None


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


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        ({"k": 1}, "Invalid input for param k: 'k must be an integer >= 2' was expected"),
        ({"k": 2.5}, "Invalid input for param k: 'k must be an integer >= 2' was expected"),
        (
            {"suppression_limit": 1.5},
            "Invalid input for param suppression_limit: "
            "'suppression_limit must be a number between 0 and 1' was expected",
        ),
        # issue 40 item 6: a non-number (what the form sends as typed) names the rule too
        ({"k": "abc"}, "Invalid input for param k: 'k must be an integer >= 2' was expected"),
        ({"k": "7"}, "Invalid input for param k: 'k must be an integer >= 2' was expected"),
        (
            {"t": "0,2"},
            "Invalid input for param t: 't must be a number in (0, 1]' was expected",
        ),
    ],
)
def test_the_trigger_refusal_starts_with_the_rule(bad, line):
    """Issue 30 item 3: what the api-server answers (HTTP 400) for a bad value: the DAG as the
    server holds it (serialized, then deserialized), its params merged with the conf and
    validated as the trigger endpoint does; the message's first line is the rule, not a dump
    of the schema."""
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("params_only", schedule=None, params=copy.deepcopy(PARAMS)) as dag:
        pass
    served = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    with pytest.raises(Exception) as refused:  # noqa: PT011 - the server catches any
        served.params.deep_merge({"config": "/x.yaml", **bad}).validate()
    assert type(refused.value).__name__ == "ParamValidationError"
    assert str(refused.value).splitlines()[0] == line
