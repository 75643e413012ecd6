"""`skald audit CONFIG [--input P]` (docs/design.md §6, issue 11 item 7): a dataset or release as it is,
judged at its current QID values; figures checked against a naive pandas groupby."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from helpers_data import (
    CANARY_RAW,
    CITIES,
    DISEASES,
    config_dict,
    run_inprocess,
    run_subprocess,
    write_config,
    write_dataset,
    write_table,
)

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.release.check.audit import audit
from airflow_skald.core.release.count.tuples import group_tuples

QIDS = ["city", "age", "zip"]

# run-dependent keys: everything else must not depend on the chunking or the file format
_VARIES = ("input", "chunks", "seconds")


def _table(rows: list[tuple[str, int, int, str | None]]) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "pid": [f"P{i:04d}" for i in range(n)],
            "name": [f"Person {i}" for i in range(n)],
            "address": [f"{i} Main Street" for i in range(n)],
            "city": [r[0] for r in rows],
            "age": pa.array([r[1] for r in rows], pa.int64()),
            "zip": pa.array([r[2] for r in rows], pa.int64()),
            "disease": [r[3] for r in rows],
        }
    )


def _classes(diseases_per_class: list[list[str]]) -> pa.Table:
    """One class (city, age, zip) per list, holding those diseases."""
    rows = []
    for i, diseases in enumerate(diseases_per_class):
        city, age, zip_ = CITIES[i % len(CITIES)], 20 + i // len(CITIES), 1001
        rows += [(city, age, zip_, d) for d in diseases]
    return _table(rows)


def _random(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    p = np.array([0.55, 0.25, 0.15, 0.05])  # skewed, so l and t bite in some classes
    return _table(
        [
            (
                CITIES[int(rng.integers(0, 4))],
                int(rng.integers(20, 27)),
                [1001, 1002][int(rng.integers(0, 2))],
                DISEASES[int(rng.choice(4, p=p))],
            )
            for _ in range(n)
        ]
    )


def _setup(tmp_path: Path, table: pa.Table, fmt: str = "parquet", **privacy) -> Path:
    inp = tmp_path / f"in-{fmt}"
    write_table(table, inp / f"data.{fmt}", fmt)
    cfg = config_dict(inp, tmp_path / "out", fmt=fmt, k=3, suppression_limit=0)
    cfg["privacy"].update(privacy)
    return write_config(tmp_path / f"skald-{fmt}.yaml", cfg)


def _audit(path: Path, **overrides) -> dict:
    return audit(load_config(path, overrides))


def _same(a: dict, b: dict) -> None:
    assert {k: v for k, v in a.items() if k not in _VARIES} == {
        k: v for k, v in b.items() if k not in _VARIES
    }


# -- the naive reference: pandas groupby at the current values, exact fractions -----------------


def naive(table: pa.Table, k: int, criterion: dict | None = None, limit=0) -> dict:
    df = table.to_pandas()
    groups = df.groupby(QIDS, dropna=False)
    sizes = groups.size()
    global_counts = df["disease"].value_counts(dropna=False)
    n_all = len(df)
    bad = sizes < k
    figure = violating = None
    if criterion:
        per_class = []
        for _, g in groups:
            counts = g["disease"].value_counts(dropna=False)
            n = len(g)
            variant = criterion.get("variant") or criterion.get("distance")
            if variant == "distinct":
                per_class.append((len(counts), len(counts) >= criterion["l"]))
            elif variant == "entropy":
                h = -sum(c / n * math.log(c / n) for c in counts)
                ok = len(counts) >= criterion["l"] and h >= math.log(criterion["l"]) - 1e-12
                per_class.append((math.exp(h), ok))
            elif variant == "recursive":
                top = sorted(counts.tolist(), reverse=True)
                tail = sum(top[criterion["l"] - 1 :])
                ratio = Fraction(top[0], tail) if tail else math.inf
                ok = len(top) >= criterion["l"] and top[0] < Fraction(str(criterion["c"])) * tail
                per_class.append((ratio, ok))
            elif variant == "equal":
                d = (
                    sum(
                        abs(Fraction(int(counts.get(v, 0)), n) - Fraction(int(gv), n_all))
                        for v, gv in global_counts.items()
                    )
                    / 2
                )
                per_class.append((d, d <= Fraction(str(criterion["t"]))))
        figures = [f for f, _ in per_class]
        worst_is_max = criterion.get("distance") or criterion.get("variant") == "recursive"
        figure = max(figures) if worst_is_max else min(figures)
        refused = ~np.asarray([ok for _, ok in per_class])
        violating = (int(refused.sum()), int(sizes[refused].sum()))
        bad = bad | refused
    to_suppress = int(sizes[bad].sum())
    return {
        "n_records": n_all,
        "n_equivalence_classes": len(sizes),
        "min_class_size": int(sizes.min()),
        "classes_below_k": int((sizes < k).sum()),
        "records_in_classes_below_k": int(sizes[sizes < k].sum()),
        "records_to_suppress": to_suppress,
        "figure": figure,
        "violating": violating,
        "holds": to_suppress <= math.floor(Fraction(str(limit)) * n_all),
    }


def check_against_naive(report: dict, expected: dict) -> None:
    for key in (
        "n_records",
        "n_equivalence_classes",
        "min_class_size",
        "classes_below_k",
        "records_in_classes_below_k",
        "holds",
    ):
        assert report[key] == expected[key], key
    assert report["suppression"]["records_to_suppress"] == expected["records_to_suppress"]
    if expected["violating"] is not None:
        model = report["privacy_models"][1]
        figures = ("min_distinct", "min_entropy_l", "max_recursive_ratio", "max_distance")
        key = next(k for k in figures if k in model)
        if expected["figure"] == math.inf:
            assert model[key] is None  # unbounded: a class with fewer than l values
        else:
            assert model[key] == pytest.approx(float(expected["figure"]), rel=1e-12)
        violating = (model["classes_violating"], model["records_in_violating_classes"])
        assert violating == expected["violating"]


# -- k only, k and l, entropy, t ---------------------------------------------------------------


def test_k_only_holds_but_distinct_l_does_not(tmp_path):
    table = _classes([["flu"] * 4, ["flu", "gout", "flu"], ["none", "asthma", "none"]])
    cfg = _setup(tmp_path, table)
    report = _audit(cfg)
    check_against_naive(report, naive(table, 3))
    assert report["holds"] and report["holds_without_suppression"]
    assert report["privacy_models"] == [
        {
            "model": "k-anonymity",
            "k": 3,
            "min_class_size": 3,
            "classes_violating": 0,
            "records_in_violating_classes": 0,
        }
    ]
    criterion = {"attribute": "disease", "l": 2, "variant": "distinct"}
    cfg = _setup(tmp_path, table, l_diversity=[criterion])
    report = _audit(cfg)
    check_against_naive(report, naive(table, 3, criterion))
    assert not report["holds"]
    distinct = report["privacy_models"][1]
    assert distinct["min_distinct"] == 1
    assert (distinct["classes_violating"], distinct["records_in_violating_classes"]) == (1, 4)
    assert report["suppression"] == {
        "limit": "0",
        "records_to_suppress": 4,
        "max_suppressed": 0,
        "fits": False,
    }
    # the 4 records fit a limit of 0.4 * 10 = 4: the criteria hold once they are suppressed
    report = _audit(cfg, suppression_limit="0.4")
    assert report["holds"] and not report["holds_without_suppression"]


def test_k_and_distinct_l2_hold(tmp_path):
    table = _classes([["flu", "gout", "flu"], ["none", "asthma", "none", "flu"], ["a", "b", "c"]])
    criterion = {"attribute": "disease", "l": 2, "variant": "distinct"}
    report = _audit(_setup(tmp_path, table, l_diversity=[criterion]))
    check_against_naive(report, naive(table, 3, criterion))
    assert report["holds"] and report["privacy_models"][1]["min_distinct"] == 2


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "criterion",
    [
        {"attribute": "disease", "l": 2, "variant": "distinct"},
        {"attribute": "disease", "l": 2, "variant": "entropy"},
        {"attribute": "disease", "l": 2, "variant": "recursive", "c": 2},
        {"attribute": "disease", "t": 0.3, "distance": "equal"},
    ],
    ids=["distinct", "entropy", "recursive", "t-equal"],
)
def test_random_data_matches_naive_groupby(tmp_path, seed, criterion):
    table = _random(400, seed)
    key = "t_closeness" if "t" in criterion else "l_diversity"
    for limit in (0, 0.2):
        cfg = _setup(tmp_path, table, **{key: [criterion]}, suppression_limit=limit)
        check_against_naive(_audit(cfg), naive(table, 3, criterion, limit))


def test_entropy_even_spread_over_l_values_passes(tmp_path):
    table = _classes([["flu", "gout"] * 2, ["none", "asthma", "flu"]])
    criterion = {"attribute": "disease", "l": 2, "variant": "entropy"}
    report = _audit(_setup(tmp_path, table, l_diversity=[criterion]))
    check_against_naive(report, naive(table, 3, criterion))
    assert report["holds"] and report["privacy_models"][1]["min_entropy_l"] == pytest.approx(2)


def test_t_equal_against_all_records(tmp_path):
    table = _classes([["flu"] * 3, ["gout"] * 3, ["flu", "gout", "flu", "gout"]])
    criterion = {"attribute": "disease", "t": 0.5, "distance": "equal"}
    report = _audit(_setup(tmp_path, table, t_closeness=[criterion]))
    check_against_naive(report, naive(table, 3, criterion))
    # each pure class is exactly 1/2 from the input's 50/50 mix: t = 0.5 holds, t = 0.4 not
    assert report["holds"] and report["privacy_models"][1]["max_distance"] == 0.5
    report = _audit(_setup(tmp_path, table, t_closeness=[{**criterion, "t": 0.4}]))
    assert not report["holds"] and report["privacy_models"][1]["classes_violating"] == 2


def test_null_sensitive_value_is_a_value(tmp_path):
    table = _classes([["flu", None, "flu"], ["gout", "gout", None]])
    criterion = {"attribute": "disease", "l": 2, "variant": "distinct"}
    report = _audit(_setup(tmp_path, table, l_diversity=[criterion]))
    assert report["holds"] and report["privacy_models"][1]["min_distinct"] == 2


def test_null_qid_values_form_classes_of_their_own(tmp_path):
    """At current values a null (or NaN) QID is one more value, as in a groupby with dropna off."""
    table = _classes([["flu", "gout", "flu"], ["none", "asthma", "none"]])
    table = pa.concat_tables([table, table, table])
    n = table.num_rows
    table = table.set_column(
        table.schema.get_field_index("age"),
        "age",
        pa.array([None if i % 6 == 0 else (np.nan if i % 6 == 1 else 30.0) for i in range(n)]),
    )
    table = table.set_column(
        table.schema.get_field_index("city"),
        "city",
        pa.array([None if i % 4 == 0 else "Oslo" for i in range(n)]),
    )
    report = _audit(_setup(tmp_path, table))
    check_against_naive(report, naive(table, 3))
    assert report["n_equivalence_classes"] == 4  # age {null or NaN, 30} x city {null, Oslo}


# -- input forms and invariance ----------------------------------------------------------------


def test_csv_input_same_report(tmp_path):
    table = _random(300, 7)
    criterion = [{"attribute": "disease", "l": 2, "variant": "entropy"}]
    parquet = _audit(_setup(tmp_path, table, "parquet", l_diversity=criterion))
    csv = _audit(_setup(tmp_path, table, "csv", l_diversity=criterion))
    _same(parquet, csv)
    check_against_naive(csv, naive(table, 3, criterion[0]))


def test_chunking_invariance(tmp_path):
    inp = tmp_path / "in"
    write_dataset(inp, n_files=3, rows=60)
    cfg = config_dict(inp, tmp_path / "out", k=3, suppression_limit=0.1)
    cfg["privacy"]["t_closeness"] = [{"attribute": "disease", "t": 0.4, "distance": "equal"}]
    path = write_config(tmp_path / "skald.yaml", cfg)
    big, small = _audit(path, chunk_rows=1000), _audit(path, chunk_rows=7)
    assert (big["chunks"], small["chunks"]) == (3, 27)
    _same(big, small)
    table = pa.concat_tables(pq_read(p) for p in sorted(inp.glob("*.parquet")))
    check_against_naive(big, naive(table, 3, cfg["privacy"]["t_closeness"][0], 0.1))


@pytest.mark.parametrize(
    "radices", [[3, 5, 7], [1 << 30, 1 << 20], [1 << 40, 1 << 40, 3], [2, 1 << 61]]
)
@pytest.mark.parametrize("weights", ["ones", "wide"])
def test_group_tuples_sums_equal_tuples_in_order(radices, weights):
    """Every path of the grouping: packed sort, arg-sort for wide counts, ranks on overflow."""
    rng = np.random.default_rng(len(radices) + radices[-1])
    n = 2000
    codes = np.stack([rng.integers(0, min(r, 4), n) * (r // min(r, 4)) for r in radices])
    counts = np.ones(n, np.int64) if weights == "ones" else rng.integers(1, 1 << 40, n)
    expected: dict[tuple, int] = {}
    for row, c in zip(codes.T.tolist(), counts.tolist(), strict=True):
        expected[tuple(row)] = expected.get(tuple(row), 0) + c
    halves = [(codes[:, : n // 2], counts[: n // 2]), (codes[:, n // 2 :], counts[n // 2 :])]
    out, sums = group_tuples(halves, radices)
    assert [tuple(r) for r in out.T.tolist()] == sorted(expected)
    assert sums.tolist() == [expected[k] for k in sorted(expected)]


def pq_read(path: Path) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(path)


@pytest.mark.parametrize("out_fmt", ["parquet", "csv"])
def test_release_audited_as_written(tmp_path, capsys, out_fmt):
    """A release: its all-"*" rows are the suppressed records; the figures are the manifest's.
    Its parts are read in the format they were written in (here the input is Parquet)."""
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=3, rows=60)
    cfg = config_dict(inp, out, k=3, suppression_limit=0.1, out_fmt=out_fmt)
    cfg["privacy"]["l_diversity"] = [{"attribute": "disease", "l": 2, "variant": "distinct"}]
    path = write_config(tmp_path / "skald.yaml", cfg)
    code, _, err = run_inprocess(["run", str(path), "-q"], capsys)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    code, stdout, _ = run_inprocess(["audit", str(path), "--input", str(out)], capsys)
    report = json.loads(stdout)
    assert code == 0 and report["release"] and report["holds"]
    assert report["n_suppressed_already"] == manifest["n_suppressed"]
    assert report["suppression"]["records_to_suppress"] == manifest["n_suppressed"]
    for key in ("n_records", "n_equivalence_classes", "min_class_size"):
        assert report[key] == manifest[key], key
    assert (
        report["privacy_models"][1]["min_distinct"]
        == (manifest["privacy_models"][1]["min_distinct"])
    )
    # the raw input, at its current values, does not satisfy k = 3
    code, stdout, _ = run_inprocess(["audit", str(path)], capsys)
    assert code == 1 and not json.loads(stdout)["release"]


def test_a_tampered_release_does_not_hold(tmp_path, capsys):
    """A released class below k is published as it is: no suppression allowance excuses it
    (for a dataset the same class only needs suppressing within the limit)."""
    import pyarrow.parquet as pq

    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=3, rows=60)
    path = write_config(tmp_path / "skald.yaml", config_dict(inp, out, k=3, suppression_limit=0.1))
    assert run_inprocess(["run", str(path), "-q"], capsys)[0] == 0
    part = sorted(out.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    kept = [i for i, v in enumerate(table.column("city").to_pylist()) if v != "*"]
    cities = table.column("city").to_pylist()
    cities[kept[0]] = "Atlantis"  # one record in a class of its own
    pq.write_table(table.set_column(table.schema.get_field_index("city"), "city", [cities]), part)
    code, stdout, _ = run_inprocess(["audit", str(path), "--input", str(out)], capsys)
    report = json.loads(stdout)
    assert report["release"] and report["classes_below_k"] >= 1
    assert report["suppression"]["fits"]  # suppressing it would fit the limit...
    assert code == 1 and not report["holds"]  # ...but a release cannot suppress any more


def test_a_numerical_qid_stored_as_text_in_one_file_is_refused(tmp_path, capsys):
    """As `skald run` refuses it: the text values would form classes of their own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    inp = tmp_path / "in"
    files = write_dataset(inp, n_files=2, rows=30)
    table = pq.read_table(files[1])
    ages = pa.array([str(a) for a in table.column("age").to_pylist()])
    pq.write_table(table.set_column(table.schema.get_field_index("age"), "age", ages), files[1])
    path = write_config(tmp_path / "skald.yaml", config_dict(inp, tmp_path / "out", k=3))
    code, stdout, err = run_inprocess(["audit", str(path)], capsys)
    assert code == 2 and stdout == ""
    assert err.strip() == (
        f"skald: error: column 'age' in file {files[1]} has type string, but it is a numerical QID"
    )


