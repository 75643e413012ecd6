"""δ-presence and exact k-map over a research subset of a population table (docs/design.md §4e): the
product's node, DM* and suppressed records equal the exhaustive reference's
(tests/oracle_population.py) on generated tables, whatever the chunking; only the subset's
records are released, without the subset column; ARX 3.9.2's answer on Adult."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from arx_answers import adult_input_args, arx_answer
from oracle_population import subset_search
from skald_testdata import ADULT, ADULT_CSV, read_release, write_chunks, write_config

from airflow_skald.cli import main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.run.runner import run

HIER = {"a": ["x", "*"], "b": ["x", "*"], "c": ["y", "*"], "d": ["y", "*"], "e": ["z", "*"]}
QIDS = [
    {"name": "cat", "type": "categorical", "hierarchy": {v: h[:1] for v, h in HIER.items()}},
    {"name": "age", "type": "numerical", "min_width": 2},
]
ORACLE_QIDS = [
    {
        "name": "cat",
        "type": "categorical",
        "hierarchy": {v: h[:1] + ["*"] for v, h in HIER.items()},
    },
    {"name": "age", "type": "numerical", "min_width": 2},
]


def _table(seed: int, n: int, share: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "pid": [f"p{i}" for i in range(n)],
            "cat": rng.choice(list(HIER), n, p=rng.dirichlet(np.ones(len(HIER)))),
            "age": rng.integers(20, 20 + int(rng.integers(4, 30)), n),
            "in_study": rng.random(n) < share,
        }
    )


# explicit cases (seed, rows, subset share, k, limit, δ-presence, exact k-map): each variant
CASES = [
    (1, 60, 0.3, 2, 0, (0, 0.5), None),
    (2, 90, 0.5, 2, 0.1, (0.2, 0.8), None),
    (3, 120, 0.25, None, 0.05, (0, 0.4), None),
    (4, 80, 0.4, None, 0, None, 4),
    (5, 150, 0.2, 2, 0.1, None, 6),
    (6, 100, 0.35, 3, 0.05, (0.1, 0.6), 3),
    # min > 0 where the best node otherwise has a population class without a subset record
    # (δ = 0, nothing to suppress: the node fails, with k or without)
    (31, 80, 0.3, None, 0, (0.1, 0.9), None),
    (33, 100, 0.5, 2, 0.05, (0.25, 1), None),
    (34, 150, 0.3, None, 0.1, (0.05, 0.5), 3),
]


def _privacy(limit, k, delta, kmap, criteria=None) -> dict:
    """The config's privacy section of a case."""
    privacy: dict = {"suppression_limit": limit, **(criteria or {})}
    if k:
        privacy["k"] = k
    if delta:
        privacy["delta_presence"] = {"min": delta[0], "max": delta[1]}
    if kmap:
        privacy["k_map"] = {"k": kmap}
    return privacy


