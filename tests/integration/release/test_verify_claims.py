"""`skald verify` checks everything it claims (issue 34): tampered releases fed to it fail with
a non-zero exit and one line naming the failing check.

- a direct identifier column in a LATER part (not only the first);
- a single-class release whose manifest names neither node nor top node is not taken for the
  top node (its class is judged by the sample-based models);
- the run's own final check refuses what `skald verify` refuses (identifier column, figures);
- a manifest figure other than the parts' (each figure named);
- a class violating hierarchical t-closeness (the hierarchy is kept in effective.json), and a
  drop-mode release violating t-closeness (the input's distribution is kept in
  sensitive_counts.json); without them: "verified": "partial", exit 4, never true / 0.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from helpers_data import run_inprocess, setup_run, write_config

NOT_VERIFIED = "skald: verification failed: "


def _one_line(err: str, prefix: str = NOT_VERIFIED) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    return lines[0]


def _release(tmp: Path, out_fmt: str = "parquet", **edits) -> Path:
    """A real release of 3 x 40 rows (k=3), the config edited by `edits` (top-level keys)."""
    _, out, config, cfg = setup_run(tmp, n_files=3, rows=40, out_fmt=out_fmt)
    cfg.update(edits)
    write_config(config, cfg)
    from airflow_skald.cli import main

    assert main(["run", str(config), "-q"]) == 0
    return out


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    return {fmt: _release(tmp_path_factory.mktemp(fmt), fmt) for fmt in ("parquet", "csv")}


def _copy(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / "release"
    shutil.copytree(src, out)
    return out


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _write_manifest(out: Path, manifest: dict) -> None:
    (out / "manifest.json").write_text(json.dumps(manifest))


def _rewrite(part: Path, fn) -> None:
    if part.suffix == ".parquet":
        pq.write_table(fn(pq.read_table(part)), part)
    else:
        pacsv.write_csv(fn(pacsv.read_csv(part)), part)


def _set(table: pa.Table, column: str, values: list) -> pa.Table:
    return table.set_column(table.schema.get_field_index(column), column, pa.array(values))


def _verify(out: Path, capsys, *flags: str) -> tuple[int, str, str]:
    return run_inprocess(["verify", str(out), *flags], capsys)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_identifier_column_in_a_later_part(releases, tmp_path, capsys, fmt) -> None:
    out = _copy(releases[fmt], tmp_path)
    code, _, err = _verify(out, capsys)
    assert code == 0, err
    last = sorted(out.glob(f"part-*.{fmt}"))[-1]
    assert last.name != "part-00000." + fmt
    _rewrite(last, lambda t: t.append_column("address", pa.array(["x"] * t.num_rows)))
    code, stdout, err = _verify(out, capsys)
    assert code == 1 and stdout == "", err
    line = _one_line(err)
    assert line == f"{NOT_VERIFIED}direct identifier column 'address' is in {last.name} of {out}"


def test_single_class_release_without_node_is_not_taken_for_the_top(tmp_path, capsys) -> None:
    """The run publishes the top node (its one class is exempt from average risk, docs/design.md §4c);
    relabelled to one non-'*' class and stripped of node and top_node, verify cannot tell it is
    the top: average risk judges the class (before: `None == None` exempted it)."""
    privacy = {"k": 2, "suppression_limit": 0, "average_risk": {"max": 0.005}}
    out = _release(tmp_path / "run", privacy=privacy)
    manifest = _manifest(out)
    assert manifest["node"] == manifest["top_node"] and manifest["n_equivalence_classes"] == 1
    for part in out.glob("part-*.parquet"):
        _rewrite(part, lambda t: _set(t, "city", ["Nordic"] * t.num_rows))
    qids = ",".join(manifest.pop("node"))
    del manifest["top_node"]
    _write_manifest(out, manifest)
    code, _, err = _verify(out, capsys, "--qids", qids)
    assert code == 1, err
    assert "average risk" in _one_line(err)


# ---- the run's own final check checks what `skald verify` checks (issue 34.1) ---------------


def test_run_refuses_a_part_with_an_identifier_column(tmp_path, capsys, monkeypatch) -> None:
    """Were the column filter to regress, the run's own check (the manifest about to be
    written) still finds the identifier column: nothing is published."""
    from airflow_skald.core.passes import pipeline

    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    monkeypatch.setattr(pipeline, "released_columns", lambda config, columns: list(columns))
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 1, err
    assert "direct identifier column 'address' is in part-00000.parquet" in _one_line(err)
    assert not out.exists()


def test_run_refuses_a_manifest_whose_figures_disagree(tmp_path, capsys, monkeypatch) -> None:
    from airflow_skald.core.run import phase_generalise

    real = phase_generalise.build_manifest

    def wrong_figure(*args, **kwargs):
        manifest = real(*args, **kwargs)
        manifest["privacy_models"][0]["min_class_size"] += 1
        return manifest

    _, out, config, _ = setup_run(tmp_path, n_files=3, rows=40)
    monkeypatch.setattr(phase_generalise, "build_manifest", wrong_figure)
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 1, err
    assert "manifest says privacy_models[0].min_class_size=" in _one_line(err)
    assert not out.exists()


# ---- every manifest figure the release determines is compared (issue 34.4) ------------------

CRITERIA = {
    "k": 2,
    "suppression_limit": 0.2,
    "l_diversity": [{"attribute": "disease", "l": 2}],
    "t_closeness": [{"attribute": "disease", "t": 0.5, "distance": "equal"}],
}


@pytest.fixture(scope="module")
def criteria_release(tmp_path_factory) -> Path:
    return _release(tmp_path_factory.mktemp("criteria"), privacy=CRITERIA)


def _bump(value):
    return value + 1 if isinstance(value, int) else value * 1.5 + 0.01


def _worse_at_risk(m: dict) -> None:
    row = next(r for r in m["at_risk_classes"] if r["model"] == "t-closeness")
    row["figure"] = _bump(row["figure"])


FIGURE_EDITS = [
    (
        "quality_models.scores.dm",
        lambda m: (
            m["quality_models"]["scores"].__setitem__("dm", m["dm"] + 1)
            if "quality_models" in m
            else m.__setitem__("quality_models", {"scores": {"dm": m["dm"] + 1}})
        ),
    ),
    ("at_risk_classes[t-closeness of disease].figure", _worse_at_risk),
    ("dm", lambda m: m.__setitem__("dm", m["dm"] + 1)),
    ("avg_class_size", lambda m: m.__setitem__("avg_class_size", _bump(m["avg_class_size"]))),
    ("max_suppressed", lambda m: m.__setitem__("max_suppressed", m["max_suppressed"] + 1)),
    ("class_size_histogram", lambda m: m["class_size_histogram"].__setitem__("1-1", 7)),
    ("precision", lambda m: m.__setitem__("precision", m["precision"] / 2 + 0.01)),
    (
        "risk.prosecutor_risk_avg",
        lambda m: m["risk"].__setitem__(
            "prosecutor_risk_avg", _bump(m["risk"]["prosecutor_risk_avg"])
        ),
    ),
    (
        "privacy_models[0].min_class_size",
        lambda m: m["privacy_models"][0].__setitem__(
            "min_class_size", m["privacy_models"][0]["min_class_size"] + 1
        ),
    ),
    (
        "privacy_models[1].min_distinct",
        lambda m: m["privacy_models"][1].__setitem__(
            "min_distinct", m["privacy_models"][1]["min_distinct"] + 1
        ),
    ),
    (
        "privacy_models[2].max_distance",
        lambda m: m["privacy_models"][2].__setitem__(
            "max_distance", _bump(m["privacy_models"][2]["max_distance"])
        ),
    ),
]


@pytest.mark.parametrize("figure, edit", FIGURE_EDITS, ids=[f for f, _ in FIGURE_EDITS])
def test_manifest_figure_disagreeing_with_the_parts(
    criteria_release, tmp_path, capsys, figure, edit
) -> None:
    out = _copy(criteria_release, tmp_path)
    code, stdout, err = _verify(out, capsys)
    assert code == 0, err
    manifest = _manifest(out)
    assert [m["model"] for m in manifest["privacy_models"]] == [
        "k-anonymity",
        "distinct-l-diversity",
        "t-closeness",
    ]
    edit(manifest)
    _write_manifest(out, manifest)
    code, stdout, err = _verify(out, capsys)
    assert code == 1 and stdout == "", err
    assert _one_line(err).startswith(f"{NOT_VERIFIED}manifest says {figure}="), err


# ---- criteria re-checked: hierarchical t-closeness, drop mode (issue 34.3) -------------------

DISEASE_HIERARCHY = {"flu": ["infectious"], "asthma": ["chronic"], "gout": ["chronic"]}
HIERARCHICAL = {
    "k": 2,
    "suppression_limit": 0.2,
    "t_closeness": [
        {
            "attribute": "disease",
            "t": 0.4,
            "distance": "hierarchical",
            "hierarchy": {**DISEASE_HIERARCHY, "none": ["healthy"]},
        }
    ],
}
DROP_T = {
    "k": 2,
    "suppression_limit": 0.2,
    "t_closeness": [{"attribute": "disease", "t": 0.3, "distance": "equal"}],
}


DROP_B_D = {
    "k": 2,
    "suppression_limit": 0.3,
    "b_likeness": [{"attribute": "disease", "beta": 1}],
    "d_disclosure": [{"attribute": "disease", "delta": 1.2}],
}


@pytest.fixture(scope="module")
def t_releases(tmp_path_factory) -> dict[str, Path]:
    return {
        "hierarchical": _release(tmp_path_factory.mktemp("hier"), privacy=HIERARCHICAL),
        "drop": _release(
            tmp_path_factory.mktemp("drop"), privacy=DROP_T, suppressed_records="drop"
        ),
    }


def test_b_likeness_and_d_disclosure_are_rechecked_in_drop_mode(tmp_path, capsys) -> None:
    out = _release(tmp_path / "run", privacy=DROP_B_D, suppressed_records="drop")
    manifest = _manifest(out)
    assert manifest["n_suppressed"] > 0 and "sensitive_counts" in manifest
    code, stdout, err = _verify(out, capsys)
    assert code == 0, err
    report = json.loads(stdout)
    assert report["verified"] is True and "not_rechecked" not in report
    _concentrate(out)
    code, stdout, err = _verify(out, capsys)
    assert code == 1 and stdout == "", err
    line = _one_line(err)
    assert "violates enhanced 1-likeness on disease" in line, line


def _concentrate(out: Path) -> None:
    """Permute the disease column over the whole release so that each class holds one value as
    far as it can: the release's distribution of disease is unchanged, its classes' are not."""
    parts = sorted(out.glob("part-*.parquet"))
    tables = [pq.read_table(p) for p in parts]
    whole = pa.concat_tables(tables)
    keys = list(zip(*(whole.column(q).to_pylist() for q in ("city", "age", "zip")), strict=True))
    order = sorted(range(whole.num_rows), key=lambda i: tuple(map(str, keys[i])))
    diseases = sorted(whole.column("disease").to_pylist(), key=str)
    values = [None] * whole.num_rows
    for rank, i in enumerate(order):
        values[i] = diseases[rank]
    start = 0
    for part, table in zip(parts, tables, strict=True):
        pq.write_table(_set(table, "disease", values[start : start + table.num_rows]), part)
        start += table.num_rows


@pytest.mark.parametrize("kind", ["hierarchical", "drop"])
def test_t_closeness_is_rechecked(t_releases, tmp_path, capsys, kind) -> None:
    out = _copy(t_releases[kind], tmp_path)
    code, stdout, err = _verify(out, capsys)
    assert code == 0, err
    report = json.loads(stdout)
    assert report["verified"] is True and "not_rechecked" not in report
    manifest = _manifest(out)
    if kind == "drop":
        assert manifest["n_suppressed"] > 0
        assert manifest["sensitive_counts"]["file"] == "sensitive_counts.json"
        assert (out / "sensitive_counts.json").is_file()
    else:
        assert "sensitive_counts" not in manifest
        assert not (out / "sensitive_counts.json").exists()
    _concentrate(out)
    code, stdout, err = _verify(out, capsys)
    assert code == 1 and stdout == "", err
    distance = "hierarchical" if kind == "hierarchical" else "equal"
    assert f"violates {distance}-distance t-closeness of 'disease'" in _one_line(err)


def test_what_cannot_be_rechecked_is_partial_never_true(t_releases, tmp_path, capsys) -> None:
    """Without the archived hierarchy (or the overall counts), the criterion is listed under
    not_rechecked, "verified" is "partial" and the exit code 4, whatever else holds."""
    out = _copy(t_releases["hierarchical"], tmp_path / "h")
    (out / "effective.json").unlink()
    code, stdout, err = _verify(out, capsys)
    assert code == 4, err
    report = json.loads(stdout)
    assert report["verified"] == "partial"
    assert [m["distance"] for m in report["not_rechecked"]] == ["hierarchical"]
    assert _one_line(err, "skald: verified in part: 1 criterion(s)")

    out = _copy(t_releases["drop"], tmp_path / "d")
    (out / "sensitive_counts.json").unlink()
    manifest = _manifest(out)
    del manifest["sensitive_counts"]
    _write_manifest(out, manifest)
    code, stdout, err = _verify(out, capsys)
    assert code == 4, err
    report = json.loads(stdout)
    assert report["verified"] == "partial"
    assert [m["model"] for m in report["not_rechecked"]] == ["t-closeness"]


def test_overall_counts_must_be_the_ones_the_manifest_names(t_releases, tmp_path, capsys):
    out = _copy(t_releases["drop"], tmp_path / "edited")
    counts = json.loads((out / "sensitive_counts.json").read_text())
    counts["attributes"]["disease"]["counts"][0] += 1
    (out / "sensitive_counts.json").write_text(json.dumps(counts))
    code, _, err = _verify(out, capsys)
    assert code == 1, err
    assert "sensitive_counts.json of" in _one_line(err) and "sha256 differs" in err

    out = _copy(t_releases["drop"], tmp_path / "missing")
    (out / "sensitive_counts.json").unlink()
    code, _, err = _verify(out, capsys)
    assert code == 2, err
    assert "sensitive_counts.json of" in err and "is missing" in err
