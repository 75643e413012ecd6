"""Microaggregation end to end (docs/design.md §4f): the written column against an oracle written from
docs/design.md alone (pandas over the whole table, grouped at the manifest's node), chunking
invariance, and ARX 3.9.2's answers on Adult."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from skald_testdata import read_release, write_chunks, write_config

from airflow_skald.cli import main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.run.baseline import run_per_chunk
from airflow_skald.core.run.runner import run


def _aggregate(function: str, values: pd.Series, integer: bool) -> float | str:
    """ARX's DistributionAggregateFunction, from its definition (docs/design.md §4f)."""
    s = sorted(values.astype(float))
    n = len(s)
    if function == "interval":
        return "[" + ", ".join(_out(v, integer) for v in (s[0], s[-1])) + "]"
    if function == "mode":
        counts = values.astype(float).value_counts()
        return _out(min(counts[counts == counts.max()].index), integer)
    if function == "median":
        x = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    elif function == "mean":
        x = sum(s) / n
        x += sum(v - x for v in s) / n
    else:
        x = math.exp(sum(math.log(v + 1) for v in s) / n) - 1
    if integer:
        return _out(math.floor(x + 0.5), True)
    return x if function != "median" else repr(x)  # means: doubles, compared as such


def _out(x: float, integer: bool) -> str:
    return str(int(x)) if integer else repr(float(x))  # values here lie within 1e-3 .. 1e7


def _hierarchy(value: float) -> list[str]:
    """A hierarchy over decimal weights: 2 kg, then 10 kg groups, then `*`."""
    two, ten = int(value // 2 * 2), int(value // 10 * 10)
    return [f"{two}-{two + 2}", f"{ten}-{ten + 10}"]


def _table(n: int = 1200, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    weight = np.round(rng.uniform(50, 70, n), 1)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "weight": [f"{w:.1f}" for w in weight],  # text, as a hierarchy file lists it
            "height": rng.integers(150, 200, n),
            "sex": rng.choice(["F", "M"], n),
            "zip": rng.choice(["1001", "1002", "2001", "2002", "3001"], n),
        }
    )


ZIPS = {z: [z[:3] + "*", z[0] + "***"] for z in ["1001", "1002", "2001", "2002", "3001"]}


def _config(
    tmp_path: Path, name: str, inp: Path, microagg: dict, chunk_rows: int, bins: int = 10**6
) -> Path:
    weights = sorted(set(_table()["weight"]))
    micro = {q: {"microaggregation": m} for q, m in microagg.items()}
    body = {
        "input": {"path": str(inp), "format": "parquet"},
        "output": {"path": str(tmp_path / name), "format": "parquet"},
        "chunk_rows": chunk_rows,
        "direct_identifiers": ["id"],
        "quasi_identifiers": [
            {
                "name": "weight",
                "type": "categorical",
                "hierarchy": {w: _hierarchy(float(w)) for w in weights},
                **micro.get("weight", {}),
            },
            {"name": "height", "type": "numerical", "min_width": 1, **micro.get("height", {})},
            {"name": "sex", "type": "categorical", "hierarchy": {"F": ["*"], "M": ["*"]}},
            {"name": "zip", "type": "categorical", "hierarchy": ZIPS},
        ],
        "privacy": {"k": 6, "suppression_limit": 0.02},
        "memory": {"histogram_bins": bins},  # 10**6: one root whatever the chunk size
    }
    return write_config(tmp_path / f"{name}.yaml", body)


def _at(level: int, labels) -> callable:
    """A categorical QID at `level` (0: the value; past the listed labels: `*`)."""

    def generalise(s: pd.Series) -> pd.Series:
        if level == 0:
            return s.astype(str)
        return s.map(lambda v: ([*labels(v), "*"])[min(level, len(labels(v)) + 1) - 1])

    return generalise


