"""`skald verify` of a research-subset release (docs/design.md §4e) re-checks δ-presence and exact k-map
in full: the release keeps population_counts.json (per class: population and subset records,
counts only), named and hashed in the manifest. Altering the file, a part or a figure is
detected (exit 1, one line); a release without the file is "verified": "partial" (exit 4)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from helpers_data import run_inprocess
from skald_testdata import write_chunks, write_config

HIER = {"a": ["x"], "b": ["x"], "c": ["y"], "d": ["y"], "e": ["z"]}
QIDS = [
    {"name": "cat", "type": "categorical", "hierarchy": HIER},
    {"name": "age", "type": "numerical", "min_width": 2},
]
PRIVACY = {
    "k": 2,
    "delta_presence": {"min": 0, "max": 0.5},
    "k_map": {"k": 8},
    "suppression_limit": 0.2,
}


def _population(n: int = 400, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "pid": [f"p{i}" for i in range(n)],
            "cat": rng.choice(list(HIER), n),
            "age": rng.integers(20, 40, n),
            "in_study": rng.random(n) < 0.25,
        }
    )


def _release(tmp: Path, fmt: str, mode: str = "mask") -> Path:
    write_chunks(_population(), tmp / "in", [150])
    body = {
        "input": {"path": str(tmp / "in")},
        "output": {"path": str(tmp / "out"), "format": fmt},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "suppressed_records": mode,
        "privacy": PRIVACY,
    }
    from airflow_skald.cli import main

    assert main(["run", str(write_config(tmp / "c.yaml", body)), "-q"]) == 0
    return tmp / "out"


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    kinds = {"parquet": ("parquet", "mask"), "csv": ("csv", "mask"), "drop": ("parquet", "drop")}
    return {k: _release(tmp_path_factory.mktemp(k), *v) for k, v in kinds.items()}


def _copy(src: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(src, tmp_path / "release"))


def _verify(out: Path, capsys) -> tuple[int, dict | None, str]:
    code, stdout, err = run_inprocess(["verify", str(out)], capsys)
    return code, (json.loads(stdout) if stdout.strip() else None), err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skald: verification failed: "), err
    return lines[0]


def _counts(out: Path) -> dict:
    return json.loads((out / "population_counts.json").read_text())


def _rewrite_counts(out: Path, body: dict) -> None:
    """The counts file edited and the manifest's sha256 made to match it."""
    data = json.dumps(body).encode()
    (out / "population_counts.json").write_bytes(data)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["population_counts"]["sha256"] = hashlib.sha256(data).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("kind", ["parquet", "csv", "drop"])
def test_population_release_is_verified_in_full(releases, tmp_path, capsys, kind) -> None:
    out = _copy(releases[kind], tmp_path)
    code, report, err = _verify(out, capsys)
    assert code == 0, err
    assert report["verified"] is True and "not_rechecked" not in report
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["population_counts"]
    data = (out / "population_counts.json").read_bytes()
    assert entry == {"file": "population_counts.json", "sha256": hashlib.sha256(data).hexdigest()}
    counts = _counts(out)
    # counts only: no label, no value of the data (the classes are named by one digest)
    assert set(counts) == {
        "order",
        "labels_sha256",
        "classes",
        "subset_records",
        "population_records",
        "population_classes_without_subset",
        "subset",
        "population",
    }
    assert all(isinstance(c, int) for c in counts["subset"] + counts["population"])
    text = data.decode()
    assert not re.search(r'"[a-e]"|"p\d+"', text)
    # the subset records the file counts are the release's rows; each class's population
    # holds its subset records; δ and k-map hold class by class (the models re-checked them)
    population = _population()
    assert counts["subset_records"] == manifest["n_records"] - (
        manifest["n_suppressed"] if kind == "drop" else 0
    )
    assert counts["population_records"] <= len(population)
    figures = {m["model"]: m for m in report["privacy_models"]}
    assert figures["delta-presence"]["delta_max"] <= 0.5
    assert figures["k-map-exact"]["min_population_count"] >= 8
    claimed = {m["model"]: m for m in manifest["privacy_models"]}
    for name in ("delta-presence", "k-map-exact"):
        assert figures[name] == claimed[name]


