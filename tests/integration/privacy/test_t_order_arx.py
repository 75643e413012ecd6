"""Ordered-distance t-closeness over text (issue 44 item 6, ADR 0044): `order: text` orders the
values as ARX's `DataType.STRING` (Java's String.compareTo: UTF-16 code units, so U+1F600
comes before U+FB01; an empty cell is ARX's empty text, first) and `order: [...]` as ARX's
`DataType.createOrderedString(values)`. On a generated table of texts (accents, a
supplementary character, empty cells) the node, suppressed records and classes equal ARX
3.9.2's, in one chunk and in five: ARX's STRING order through ../shared/arx/arx
(`--datatype s=string`, recorded in tests/data/arx_answers, run live where ARX is found), the
listed order through benchmarks/arx_ordered/ArxOrderedString.java (the one option the shared
harness lacks; its answers recorded with SKALD_RECORD_ARX=1). The exhaustive reference:
test_criteria_oracle's `t-ordered-text` variant.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from arx_answers import ANSWERS, ARX, RECORD, arx_answer, assert_arx_release
from skald_testdata import write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "benchmarks" / "arx_ordered" / "ArxOrderedString.java"
HIERS = {
    "a": {f"a{i}": ["A" if i < 5 else "B" if i < 8 else "C"] for i in range(11)},
    "b": {f"b{i}": ["x" if i < 2 else "y" if i < 6 else "z"] for i in range(8)},
    "c": {"f": [], "m": []},
}
TEXTS = ["", "Zeta", "alpha", "Alpha", "b\u00e9ta", "beta", "\ufb01n", "\U0001f600", "\u00c9clair"]
TEXTS += ["eclair"]
LISTED = ["\U0001f600", "eclair", "", "Zeta", "\u00c9clair", "beta", "alpha", "\ufb01n", "Alpha"]
LISTED += ["b\u00e9ta"]
QIDS = [x for q in "abc" for x in ("--qid", f"{q}={{table}}/h_{q}.csv")]
COMMON = ["--input", "{table}/data.csv", "--sep", ";", *QIDS, "--k", "2", "--suppression", "0.1"]


def _table(folder: Path) -> None:
    """300 rows; the sensitive text's distribution depends on `a` (classes differ from the
    whole); ARX's hierarchy files (value;levels...;*)."""
    rng = np.random.default_rng(1)
    table = pd.DataFrame(
        {
            q: rng.choice(list(h), 300, p=rng.dirichlet(np.ones(len(h)) * 1.5))
            for q, h in HIERS.items()
        }
    )
    p = rng.dirichlet(np.ones(len(TEXTS)), size=11)
    table["s"] = [TEXTS[rng.choice(len(TEXTS), p=p[int(a[1:])])] for a in table["a"]]
    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / "data.csv", sep=";", index=False)
    for q, h in HIERS.items():
        rows = "".join(";".join([v, *up, "*"]) + "\n" for v, up in h.items())
        (folder / f"h_{q}.csv").write_text(rows)


def _product(folder: Path, t: str, order, chunk_rows: int) -> dict:
    body = {
        "input": {"path": str(folder / "data.csv"), "format": "csv", "delimiter": ";"},
        "output": {"path": str(folder / f"out-{chunk_rows}")},
        "chunk_rows": chunk_rows,
        "sensitive_attributes": ["s"],
        "quasi_identifiers": [
            {"name": q, "type": "categorical", "hierarchy_file": str(folder / f"h_{q}.csv")}
            for q in "abc"
        ],
        "privacy": {
            "k": 2,
            "suppression_limit": 0.1,
            "t_closeness": [{"attribute": "s", "t": t, "distance": "ordered", "order": order}],
        },
        "quality": {"objective": "dm_star_arx"},
    }
    return run(load_config(write_config(folder / f"c-{chunk_rows}.yaml", body)))


@pytest.mark.parametrize("t", ["0.1", "0.15"])
def test_text_order_equals_arx_string(tmp_path, t):
    _table(tmp_path)
    args = [*COMMON, "--tclose", f"s:ordered:{t}", "--datatype", "s=string"]
    args += ["--metric", "dmstar", "--no-own-stats"]
    arx = arx_answer(f"tclose-text-order-generated-t{t}", args, places={"{table}": str(tmp_path)})
    assert arx["data_types"] == {"s": "string"}
    for chunk_rows in (1000, 70):
        manifest = _product(tmp_path, t, "text", chunk_rows)
        assert_arx_release(manifest, arx)
        (model,) = [m for m in manifest["privacy_models"] if m["model"] == "t-closeness"]
        assert model["order"] == "text" and model["max_distance"] <= float(t)


def test_listed_order_equals_arx_ordered_string(tmp_path):
    _table(tmp_path)
    answer = _own_harness_answer("tclose-listed-order-generated-t0.15", tmp_path, "0.15")
    assert answer["arx_data_type"] == "Ordinal"
    for chunk_rows in (1000, 70):
        manifest = _product(tmp_path, "0.15", LISTED, chunk_rows)
        assert manifest["node"] == answer["node"]
        assert manifest["n_suppressed"] == answer["suppressed_records"]
        assert manifest["n_equivalence_classes"] == answer["equivalence_classes"]
        (model,) = [m for m in manifest["privacy_models"] if m["model"] == "t-closeness"]
        assert "order" not in model and len(model["order_sha256"]) == 64  # no values


def _own_harness_answer(name: str, table: Path, t: str) -> dict:
    """The recorded answer of benchmarks/arx_ordered/ArxOrderedString.java; with
    SKALD_RECORD_ARX=1 it is compiled and run against ARX's jars and recorded."""
    path = ANSWERS / f"{name}.json"
    args = [*COMMON, "--sensitive", "s", "--order", "{table}/order.txt", "--t", t]
    if os.environ.get(RECORD) != "1":
        recorded = json.loads(path.read_text())
        assert recorded["args"] == args and recorded["order"] == LISTED, "record again"
        return recorded["answer"]
    (table / "order.txt").write_text("".join(f"{v}\n" for v in LISTED), encoding="utf-8")
    classes = table / "classes"
    jars = f"{ARX.parent / 'lib'}/*"
    subprocess.run(["javac", "-cp", jars, "-d", str(classes), str(HARNESS)], check=True)
    concrete = [a.replace("{table}", str(table)) for a in args]
    java = [shutil.which("java") or "java", "-cp", f"{jars}:{classes}", "ArxOrderedString"]
    done = subprocess.run([*java, *concrete], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    record = {
        "command": shlex.join(["java", "-cp", "../shared/arx/lib/*:CLASSES", "ArxOrderedString"])
        + " "
        + shlex.join(args),
        "placeholders": {"{table}": "the test's generated table", "CLASSES": str(HARNESS)},
        "recorded_by": f"tests/integration/privacy/test_t_order_arx.py ({RECORD}=1)",
        "args": args,
        "order": LISTED,
        "answer": answer,
    }
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return answer