def _config(tmp_path, df: pd.DataFrame, cut: int, privacy: dict, sensitive=()):
    """The run's config over `df` cut into chunks of `cut` rows, with its research subset."""
    folder = tmp_path / f"in-{cut}"
    write_chunks(df, folder, [cut] * (len(df) // cut))
    body = {
        "input": {"path": str(folder)},
        "output": {"path": str(tmp_path / f"out-{cut}")},
        "direct_identifiers": ["pid"],
        **({"sensitive_attributes": list(sensitive)} if sensitive else {}),
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "privacy": privacy,
    }
    return load_config(write_config(tmp_path / f"c-{cut}.yaml", body))


@pytest.mark.parametrize("case", CASES, ids=[f"seed{c[0]}" for c in CASES])
def test_population_models_match_exhaustive_search(tmp_path, case):
    seed, n, share, k, limit, delta, kmap = case
    df = _table(seed, n, share)
    privacy = _privacy(limit, k, delta, kmap)
    expected = subset_search(df, df["in_study"], ORACLE_QIDS, k, limit, [], delta=delta, kmap=kmap)
    answers = []
    for cut in (n, 7, 23):  # one chunk, many: the same answer
        config = _config(tmp_path, df, cut, privacy)
        if expected["node"] is None:
            with pytest.raises(Exception, match="no generalisation satisfies"):
                run(config)
            return
        manifest = run(config)
        assert manifest["node"] == expected["node"]
        assert manifest["dm_star"] == expected["dm_star"]
        assert manifest["n_suppressed"] == expected["n_suppressed"]
        assert manifest["n_records"] == expected["n_records"]
        assert manifest["n_equivalence_classes"] == expected["n_classes"]
        figures = {m["model"]: m for m in manifest["privacy_models"]}
        for name in ("delta-presence", "k-map-exact"):
            if name in figures:
                assert figures[name]["min_population_count"] == expected["min_population_count"]
        release = read_release(tmp_path / f"out-{cut}")
        assert "in_study" not in release.columns and "pid" not in release.columns
        assert len(release) == expected["n_records"]  # the subset's records, in input order
        subset = df[df["in_study"]].reset_index(drop=True)
        kept = release["cat"] != "*"
        assert (release["age"][kept].astype(str).str.len() > 0).all()
        assert release.index.size == subset.index.size
        answers.append(read_release(tmp_path / f"out-{cut}").to_dict("list"))
    assert answers[0] == answers[1] == answers[2]


# l-diversity and t-closeness over the subset's records (issue 44 item 5, ADR 0045): seed,
# rows, share, k, limit, δ-presence, exact k-map, criteria on `s` ("w" outside the subset only)
L2 = {"l_diversity": [{"attribute": "s", "l": 2}]}
E2 = {"l_diversity": [{"attribute": "s", "l": 2, "variant": "entropy"}]}
TEQ = {"t_closeness": [{"attribute": "s", "t": 0.3, "distance": "equal"}]}
TORD = {"t_closeness": [{"attribute": "s", "t": 0.2, "distance": "ordered", "order": "text"}]}
CRITERIA_CASES = [
    (7, 90, 0.5, 2, 0.1, (0, 0.8), None, L2),
    (8, 120, 0.4, None, 0.1, None, 3, E2),
    (9, 100, 0.5, 2, 0.1, (0, 0.9), None, TEQ),
    (10, 150, 0.4, None, 0.2, None, 2, TORD),
    (11, 150, 0.5, None, 0.1, (0, 1), None, TORD),
]


@pytest.mark.parametrize("case", CRITERIA_CASES, ids=[f"seed{c[0]}" for c in CRITERIA_CASES])
def test_subset_criteria_match_exhaustive_search(tmp_path, case):
    seed, n, share, k, limit, delta, kmap, criteria = case
    df = _table(seed, n, share)
    rng = np.random.default_rng(seed)
    df["s"] = rng.choice(["u", "v", "w", "x"], n, p=[0.4, 0.3, 0.1, 0.2])
    df.loc[df["in_study"] & (df["s"] == "w"), "s"] = "v"  # "w": population records only
    privacy = _privacy(limit, k, delta, kmap, criteria)
    expected = subset_search(
        df, df["in_study"], ORACLE_QIDS, k, limit, [], delta=delta, kmap=kmap, criteria=criteria
    )
    for cut in (n, 7):  # one chunk, many: the same answer
        config = _config(tmp_path, df, cut, privacy, sensitive=["s"])
        if expected["node"] is None:
            with pytest.raises(Exception, match="no generalisation satisfies"):
                run(config)
            return
        manifest = run(config)
        assert manifest["node"] == expected["node"]
        assert manifest["dm_star"] == expected["dm_star"]
        assert manifest["n_suppressed"] == expected["n_suppressed"]
        assert manifest["n_equivalence_classes"] == expected["n_classes"]


def test_population_models_need_a_subset_and_refuse_other_models(tmp_path):
    df = _table(9, 40, 0.5)
    write_chunks(df, tmp_path / "in", [])
    base = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "quasi_identifiers": QIDS,
    }
    with pytest.raises(ConfigError, match="delta_presence needs research_subset"):
        load_config(write_config(tmp_path / "a.yaml", {**base, "privacy": {
            "delta_presence": {"max": 0.5}}}))  # fmt: skip
    # l-diversity and t-closeness judge the subset's records (ADR 0045); b-likeness is refused
    with pytest.raises(ConfigError, match="research_subset cannot be combined with"):
        load_config(write_config(tmp_path / "b.yaml", {
            **base, "research_subset": {"column": "in_study"}, "sensitive_attributes": ["pid"],
            "privacy": {"k": 2, "b_likeness": [{"attribute": "pid", "beta": 1.0}]}}))  # fmt: skip


ADULT_QIDS = ["age", "education", "marital-status", "native-country", "race", "sex", "workclass"]


def test_adult_population_models_equal_arx(tmp_path):
    """Adult as the population, every tenth record the research subset: the node, DM* (ARX's
    convention) and suppressed records under δ-presence (k = 2) equal ARX 3.9.2's."""
    df = pd.read_csv(ADULT_CSV, sep=";", dtype=str, keep_default_na=False)
    df["in_study"] = np.arange(len(df)) % 10 == 0
    df.to_csv(tmp_path / "adult_pop.csv", sep=";", index=False)
    qids = [
        {
            "name": q,
            "type": "categorical",
            "hierarchy_file": str(ADULT / f"adult_hierarchy_{q}.csv"),
        }
        for q in ADULT_QIDS
    ]
    body = {
        "input": {"path": str(tmp_path / "adult_pop.csv"), "format": "csv", "delimiter": ";"},
        "output": {"path": str(tmp_path / "out")},
        "quasi_identifiers": qids,
        "research_subset": {"column": "in_study"},
        "privacy": {"k": 2, "delta_presence": {"min": 0, "max": 0.5}, "suppression_limit": 0.05},
        "quality": {"objective": "dm_star_arx"},
    }
    manifest = run(load_config(write_config(tmp_path / "c.yaml", body)))
    cmd = [*adult_input_args(ADULT_QIDS), "--insensitive", "salary-class,occupation"]
    cmd += ["--k", "2", "--dpresence", "0:0.5", "--subset", "mod:10:0", "--suppression", "0.05"]
    arx = arx_answer("dpresence-adult-k2-subset10", [*cmd, "--metric", "dmstar", "--no-own-stats"])
    stats = arx["arx_class_statistics_subset"]
    assert manifest["node"] == arx["node"]
    assert manifest["dm_star_arx"] == arx["arx_information_loss_value"]
    assert manifest["n_suppressed"] == stats["suppressed_records"]
    assert manifest["n_equivalence_classes"] == stats["equivalence_classes"]


def test_audit_reports_delta_and_population_counts(tmp_path):
    """`skald audit` of a population table judges the subset's classes with their population
    counts (δ per class, the smallest population count); of a release, the other models only."""
    from airflow_skald.core.release.check.audit import audit

    df = _table(11, 60, 0.4)
    write_chunks(df, tmp_path / "in", [25])
    body = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "privacy": {"k": 2, "delta_presence": {"min": 0, "max": 0.5}, "suppression_limit": 0.5},
    }
    config = load_config(write_config(tmp_path / "c.yaml", body))
    report = audit(config)
    sub = df[df["in_study"]]
    assert report["n_records"] == len(sub)
    groups = df.groupby(["cat", "age"])["in_study"].agg(["sum", "count"])
    groups = groups[groups["sum"] > 0]
    (delta,) = [m for m in report["privacy_models"] if m["model"] == "delta-presence"]
    ratio = groups["sum"] / groups["count"]
    assert delta["delta_min"] == pytest.approx(ratio.min())
    assert delta["delta_max"] == pytest.approx(ratio.max())
    assert delta["min_population_count"] == int(groups["count"].min())
    assert delta["classes_violating"] == int((ratio > 0.5).sum())
    manifest = run(config)
    released = audit(
        load_config(write_config(tmp_path / "c.yaml", body), {"input_path": str(tmp_path / "out")})
    )
    assert released["release"] and released["n_records"] == manifest["n_records"]
    assert [m["model"] for m in released["not_checked"]] == ["delta-presence"]
    assert "population_counts.json" in released["not_checked"][0]["reason"]