# -- the command: exit codes, nothing written, no values ---------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_cli_exit_codes_nothing_written_no_values(tmp_path, capsys):
    table = _classes([["flu"] * 4, ["flu", "gout", "flu"], ["none", "asthma", "none"]])
    l2 = [{"attribute": "disease", "l": 2, "variant": "distinct"}]
    k_only, with_l = _setup(tmp_path, table), None
    with_l = write_config(
        tmp_path / "l.yaml",
        {**load_yaml(k_only), "privacy": {"k": 3, "suppression_limit": 0, "l_diversity": l2}},
    )
    before = _snapshot(tmp_path)
    code, stdout, _ = run_inprocess(["audit", str(k_only)], capsys)
    assert code == 0 and json.loads(stdout)["holds"]
    code, stdout, _ = run_inprocess(["audit", str(with_l)], capsys)
    assert code == 1 and not json.loads(stdout)["holds"]
    code, stdout, _ = run_inprocess(["audit", str(with_l), "--suppression-limit", "0.4"], capsys)
    assert code == 0
    code, stdout, _ = run_inprocess(["audit", str(k_only), "--k", "4"], capsys)
    assert code == 1 and json.loads(stdout)["classes_below_k"] == 2
    for value in [*CITIES, *DISEASES, "asthma", "1001", "Person", "P0001"]:
        assert value not in stdout
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_canary_never_printed(tmp_path, capsys, fmt):
    """The canary record's raw values appear neither in the report nor in the logs."""
    inp = tmp_path / "in"
    write_dataset(inp, n_files=2, rows=30, fmt=fmt, canary_in=1)
    cfg = config_dict(inp, tmp_path / "out", fmt=fmt, k=3, suppression_limit=0.1)
    cfg["privacy"]["t_closeness"] = [{"attribute": "disease", "t": 0.5, "distance": "equal"}]
    path = write_config(tmp_path / "skald.yaml", cfg)
    code, stdout, err = run_inprocess(["audit", str(path), "--chunk-rows", "7"], capsys)
    assert code in (0, 1), err
    assert json.loads(stdout)["n_records"] == 61
    for raw in CANARY_RAW:
        assert raw not in stdout and raw not in err


