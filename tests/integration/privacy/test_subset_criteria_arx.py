"""l-diversity and t-closeness with a research subset (issue 44 item 5, ADR 0045), as ARX 3.9.2
judges them: a class's sensitive distribution holds its subset records only, t-closeness
compares it with the subset's distribution, and ordered distance walks every value of the
population (ARX's dictionary), those no subset record holds too. Adult as the population
(every tenth record the subset) under δ-presence with entropy l-diversity and under exact k-map
with ordered (text) t-closeness, and a generated population whose value "cat" occurs outside
the subset only: the node, the subset's suppressed records and classes equal ARX's answers
(recorded in tests/data/arx_answers, run live where ARX is found), in one chunk or several.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from arx_answers import adult_input_args, arx_answer, assert_arx_release
from skald_testdata import ADULT, ADULT_CSV, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

pytestmark = pytest.mark.integration

QIDS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
QIDS += ["salary-class"]
ADULT_CASES = {  # name: (ARX's models, the product's privacy section, limit, chunk rows)
    "dpresence-entropy3": (
        ["--k", "2", "--dpresence", "0:0.5", "--ldiv", "occupation:entropy:3"],
        {
            "k": 2,
            "delta_presence": {"min": 0, "max": 0.5},
            "l_diversity": [{"attribute": "occupation", "l": 3, "variant": "entropy"}],
        },
        "0.05",
        40_000,
    ),
    "kmap-ordered0.15": (
        ["--kmap", "5", "--tclose", "occupation:ordered:0.15", "--datatype", "occupation=string"],
        {
            "k_map": {"k": 5},
            "t_closeness": [
                {"attribute": "occupation", "t": 0.15, "distance": "ordered", "order": "text"}
            ],
        },
        "0.05",
        8_000,
    ),
}
HIERS = {
    "a": {f"a{i}": ["A" if i < 5 else "B" if i < 8 else "C"] for i in range(11)},
    "b": {f"b{i}": ["x" if i < 2 else "y" if i < 6 else "z"] for i in range(8)},
    "c": {"f": [], "m": []},
}


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> Path:
    df = pd.read_csv(ADULT_CSV, sep=";", dtype=str, keep_default_na=False)
    df["in_study"] = np.arange(len(df)) % 10 == 0
    path = tmp_path_factory.mktemp("adult") / "adult_pop.csv"
    df.to_csv(path, sep=";", index=False)
    return path


def _body(data: Path, out: Path, qids: dict[str, Path], privacy: dict, limit: str, rows: int):
    return {
        "input": {"path": str(data), "format": "csv", "delimiter": ";"},
        "output": {"path": str(out)},
        "chunk_rows": rows,
        "sensitive_attributes": [_attribute(privacy)],
        "quasi_identifiers": [
            {"name": q, "type": "categorical", "hierarchy_file": str(h)} for q, h in qids.items()
        ],
        "research_subset": {"column": "in_study"},
        "privacy": {**privacy, "suppression_limit": limit},
        "quality": {"objective": "dm_star_arx"},
    }


def _attribute(privacy: dict) -> str:
    """The one attribute the l-diversity / t-closeness entries name."""
    (name,) = {c["attribute"] for v in privacy.values() if isinstance(v, list) for c in v}
    return name


@pytest.mark.parametrize("name", sorted(ADULT_CASES))
def test_adult_subset_criteria_equal_arx(tmp_path, population, name):
    models, privacy, limit, rows = ADULT_CASES[name]
    args = [*adult_input_args(QIDS), *models, "--subset", "mod:10:0", "--suppression", limit]
    arx = arx_answer(f"subset-adult-{name}", [*args, "--metric", "dmstar", "--no-own-stats"])
    qids = {q: ADULT / f"adult_hierarchy_{q}.csv" for q in QIDS}
    body = _body(population, tmp_path / "out", qids, privacy, limit, rows)
    manifest = run(load_config(write_config(tmp_path / "c.yaml", body)))
    assert_arx_release(manifest, arx, "arx_class_statistics_subset")


def _generated(folder: Path) -> None:
    """600 population records, every third the subset; "cat" only outside the subset."""
    rng = np.random.default_rng(3)
    n = 600
    table = pd.DataFrame(
        {
            q: rng.choice(list(h), n, p=rng.dirichlet(np.ones(len(h)) * 1.5))
            for q, h in HIERS.items()
        }
    )
    texts = ["ant", "bee", "cat", "dog", "eel"]
    p = rng.dirichlet(np.ones(len(texts)), size=11)
    table["s"] = [texts[rng.choice(len(texts), p=p[int(a[1:])])] for a in table["a"]]
    subset = np.arange(n) % 3 == 0
    table.loc[subset & (table["s"] == "cat"), "s"] = "bee"
    table["in_study"] = subset
    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / "data.csv", sep=";", index=False)
    for q, h in HIERS.items():
        rows = "".join(";".join([v, *up, "*"]) + "\n" for v, up in h.items())
        (folder / f"h_{q}.csv").write_text(rows)


@pytest.mark.parametrize("t", ["0.15", "0.2"])
def test_ordered_walks_the_population_values_as_arx(tmp_path, t):
    _generated(tmp_path)
    args = ["--input", "{table}/data.csv", "--sep", ";"]
    args += [x for q in "abc" for x in ("--qid", f"{q}={{table}}/h_{q}.csv")]
    args += ["--kmap", "2", "--subset", "mod:3:0", "--tclose", f"s:ordered:{t}"]
    args += ["--datatype", "s=string", "--suppression", "0.1", "--metric", "dmstar"]
    arx = arx_answer(
        f"subset-generated-ordered-t{t}",
        [*args, "--no-own-stats"],
        places={"{table}": str(tmp_path)},
    )
    criterion = {"attribute": "s", "t": float(t), "distance": "ordered", "order": "text"}
    privacy = {"k_map": {"k": 2}, "t_closeness": [criterion]}
    qids = {q: tmp_path / f"h_{q}.csv" for q in "abc"}
    body = _body(tmp_path / "data.csv", tmp_path / "out", qids, privacy, "0.1", 150)
    manifest = run(load_config(write_config(tmp_path / "c.yaml", body)))
    assert_arx_release(manifest, arx, "arx_class_statistics_subset")
    (model,) = [m for m in manifest["privacy_models"] if m["model"] == "t-closeness"]
    assert model["values"] == "population"