def test_audit_fails_delta_presence_on_a_class_without_subset_records(tmp_path):
    """`skald audit` of a population table with min > 0: a population class holding no subset
    record (δ = 0) cannot be suppressed, so the policy does not hold, whatever the limit."""
    from airflow_skald.core.release.check.audit import audit

    df = _table(31, 80, 0.3)
    write_chunks(df, tmp_path / "in", [30])
    body = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "privacy": {"delta_presence": {"min": 0.1, "max": 1}, "suppression_limit": 1},
    }
    report = audit(load_config(write_config(tmp_path / "c.yaml", body)))
    groups = df.groupby(["cat", "age"])["in_study"].sum()
    empty = int((groups == 0).sum())
    assert empty > 0
    (delta,) = [m for m in report["privacy_models"] if m["model"] == "delta-presence"]
    assert f"{empty} population class(es) without a subset record" in delta["unsuppressible"]
    assert not report["holds"] and not report["suppression"]["fits"]
    body["privacy"]["delta_presence"]["min"] = 0  # δ = 0 is within [0, 1]: it holds
    report = audit(load_config(write_config(tmp_path / "c.yaml", body)))
    assert report["holds"] and "unsuppressible" not in report["privacy_models"][0]


def test_per_chunk_refuses_a_research_subset(tmp_path):
    from airflow_skald.core.run.baseline import run_per_chunk

    df = _table(12, 30, 0.5)
    write_chunks(df, tmp_path / "in", [])
    body = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "privacy": {"k_map": {"k": 3}},
    }
    with pytest.raises(ConfigError, match="--per-chunk does not take a research_subset"):
        run_per_chunk(load_config(write_config(tmp_path / "c.yaml", body)))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("key", [["pid"], ["cat", "pid"]])