def test_altered_counts_file_is_refused(releases, tmp_path, capsys) -> None:
    out = _copy(releases["parquet"], tmp_path / "sha")
    body = _counts(out)
    body["population"][0] += 1
    (out / "population_counts.json").write_text(json.dumps(body))
    code, _, err = _verify(out, capsys)
    assert code == 1, err
    assert "population_counts.json of" in _one_line(err) and "sha256 differs" in err

    # the file and its hash altered together: δ-presence re-checked from the counts fails
    out = _copy(releases["parquet"], tmp_path / "delta")
    body = _counts(out)
    # classes of at least 5 subset records now match 8 population records: δ >= 5/8 > 0.5
    pairs = zip(body["subset"], body["population"], strict=True)
    body["population"] = [8 if s >= 5 else p for s, p in pairs]
    _rewrite_counts(out, body)
    code, _, err = _verify(out, capsys)
    assert code == 1, err
    assert "violates (0, 0.5)-presence" in _one_line(err)

    # ... and exact k-map: δ = 0.5 holds, but classes of fewer than 4 subset records now
    # match fewer than 8 population records
    out = _copy(releases["parquet"], tmp_path / "kmap")
    body = _counts(out)
    body["population"] = [2 * s for s in body["subset"]]
    _rewrite_counts(out, body)
    code, _, err = _verify(out, capsys)
    assert code == 1, err
    assert "violates 8-map (exact, population table)" in _one_line(err)

    out = _copy(releases["parquet"], tmp_path / "missing")
    (out / "population_counts.json").unlink()
    code, _, err = _verify(out, capsys)
    assert code == 2, err
    assert "population_counts.json of" in err and "is missing" in err


def test_population_classes_without_subset_records_are_rechecked(tmp_path, capsys) -> None:
    """δ-presence with min > 0 (ADR 0040): the file counts the node's population classes without
    a subset record (none at a released node); a file counting one fails verification."""
    write_chunks(_population(), tmp_path / "in", [150])
    body = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "research_subset": {"column": "in_study"},
        "privacy": {"delta_presence": {"min": 0.1, "max": 0.6}, "suppression_limit": 0.2},
    }
    from airflow_skald.cli import main

    assert main(["run", str(write_config(tmp_path / "c.yaml", body)), "-q"]) == 0
    out = tmp_path / "out"
    counts = _counts(out)
    assert counts["population_classes_without_subset"] == 0
    code, report, err = _verify(out, capsys)
    assert code == 0 and report["verified"] is True, err
    counts["population_classes_without_subset"] = 2
    _rewrite_counts(out, counts)
    code, _, err = _verify(out, capsys)
    assert code == 1, err
    assert "2 population class(es) without a subset record" in _one_line(err)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_altered_part_is_detected(releases, tmp_path, capsys, kind) -> None:
    """A record moved to another class (its labels those of another released class), or given
    labels no class had: the parts' classes are no longer the counted ones."""
    for how in ("moved", "relabelled"):
        out = _copy(releases[kind], tmp_path / how)
        part = sorted(out.glob(f"part-*.{kind}"))[0]
        read = pq.read_table if kind == "parquet" else pacsv.read_csv
        table = read(part)
        cats = [str(v) for v in table.column("cat").to_pylist()]
        ages = [str(v) for v in table.column("age").to_pylist()]
        kept = [i for i, c in enumerate(cats) if c != "*"]
        i = kept[0]
        other = next(j for j in kept if (cats[j], ages[j]) != (cats[i], ages[i]))
        if how == "moved":
            cats[i], ages[i] = cats[other], ages[other]
        else:
            ages[i] = "[1000, 1002)"
        table = table.set_column(table.schema.get_field_index("cat"), "cat", pa.array(cats))
        table = table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))
        if kind == "parquet":
            pq.write_table(table, part)
        else:
            pacsv.write_csv(table, part)
        code, _, err = _verify(out, capsys)
        assert code == 1, (how, err)
        line = _one_line(err)
        assert "population_counts.json" in line or "violates" in line, line


def test_altered_delta_figure_is_detected(releases, tmp_path, capsys) -> None:
    out = _copy(releases["parquet"], tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    (i,) = [i for i, m in enumerate(manifest["privacy_models"]) if m["model"] == "delta-presence"]
    manifest["privacy_models"][i]["delta_max"] = 0.01
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = _verify(out, capsys)
    assert code == 1, err
    assert f"privacy_models[{i}].delta_max" in _one_line(err)


def test_without_the_counts_file_verify_is_partial(releases, tmp_path, capsys) -> None:
    out = _copy(releases["parquet"], tmp_path)
    (out / "population_counts.json").unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["population_counts"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, report, err = _verify(out, capsys)
    assert code == 4, err
    assert report["verified"] == "partial"
    assert sorted(m["model"] for m in report["not_rechecked"]) == ["delta-presence", "k-map-exact"]
    assert all("population_counts.json" in m["reason"] for m in report["not_rechecked"])