def _expected(table: pd.DataFrame, node: dict, name: str, function: str, integer: bool):
    """The released value of every record, grouped by the QIDs in the lattice at `node`."""
    lattice = {
        "weight": _at(node.get("weight", 0), lambda v: _hierarchy(float(v))),
        "sex": _at(node["sex"], lambda v: ["*"]),
        "zip": _at(node["zip"], lambda v: ZIPS[v]),
    }
    keys = [lattice[q](table[q]) for q in lattice if q in node]
    if "height" in node:
        # docs/design.md §2: min_width 1, widths doubling from the domain's minimum, then the top
        keys.append((table["height"] - table["height"].min()) // 2 ** node["height"])
    key = pd.Series(list(zip(*keys, strict=True)), index=table.index)
    values = table[name].astype(float)
    want = {
        k: _aggregate(function, values[idx], integer) for k, idx in key.groupby(key).groups.items()
    }
    return key.map(want)


@pytest.mark.parametrize(
    "name, function, cluster",
    [
        ("weight", "mean", True),
        ("weight", "median", False),
        ("weight", "geometric_mean", True),
        ("height", "mode", False),
        ("height", "interval", True),
        ("height", "median", True),
        ("height", "mean", True),  # an integer mean: counted as sums per class, no value axis
        ("height", "mean", False),
    ],
)
def test_matches_the_oracle_however_chunked(tmp_path, name, function, cluster):
    table = _table()
    inp = write_chunks(table, tmp_path / "in", [300, 500, 100])
    written = []
    for rows in (170, 1200):
        cfg = _config(
            tmp_path, f"out-{rows}", inp, {name: {"function": function, "cluster": cluster}}, rows
        )
        manifest = run(load_config(cfg))
        written.append(read_release(tmp_path / f"out-{rows}"))
    assert written[0][name].tolist() == written[1][name].tolist()
    node, release = manifest["node"], written[1]
    assert (name in node) is cluster
    data_type = "integer" if name == "height" else "decimal"
    entry = {"function": function, "cluster": cluster, "data_type": data_type}
    assert manifest["microaggregation"] == {name: entry}
    assert main(["verify", str(tmp_path / "out-1200")]) == 0
    if (name, function, cluster) == ("height", "mean", True):  # sums per class, no value
        k_only = run(load_config(_config(tmp_path, "k-only", inp, {}, 1200)))  # axis: the
        for key in ("root_node", "root_bins", "root_bins_nonempty", "node"):  # k-only root
            assert manifest[key] == k_only[key], key
    lattice = [q for q in ("weight", "height", "sex", "zip") if q in node]
    suppressed = (release[lattice] == "*").all(axis=1)
    assert int(suppressed.sum()) == manifest["n_suppressed"]
    assert (release.loc[suppressed, name] == "*").all()
    expected = _expected(table, node, name, function, integer=name == "height")[~suppressed]
    got = release[name][~suppressed]
    if name == "weight" and function in ("mean", "geometric_mean"):  # doubles
        assert got.astype(float).to_numpy() == pytest.approx(expected.to_numpy(float), rel=1e-12)
    else:
        assert got.tolist() == expected.tolist()


def test_sums_roll_up_the_chain_and_merge_from_workers(tmp_path):
    # an integer mean counted as sums per class: with a small N_RAM phase 2 rolls the counts
    # (and the sums) up the root chain while counting, and workers' partials counted at
    # different chain nodes merge there; the release is the oracle's however it was counted
    table = _table()
    inp = write_chunks(table, tmp_path / "in", [300, 500, 100])
    micro = {"height": {"function": "mean", "cluster": True}}
    written = []
    for rows, workers in ((100, 1), (100, 2), (1200, 1)):
        name = f"out-{rows}-{workers}"
        cfg = _config(tmp_path, name, inp, micro, rows, bins=200)
        manifest = run(load_config(cfg), workers=workers)
        written.append(read_release(tmp_path / name)["height"].tolist())
    assert written[0] == written[1] == written[2]
    assert any(manifest["root_node"].values())  # the chain rose above level 0
    suppressed = np.asarray(written[2]) == "*"
    expected = _expected(table, manifest["node"], "height", "mean", integer=True)[~suppressed]
    assert np.asarray(written[2])[~suppressed].tolist() == expected.tolist()


def test_per_chunk_refuses_microaggregation(tmp_path):
    inp = write_chunks(_table(), tmp_path / "in", [600])
    cfg = _config(tmp_path, "pc", inp, {"height": {"function": "mean", "cluster": False}}, 600)
    with pytest.raises(ConfigError, match="--per-chunk does not take microaggregation"):
        run_per_chunk(load_config(cfg))


def test_out_of_lattice_at_the_top_node_releases_the_mean_and_verifies(tmp_path):
    """`cluster: false` at the top node: the one all-`*` class is released (not suppressed)
    and holds the aggregate of every record; the run's own check and `skald verify` pass."""
    table = _table()
    inp = write_chunks(table, tmp_path / "in", [600, 600])
    cfg = _config(tmp_path, "top", inp, {"height": {"function": "mean", "cluster": False}}, 600)
    body = {**yaml.safe_load(cfg.read_text()), "privacy": {"k": 700, "suppression_limit": 0}}
    cfg.write_text(yaml.safe_dump(body))
    manifest = run(load_config(cfg))  # failed: "'height' is not '*' in a suppressed record"
    assert manifest["node"] == manifest["top_node"] and manifest["n_suppressed"] == 0
    mean = _aggregate("mean", table["height"], integer=True)
    assert set(read_release(tmp_path / "top")["height"]) == {mean}
    assert verify_release(str(tmp_path / "top"))["verified"] is True
    assert main(["verify", str(tmp_path / "top")]) == 0


def test_utility_analysis_beside_a_qid_out_of_the_lattice(tmp_path):
    """The utility analysis's sample holds the lattice's QIDs: a QID microaggregated with
    `cluster: false` is no feature, its aggregate is not written into the sample (it failed:
    ArrowInvalid "Invalid column index to set field"), and the release is the same as without
    the analysis."""
    table = _table(600)
    inp = write_chunks(table, tmp_path / "in", [300, 300])
    micro = {"height": {"function": "mean", "cluster": False}}
    plain = _config(tmp_path, "plain", inp, micro, 300)
    cfg = _config(tmp_path, "util", inp, micro, 300)
    body = yaml.safe_load(cfg.read_text())
    body["utility"] = {"target": "sex", "models": ["naive_bayes"], "folds": 3}
    cfg.write_text(yaml.safe_dump(body))
    manifest = run(load_config(cfg))
    assert manifest["utility"]["classification"]["features"] == ["weight", "zip"]
    run(load_config(plain))
    assert read_release(tmp_path / "util").equals(read_release(tmp_path / "plain"))
