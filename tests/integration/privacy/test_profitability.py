"""ARX's game-theoretic models (issue 44 item 9, ADR 0046): ProfitabilityProsecutor /
ProfitabilityJournalist, with and without attack, and the publisher-payout objective.

- a generated table (three QIDs, a hierarchy value absent from the data, a research subset):
  the product's node, payout loss and suppressed records equal the exhaustive oracle's
  (tests/oracle_profitability.py, written from ARX's source), for all four models, the
  same over one chunk and many;
- Adult (ARX's hierarchies) and the generated table: the node, suppressed records, classes,
  ARX's payout loss and publisher payout equal ARX 3.9.2's answers, recorded in
  tests/data/arx_answers/profitability-*.json by the project's harness calling ARX's jars
  (benchmarks/arx_profitability; run again live where ARX is found).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from arx_answers import PROFITABILITY, adult_input_args, arx_answer, assert_arx_release
from oracle_profitability import exhaustive
from skald_testdata import ADULT, ADULT_CSV, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

pytestmark = pytest.mark.integration

# ARX's TestAnonymizationProfitability getConfig2(): attacks pay on classes below 6 records
COST = {
    "publisher_benefit": 1200,
    "publisher_loss": 3000,
    "adversary_gain": 120,
    "adversary_cost": 20,
}
ARX_COST = ["--benefit", "1200", "--loss", "3000", "--gain", "120", "--cost", "20"]
HIERARCHIES = {
    "qa": {f"a{i}": [f"a{i // 2}x", f"a{i // 4}y", "*"] for i in range(7)},  # a6: not in the data
    "qb": {f"b{i}": [f"b{i // 2}x", "*"] for i in range(4)},
    "qc": {f"c{i}": ["*"] for i in range(3)},
}
TOPS = (3, 2, 1)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """The table (CSV, `;`), its hierarchy files and an `in_study` flag (about 40 %)."""
    folder = tmp_path_factory.mktemp("profitability")
    rng = np.random.default_rng(44)
    n = 360
    df = pd.DataFrame(
        {
            "qa": rng.choice([f"a{i}" for i in range(6)], n, p=[0.3, 0.25, 0.2, 0.12, 0.08, 0.05]),
            "qb": rng.choice([f"b{i}" for i in range(4)], n, p=[0.4, 0.3, 0.2, 0.1]),
            "qc": rng.choice(["c0", "c1", "c2"], n, p=[0.6, 0.3, 0.1]),
            "in_study": rng.random(n) < 0.4,
        }
    )
    df.to_csv(folder / "table.csv", sep=";", index=False)
    df.drop(columns="in_study").to_csv(folder / "arx.csv", sep=";", index=False)
    (folder / "subset.txt").write_text("".join(f"{i}\n" for i in np.flatnonzero(df["in_study"])))
    for q, h in HIERARCHIES.items():
        rows = [";".join([v, *labels]) for v, labels in h.items()]
        (folder / f"h_{q}.csv").write_text("\n".join(rows) + "\n")
    return folder


def _run(folder: Path, out: Path, prof: dict, limit: float, chunk_rows: int, subset: bool) -> dict:
    body = {
        "input": {"path": str(folder / "table.csv"), "format": "csv", "delimiter": ";"},
        "output": {"path": str(out)},
        "chunk_rows": chunk_rows,
        "quasi_identifiers": [
            {"name": q, "type": "categorical", "hierarchy_file": str(folder / f"h_{q}.csv")}
            for q in HIERARCHIES
        ],
        "privacy": {"profitability": prof, "suppression_limit": limit},
        "quality": {"objective": "publisher_payout"},
        **({"research_subset": {"column": "in_study"}} if subset else {}),
    }
    shutil.rmtree(out, ignore_errors=True)
    return run(load_config(write_config(out.parent / f"{out.name}.yaml", body)))


MODELS = {  # oracle's name -> the config entry
    "prosecutor": {},
    "journalist": {"attacker": "journalist"},
    "prosecutor-noattack": {"attack": False},
    "journalist-noattack": {"attacker": "journalist", "attack": False},
}


@pytest.mark.parametrize("model", list(MODELS))
def test_generated_table_equals_the_exhaustive_oracle(generated, tmp_path, model):
    journalist = model.startswith("journalist")
    df = pd.read_csv(generated / "table.csv", sep=";")
    qids = [(q, h) for q, h in HIERARCHIES.items()]
    cost = {k: float(v) for k, v in COST.items()}
    limit = 0.05
    expected = exhaustive(
        df, qids, TOPS, model=model, cost=cost, limit=limit,
        subset="in_study" if journalist else None,
    )  # fmt: skip
    assert expected["value"] is not None and len(expected["results"]) == 4 * 3 * 2
    prof = {**MODELS[model], **COST}
    manifests = [
        _run(generated, tmp_path / f"out-{rows}", prof, limit, rows, journalist)
        for rows in ((1000, 37) if model in ("prosecutor", "journalist") else (53,))
    ]
    for manifest in manifests:
        node = tuple(manifest["node"].values())
        assert node in expected["nodes"], (node, expected["nodes"])
        got = manifest["quality_models"]["scores"]["publisher_payout"]
        assert got == pytest.approx(expected["value"], rel=1e-12)
        assert manifest["n_suppressed"] == expected["results"][node]["suppressed"]
    # one chunk and many: the same release
    assert (
        len({(str(m["node"]), m["n_suppressed"], m["n_equivalence_classes"]) for m in manifests})
        == 1
    )


def test_generated_table_equals_arx(generated, tmp_path):
    """No-attack prosecutor (k = 7 from gain / cost = 6) with the payout objective."""
    args = ["--input", "{table}/arx.csv", "--sep", ";"]
    args += [a for q in HIERARCHIES for a in ("--qid", f"{q}={{table}}/h_{q}.csv")]
    args += ["--model", "prosecutor-noattack", "--suppression", "0.05", *ARX_COST]
    arx = arx_answer(
        "profitability-generated-prosecutor-noattack",
        args,
        places={"{table}": str(generated)},
        command=PROFITABILITY,
    )
    assert arx["no_attack_k"] == 7
    prof = {"attack": False, **COST}
    manifest = _run(generated, tmp_path / "out", prof, 0.05, 100, False)
    _same_as_arx(manifest, arx)


ADULT_QIDS = ["age", "sex", "race", "marital-status", "education"]


@pytest.fixture(scope="module")
def adult_population(tmp_path_factory) -> Path:
    df = pd.read_csv(ADULT_CSV, sep=";", dtype=str, keep_default_na=False)
    df["in_study"] = np.arange(len(df)) % 10 == 0
    path = tmp_path_factory.mktemp("adult") / "adult_pop.csv"
    df.to_csv(path, sep=";", index=False)
    return path


@pytest.mark.parametrize("model", ["prosecutor", "journalist", "journalist-noattack"])
def test_adult_equals_arx(adult_population, tmp_path, model):
    journalist = model.startswith("journalist")
    args = [*adult_input_args(ADULT_QIDS), "--model", model, "--suppression", "0.04", *ARX_COST]
    args += ["--metric", "payout-journalist" if journalist else "payout-prosecutor"]
    args += ["--subset", "mod:10:0"] if journalist else []
    arx = arx_answer(f"profitability-adult-{model}", args, command=PROFITABILITY)
    body = {
        "input": {"path": str(adult_population), "format": "csv", "delimiter": ";"},
        "output": {"path": str(tmp_path / "out")},
        "quasi_identifiers": [
            {
                "name": q,
                "type": "categorical",
                "hierarchy_file": str(ADULT / f"adult_hierarchy_{q}.csv"),
            }
            for q in ADULT_QIDS
        ],
        "privacy": {"profitability": {**MODELS[model], **COST}, "suppression_limit": 0.04},
        "quality": {"objective": "publisher_payout"},
        **({"research_subset": {"column": "in_study"}} if journalist else {}),
    }
    manifest = run(load_config(write_config(tmp_path / "c.yaml", body)))
    _same_as_arx(manifest, arx)


def _same_as_arx(manifest: dict, arx: dict) -> None:
    assert_arx_release(manifest, arx)
    score = manifest["quality_models"]["scores"]["publisher_payout"]
    assert score == pytest.approx(arx["arx_information_loss_value"], rel=1e-12)
    figures = [m for m in manifest["privacy_models"] if m["model"] == "profitability"]
    if figures:  # with an attack: the kept records' payout, ARX's "Publisher payout"
        assert figures[0]["publisher_payout"] == pytest.approx(arx["publisher_payout"], rel=1e-12)


def test_verify_audit_and_per_chunk_name_what_they_cannot_judge(generated, tmp_path, capsys):
    """`skald verify` re-checks the release but names the attack model as not re-checked
    (exit 4: a release holds no domain shares); `skald audit` lists it as not checked; the
    per-chunk baseline releases what each chunk's search kept."""
    import json

    from airflow_skald.cli import main

    _run(generated, tmp_path / "out", COST, 0.05, 100, False)
    config = tmp_path / "out.yaml"
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "out")]) == 4
    assert "profitability" in capsys.readouterr().out
    assert main(["audit", str(config)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in report["not_checked"]] == ["profitability"]
    assert main(["run", str(config), "--per-chunk", "--overwrite", "--quiet"]) == 0
