"""Entropy l-diversity with the Grassberger estimator (issue 44 item 7, ADR 0043), ARX's
`EntropyLDiversity(attribute, l, EntropyEstimator.GRASSBERGER)`: ARX's G (its table up to 100,
its expansion above, its int product beyond 92,681) equals Grassberger's definition from the
digamma function where ARX's arithmetic does not wrap; on Adult (occupation sensitive, the
other seven QIDs, k = 2) the node, suppressed records, classes and DM* equal ARX 3.9.2's
(recorded in tests/data/arx_answers, run live where ARX is found), whatever the chunking. The
exhaustive reference on generated tables: test_criteria_oracle's `entropy-grassberger` variant.

Where ARX's early abort bites (ADR 0043: ARX stops adding n_i G(n_i) at the first partial sum
above the bound, in its hash table's bucket order, though G(1) < 0), the node is still ARX's but
ARX suppresses more: ARX's count is reproduced by ARX's loop over its buckets (values coded in
order of first appearance, inserted in record order, as ARX's Distribution lays them out),
the product's by the whole sum.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from arx_answers import adult_input_args, arx_answer, assert_arx_release
from oracle_criteria import grassberger_g as definition_g
from skald_testdata import ADULT, ADULT_CSV, adult_config, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.distributions.grassberger import grassberger_g
from airflow_skald.core.run.runner import run

QIDS = ["age", "education", "marital-status", "native-country", "race", "sex", "workclass"]


def _java_g(n: int) -> float:
    """ARX's G above 100, its int arithmetic spelled out in Python ints."""
    n -= n % 2
    square = ((n // 2) * (n // 2) + 2**31) % 2**32 - 2**31  # Java's int product
    m = 1.0 / square if square else math.inf
    return math.log(n) + m * (1 / 24 - m * (7 / 960 - m * 31 / 8064))


def test_g_is_grassbergers_and_wraps_as_arx():
    n = np.arange(1, 5001)
    got = grassberger_g(n)
    want = [definition_g(int(i)) for i in n]
    assert got == pytest.approx(want, rel=1e-13, abs=1e-15)
    assert got[0] == -1.2703628454614782 and got[1] == got[2] == 0.7296371545385218
    big = np.array([92_680, 92_682, 100_001, 131_072, 262_144, 10**9 + 1])
    assert grassberger_g(big).tolist() == [_java_g(int(i)) for i in big]
    assert math.isinf(grassberger_g(np.array([131_072]))[0])  # (n/2)^2 wraps to 0 in ARX


def _config(tmp_path, name: str, ell: int, limit: float, chunk_rows: int, **extra) -> dict:
    criterion = {"attribute": "occupation", "l": ell, "variant": "entropy", **extra}
    return adult_config(
        tmp_path / name,
        k=2,
        suppression_limit=limit,
        qids=QIDS,
        sensitive=["occupation", "salary-class"],
        chunk_rows=chunk_rows,
        privacy={"l_diversity": [criterion]},
        quality={"objective": "dm_star_arx"},
    )


@pytest.mark.parametrize(("ell", "limit"), [(2, 0), (3, 0)])
def test_adult_grassberger_equals_arx(tmp_path, ell, limit):
    arx = arx_answer(
        f"ldiv-grassberger-adult-l{ell}-s{limit}",
        [
            *adult_input_args(QIDS),
            *("--insensitive", "salary-class", "--k", "2", "--suppression", str(limit)),
            *("--ldiv", f"occupation:entropy-grassberger:{ell}", "--metric", "dmstar"),
        ],
    )
    answers = []
    for chunk_rows in (40_000, 7_000):  # one chunk, five: the same answer
        name = f"l{ell}-{chunk_rows}"
        body = _config(tmp_path, name, ell, limit, chunk_rows, estimator="grassberger")
        manifest = run(load_config(write_config(tmp_path / f"{name}.yaml", body)))
        assert_arx_release(manifest, arx)
        score = manifest["quality_models"]["scores"]["dm_star_arx"]
        assert score == arx["arx_information_loss_value"]
        (model,) = [m for m in manifest["privacy_models"] if "min_entropy_l" in m]
        assert model["estimator"] == "grassberger" and model["min_entropy_l"] >= ell
        answers.append((manifest["node"], manifest["n_suppressed"], model["min_entropy_l"]))
    assert answers[0] == answers[1]


def test_estimator_belongs_to_entropy_l(tmp_path):
    body = _config(tmp_path, "bad", 2, 0, 8000, estimator="miller")
    with pytest.raises(ConfigError, match="estimator must be one of shannon, grassberger"):
        load_config(write_config(tmp_path / "bad.yaml", body))
    body = _config(tmp_path, "bad2", 2, 0, 8000, estimator="grassberger")
    body["privacy"]["l_diversity"][0]["variant"] = "distinct"
    with pytest.raises(ConfigError, match="'estimator' applies to variant entropy only"):
        load_config(write_config(tmp_path / "bad2.yaml", body))


def _arx_buckets(codes: list[int]) -> list[tuple[int, int]]:
    """ARX's Distribution after adding `codes` one by one: (code, count) in bucket order
    (open addressing, home bucket code & (capacity - 1), capacity 8 doubling past 3/4)."""
    cap, table, size = 8, [None] * 8, 0
    for code in codes:
        i = code & (cap - 1)
        while table[i] is not None and table[i][0] != code:
            i = (i + 1) & (cap - 1)
        if table[i] is not None:
            table[i] = (code, table[i][1] + 1)
            continue
        table[i], size = (code, 1), size + 1
        if size > int(cap * 0.75):
            old, cap = table, cap * 2
            table = [None] * cap
            for entry in filter(None, old):
                j = entry[0] & (cap - 1)
                while table[j] is not None:
                    j = (j + 1) & (cap - 1)
                table[j] = entry
    return [e for e in table if e is not None]


def _suppressed(node: dict, ell: int, arx_loop: bool) -> int:
    """Records whose class fails k = 2 or Grassberger entropy l at `node`, read from
    Adult and ARX's hierarchies: the whole sum, or ARX's loop with its early abort."""
    df = pd.read_csv(ADULT_CSV, sep=";", dtype=str, keep_default_na=False)
    labels = []
    for q, level in node.items():
        h = pd.read_csv(ADULT / f"adult_hierarchy_{q}.csv", sep=";", header=None, dtype=str)
        labels.append(df[q].map(dict(zip(h[0], h[level], strict=True))))
    codes = pd.factorize(df["occupation"])[0]  # first appearance, as ARX's dictionary
    out = 0
    for rows in df.groupby(labels).indices.values():
        n = len(rows)
        buckets = _arx_buckets(codes[rows].tolist())
        bound = n * (definition_g(n) - math.log(ell))
        terms = [f * definition_g(f) for _, f in buckets]
        sums = np.cumsum(terms)
        ok = len(buckets) >= ell and not (bound < (sums.max() if arx_loop else sums[-1]))
        out += 0 if n >= 2 and ok else n
    return out


@pytest.mark.parametrize(("ell", "limit"), [(3, 0.05), (4, 0.05)])
def test_adult_grassberger_where_arx_aborts_early(tmp_path, ell, limit):
    arx = arx_answer(
        f"ldiv-grassberger-adult-l{ell}-s{limit}",
        [
            *adult_input_args(QIDS),
            *("--insensitive", "salary-class", "--k", "2", "--suppression", str(limit)),
            *("--ldiv", f"occupation:entropy-grassberger:{ell}", "--metric", "dmstar"),
        ],
    )
    body = _config(tmp_path, "abort", ell, limit, 7_000, estimator="grassberger")
    manifest = run(load_config(write_config(tmp_path / "abort.yaml", body)))
    assert manifest["node"] == arx["node"]
    assert manifest["n_suppressed"] == _suppressed(arx["node"], ell, arx_loop=False)
    arx_suppressed = arx["arx_class_statistics"]["suppressed_records"]
    assert arx_suppressed == _suppressed(arx["node"], ell, arx_loop=True)
    assert arx_suppressed > manifest["n_suppressed"]
