"""l-diversity and t-closeness end to end (issue 11): the product's node, DM* and suppressed
records equal the exhaustive reference's (tests/oracle.py, docs/design.md §4b) on many generated
datasets, for every variant, with and without suppression, with RAM roots forced coarser; each
written release passes an independent groupby check of every criterion; the answer does not
depend on the chunking or on worker processes; `--per-chunk` applies the criteria per chunk.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle import (
    Criteria,
    check_release,
    exhaustive_search,
    nonempty_bins,
    ram_root,
    sensitive_value,
)
from skald_testdata import read_release, write_chunks, write_config
from strategies import (
    VARIANTS,
    criteria_config,
    criteria_datasets,
    write_input,
)

from airflow_skald.cli import main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError, DataError
from airflow_skald.core.run.runner import run


def assert_figures(manifest_models: list[dict], figures: list) -> None:
    """The manifest's figure of each criterion (after k) equals the reference's."""
    keys = ("min_distinct", "min_entropy_l", "max_recursive_ratio", "max_distance")
    assert len(manifest_models) == len(figures) + 1
    for model, want in zip(manifest_models[1:], figures, strict=True):
        (got,) = [model[key] for key in keys if key in model]
        if want is None:
            assert got is None, model
        else:
            assert got == pytest.approx(float(want), rel=1e-9, abs=1e-12), model


@pytest.mark.parametrize("variant", VARIANTS)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), cut=st.integers(3, 50))
def test_criteria_match_exhaustive_search(tmp_path_factory, variant, data, cut):
    df, qids, oracle_qids, k, limit, bins, priority, criteria, drop = data.draw(
        criteria_datasets(variant)
    )
    tmp = tmp_path_factory.mktemp("case")
    write_input(tmp, df, cut)
    config = load_config(criteria_config(tmp, qids, k, limit, bins, priority, criteria, drop))
    tables = Criteria(**criteria, inputs=df).n_values
    try:
        root = ram_root(df, oracle_qids, bins or 10**9, priority, tables)
    except ValueError:
        event("too few bins")
        return  # too few bins even for the top node: covered by the bad-input tests
    expected = exhaustive_search(df, oracle_qids, k, limit, priority, root, **criteria)
    if expected["node"] is None:  # no node above the root passes: the product must say so
        with pytest.raises(DataError, match="no generalisation satisfies"):
            run(config)
        event("no node passes")
        return
    manifest = run(config)
    assert manifest["root_node"] == root  # paper mode: prod(bins) * sum_a m_a + 1 <= N_RAM
    event(f"compared, {'some' if manifest['n_suppressed'] else 'no'} records suppressed")
    assert manifest["node"] == expected["node"]
    assert manifest["dm_star"] == expected["dm_star"]
    assert manifest["n_suppressed"] == expected["n_suppressed"]
    assert manifest["n_equivalence_classes"] == expected["n_classes"]
    assert_figures(manifest["privacy_models"], expected["figures"])
    # the written release, checked independently (t against the input's distribution)
    release = read_release(tmp / "out-c")
    names = [q["name"] for q in qids]
    checked = check_release(release, names, k, limit, len(df), sensitive_input=df, **criteria)
    assert checked["n_suppressed"] == expected["n_suppressed"]
    assert checked["dm_star"] == expected["dm_star"]
    assert checked["figures"] == expected["figures"]
    if drop == "mask":
        for a in ("sens", "num"):
            got = [sensitive_value(v) for v in release[a]]
            assert got == [sensitive_value(v) for v in df[a]], a


@pytest.mark.parametrize("variant", VARIANTS)
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), cut=st.integers(3, 50))
def test_adaptive_root_with_criteria(tmp_path_factory, variant, data, cut):
    """memory.root adaptive (docs/design.md §4a, the default): N_RAM bounds the root's non-empty
    (class, value) pairs; the root is at or below paper mode's, level 0 when level 0 fits, and
    the node above it is the reference's."""
    df, qids, oracle_qids, k, limit, bins, priority, criteria, drop = data.draw(
        criteria_datasets(variant)
    )
    tmp = tmp_path_factory.mktemp("case")
    write_input(tmp, df, cut)
    cfg = criteria_config(tmp, qids, k, limit, bins, priority, criteria, drop, root="adaptive")
    n_ram = bins or 10**9
    try:
        paper = ram_root(df, oracle_qids, n_ram, priority, Criteria(**criteria, inputs=df).n_values)
    except ValueError:
        event("too few bins")
        return
    try:
        manifest = run(load_config(cfg))
    except DataError as exc:  # none above the adaptive root: none above paper's (a subset)
        assert "no generalisation satisfies" in str(exc), exc
        assert (
            exhaustive_search(df, oracle_qids, k, limit, priority, paper, **criteria)["node"]
            is None
        )
        event("no node passes")
        return
    root = manifest["root_node"]
    assert all(root[q] <= paper[q] for q in root), (root, paper)
    assert nonempty_bins(df, oracle_qids, root, **criteria) <= n_ram - 1
    if nonempty_bins(df, oracle_qids, dict.fromkeys(root, 0), **criteria) <= n_ram - 1:
        assert set(root.values()) == {0}
    event("level 0" if set(root.values()) == {0} else "above level 0")
    expected = exhaustive_search(df, oracle_qids, k, limit, priority, root, **criteria)
    assert manifest["node"] == expected["node"]
    assert manifest["dm_star"] == expected["dm_star"]
    assert manifest["n_suppressed"] == expected["n_suppressed"]
    assert_figures(manifest["privacy_models"], expected["figures"])
    release = read_release(tmp / "out-c")
    names = [q["name"] for q in qids]
    check_release(release, names, k, limit, len(df), sensitive_input=df, **criteria)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=criteria_datasets("mixed"),
    cuts=st.lists(st.integers(3, 60), min_size=2, max_size=2, unique=True),
)
def test_chunking_changes_nothing(tmp_path_factory, data, cuts):
    """Two chunkings: the same root, node, figures and released rows in the same order."""
    df, qids, oracle_qids, k, limit, bins, priority, criteria, drop = data
    results = []
    for cut in cuts:
        tmp = tmp_path_factory.mktemp("cut")
        write_input(tmp, df, cut)
        cfg = criteria_config(tmp, qids, k, limit, bins, priority, criteria, drop)
        try:
            manifest = run(load_config(cfg))
        except (ConfigError, DataError) as exc:  # too few bins, or no node: the same both times
            results.append(type(exc).__name__)
            continue
        results.append((manifest, read_release(tmp / "out-c")))
    if isinstance(results[0], str) or isinstance(results[1], str):
        assert results[0] == results[1]
        return
    (first, rows_a), (second, rows_b) = results
    for key in ("root_node", "node", "dm_star", "n_suppressed", "privacy_models"):
        assert first[key] == second[key], key
    pd.testing.assert_frame_equal(rows_a, rows_b)