def test_keyed_subset_releases_what_the_column_releases(tmp_path, key):
    """`research_subset: {path, key}`: a record is in the subset iff its key is in the subset's
    dataset; the release (node, figures, rows) equals the one made with the same subset as a
    boolean column, with any chunking, and the key columns may be direct identifiers."""
    df = _table(21, 120, 0.3)
    subset = df[df["in_study"]][key].iloc[::-1]  # any order, and a key absent from the input
    extra = pd.DataFrame({c: ["zz"] for c in key})
    pd.concat([subset, extra]).to_parquet(tmp_path / "subset.parquet", index=False)
    privacy = {"k": 2, "delta_presence": {"min": 0, "max": 0.6}, "suppression_limit": 0.1}
    write_chunks(df, tmp_path / "in", [40])
    column = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out-column")},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "privacy": privacy,
    }
    by_column = run(load_config(write_config(tmp_path / "a.yaml", column)))
    write_chunks(df.drop(columns=["in_study"]), tmp_path / "in-keyed", [17])
    keyed = {
        **column,
        "input": {"path": str(tmp_path / "in-keyed")},
        "output": {"path": str(tmp_path / "out-keyed")},
        "research_subset": {"path": str(tmp_path / "subset.parquet"), "key": key},
    }
    by_key = run(load_config(write_config(tmp_path / "b.yaml", keyed)))
    for figure in ("node", "dm_star", "n_suppressed", "n_records", "privacy_models"):
        assert by_key[figure] == by_column[figure], figure
    from airflow_skald.core.release.check.audit import audit

    audited = audit(load_config(tmp_path / "b.yaml"))
    assert audited["n_records"] == by_key["n_records"]
    got = read_release(tmp_path / "out-keyed")
    want = read_release(tmp_path / "out-column").drop(columns=[])
    assert got.to_dict("list") == want.to_dict("list")
    assert "__research_subset__" not in got.columns


@pytest.mark.parametrize("how", ["column", "keyed"])
def test_an_empty_subset_is_refused_in_one_line(tmp_path, capsys, how):
    """A subset that selects no record (a column never true, keys none of which is in the
    input) is refused after phase 1, exit 2, nothing written (ADR 0031): it published a
    release of 0 records, `verified: true`, without a word."""
    df = _table(1, 60, 0.0)  # in_study: never true
    assert not df["in_study"].any()
    write_chunks(df, tmp_path / "in", [25])
    pd.DataFrame({"pid": ["nobody-1", "nobody-2"]}).to_parquet(tmp_path / "keys.parquet")
    subset = (
        {"column": "in_study"}
        if how == "column"
        else {"path": str(tmp_path / "keys.parquet"), "key": ["pid"]}
    )
    body = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "research_subset": subset,
        "privacy": {"k": 2, "delta_presence": {"min": 0, "max": 0.5}, "suppression_limit": 0},
    }
    capsys.readouterr()
    assert main(["run", str(write_config(tmp_path / "c.yaml", body))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "research_subset: " in err[0] and "hold no record" in err[0]
    assert ("in_study" in err[0]) is (how == "column")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