def load_yaml(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--input", "{tmp}/nowhere"], "does not exist"),
        (["--k", "1"], "k must be"),
        (["--l", "9"], "has only"),
        (["--chunk-rows", "0"], "chunk_rows"),
    ],
)
def test_cli_bad_input_exit_2_one_line(tmp_path, capsys, argv, words):
    table = _classes([["flu", "gout", "flu"], ["none", "asthma", "none"]])
    cfg = _setup(tmp_path, table, l_diversity=[{"attribute": "disease", "l": 2}])
    before = _snapshot(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, stdout, err = run_inprocess(["audit", str(cfg), *argv], capsys)
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and words in err, err
    assert _snapshot(tmp_path) == before


def test_cli_missing_column_exit_2(tmp_path, capsys):
    table = _classes([["flu", "gout", "flu"]]).drop_columns(["zip"])
    cfg = _setup(tmp_path, table)
    code, _, err = run_inprocess(["audit", str(cfg)], capsys)
    assert code == 2 and "column 'zip' is missing" in err and err.count("\n") == 1


def test_as_a_process_json_on_stdout_logs_on_stderr(tmp_path):
    table = _classes([["flu"] * 4, ["flu", "gout", "flu"]])
    cfg = _setup(tmp_path, table, l_diversity=[{"attribute": "disease", "l": 2}])
    done = run_subprocess(["audit", str(cfg)])
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["privacy_models"][1]["classes_violating"] == 1
    assert "audit: chunk 1/1" in done.stderr