def fixed_table(n: int = 600, seed: int = 7) -> pd.DataFrame:
    """A table where every chunk of 150 rows is diverse: `sens` (text, Zipf-like, follows
    age) and `num` (numerical, a few nulls)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    shift = (age - 18) // 21  # 0..2: older people have other conditions
    sens = [f"s{(int(rng.zipf(1.6)) - 1 + int(s)) % 7}" for s in shift]
    num = [None if rng.random() < 0.04 else int(v) for v in rng.integers(0, 9, n) * 5]
    return pd.DataFrame(
        {
            "pid": [f"p{i}" for i in range(n)],
            "age": age,
            "city": rng.choice(["Oslo", "Bergen", "Lund", "Malmo", "Turku", "Espoo"], n),
            "sens": sens,
            "num": pd.array(num, dtype="Int64"),
        }
    )


FIXED_QIDS = [
    {"name": "age", "type": "numerical", "min_width": 1},
    {
        "name": "city",
        "type": "categorical",
        "hierarchy": {
            "Oslo": ["Norway"],
            "Bergen": ["Norway"],
            "Lund": ["Sweden"],
            "Malmo": ["Sweden"],
            "Turku": ["Finland"],
            "Espoo": ["Finland"],
        },
    },
]
SENS_HIERARCHY = {f"s{i}": [f"chapter{i // 3}"] for i in range(7)}
ALL_CRITERIA = {
    "l_diversity": [
        {"attribute": "sens", "l": 3},
        {"attribute": "sens", "l": 2, "variant": "entropy"},
        {"attribute": "sens", "l": 2, "variant": "recursive", "c": "3"},
    ],
    "t_closeness": [
        {"attribute": "sens", "t": "0.4", "distance": "equal"},
        {"attribute": "sens", "t": "0.4", "distance": "hierarchical", "hierarchy": SENS_HIERARCHY},
        {"attribute": "num", "t": "0.3", "distance": "ordered"},
    ],
}


def test_workers_give_the_serial_release(tmp_path):
    """Every variant at once, two worker processes: the serial node and part bytes."""
    df = fixed_table()
    write_input(tmp_path, df, 150)
    cfg = criteria_config(tmp_path, FIXED_QIDS, 3, 0.05, None, ["age"], ALL_CRITERIA)
    serial = run(load_config(cfg))
    parallel = run(load_config(cfg, {"output_path": str(tmp_path / "out-par")}), workers=2)
    for key in ("root_node", "node", "dm_star", "n_suppressed", "privacy_models", "parts"):
        assert parallel[key] == serial[key], key
    for part in serial["parts"]:
        assert (tmp_path / "out-par" / part).read_bytes() == (
            tmp_path / "out-c" / part
        ).read_bytes()
    oracle_qids = [{**q, "min_width": 1} if q["type"] == "numerical" else q for q in FIXED_QIDS]
    expected = exhaustive_search(
        df, oracle_qids, 3, 0.05, ["age"], serial["root_node"], **ALL_CRITERIA
    )
    assert serial["node"] == expected["node"]
    assert serial["dm_star"] == expected["dm_star"]
    check_release(
        read_release(tmp_path / "out-c"), ["age", "city"], 3, 0.05, len(df), **ALL_CRITERIA
    )


def test_per_chunk_applies_the_criteria_to_each_chunk(tmp_path, capsys):
    """`--per-chunk` with every variant: each part passes the naive check against its own
    chunk (t-closeness with the chunk's own distribution)."""
    df = fixed_table()
    write_input(tmp_path, df, 150)
    cfg = criteria_config(tmp_path, FIXED_QIDS, 3, 0.05, None, ["age"], ALL_CRITERIA)
    assert main(["run", str(cfg), "--per-chunk", "--quiet"]) == 0
    capsys.readouterr()
    manifest = json.loads((tmp_path / "out-c" / "manifest.json").read_text())
    assert manifest["mode"] == "per_chunk"
    parts = sorted((tmp_path / "out-c").glob("part-*"))
    assert len(parts) == 4
    for i, part in enumerate(parts):
        chunk = df.iloc[150 * i : 150 * (i + 1)].reset_index(drop=True)
        released = pd.read_parquet(part)
        assert released["sens"].tolist() == chunk["sens"].tolist()
        check_release(released, ["age", "city"], 3, 0.05, len(chunk), **ALL_CRITERIA)


def csv_run(tmp_path, capsys, df: pd.DataFrame, input_format: str) -> None:
    """Every variant on `sens` (text, nulls) and `num` (numbers, nulls) with a CSV release
    (numbers and nulls written as text): the run's own check and `skald verify` re-read the
    values as the input's, numbers in numeric order; the release passes the naive check."""
    write_chunks(df, tmp_path / "in", [150] * 3, fmt=input_format)
    criteria = json.loads(json.dumps(ALL_CRITERIA))
    criteria["t_closeness"][1]["hierarchy"]["NULL"] = ["unknown"]
    cfg = criteria_config(tmp_path, FIXED_QIDS, 3, 0.05, None, ["age"], criteria)
    body = yaml.safe_load(cfg.read_text())
    body["input"]["format"] = input_format
    body["output"]["format"] = "csv"
    write_config(cfg, body)
    assert main(["run", str(cfg), "--quiet"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "out-c")]) == 0
    verified = json.loads(capsys.readouterr().out)
    manifest = json.loads((tmp_path / "out-c" / "manifest.json").read_text())
    rechecked = {_model(m): m for m in verified["privacy_models"]}
    assert verified["verified"] is True and "not_rechecked" not in verified
    for model in manifest["privacy_models"]:  # hierarchical too: effective.json keeps it
        assert rechecked[_model(model)] == pytest.approx(model), model
    release = read_release(tmp_path / "out-c")  # text; "" is a null
    release["sens"] = [v or None for v in release["sens"]]
    release["num"] = [int(v) if v else None for v in release["num"]]
    checked = check_release(release, ["age", "city"], 3, 0.05, len(df), **criteria)
    assert checked["n_suppressed"] == manifest["n_suppressed"]
    assert_figures(manifest["privacy_models"], checked["figures"])


def test_csv_release_of_numbers_and_nulls(tmp_path, capsys):
    df = fixed_table()
    df.loc[df.index % 23 == 0, "sens"] = None
    csv_run(tmp_path, capsys, df, "parquet")


def test_csv_input_empty_cells_are_nulls_and_numbers_are_numbers(tmp_path, capsys):
    df = fixed_table()
    df.loc[df.index % 23 == 0, "sens"] = None
    csv_run(tmp_path, capsys, df, "csv")


def _model(described: dict) -> tuple:
    return tuple(described.get(key) for key in ("model", "attribute", "distance", "variant"))
