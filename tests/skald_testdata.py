"""Shared test helpers: small datasets written as chunk files, configs, and the Adult data."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from adult_files import ADULT, adult_csv

#: Adult in the repository: ARX's hierarchies in ADULT, the table decompressed once at ADULT_CSV
ADULT_CSV = adult_csv()
ADULT_QIDS = [
    "age",
    "education",
    "marital-status",
    "native-country",
    "occupation",
    "race",
    "sex",
    "workclass",
]


def write_chunks(df: pd.DataFrame, folder: Path, sizes: list[int], fmt: str = "parquet") -> Path:
    """Write df as consecutive files of the given row counts (the last takes the rest)."""
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for i, size in enumerate(sizes + [len(df)]):
        part = df.iloc[start : start + size] if i < len(sizes) else df.iloc[start:]
        if len(part) == 0 and i == len(sizes):
            break
        path = folder / f"chunk-{i:05d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(pa.Table.from_pandas(part, preserve_index=False), path)
        else:
            part.to_csv(path, index=False)
        start += len(part)
    return folder


def write_config(path: Path, body: dict) -> Path:
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def adult_qid_config(names: list[str] = ADULT_QIDS) -> list[dict]:
    return [
        {
            "name": n,
            "type": "categorical",
            "hierarchy_file": str(ADULT / f"adult_hierarchy_{n}.csv"),
        }
        for n in names
    ]


def adult_config(
    output: Path,
    *,
    k: int,
    suppression_limit: float,
    qids: Sequence[str] = ADULT_QIDS,
    sensitive: Sequence[str] = ("salary-class",),
    fmt: str = "parquet",
    chunk_rows: int | None = 8000,
    **sections: Any,
) -> dict:
    """A config body over the Adult dataset: adult.csv as it is, `qids` with their hierarchy
    files, `sensitive` (salary-class; empty: none), k-anonymity with `suppression_limit`, the
    release at `output` in `fmt`, `chunk_rows` (None: the default). `sections` adds top-level
    sections (memory, quality, ...); a `privacy` section adds its criteria to k's."""
    body: dict[str, Any] = {
        "input": {"path": str(ADULT_CSV), "format": "csv", "delimiter": ";"},
        "output": {"path": str(output), "format": fmt},
    }
    if chunk_rows is not None:
        body["chunk_rows"] = chunk_rows
    if sensitive:
        body["sensitive_attributes"] = list(sensitive)
    body["quasi_identifiers"] = adult_qid_config(list(qids))
    criteria = sections.pop("privacy", {})
    body["privacy"] = {"k": k, "suppression_limit": suppression_limit, **criteria}
    return {**body, **sections}


def adult_oracle_qids(names: list[str] = ADULT_QIDS) -> list[dict]:
    """The same hierarchies as oracle dicts (value -> labels), read independently."""
    out = []
    for n in names:
        rows = [
            r.split(";") for r in (ADULT / f"adult_hierarchy_{n}.csv").read_text().splitlines() if r
        ]
        out.append({"name": n, "type": "categorical", "hierarchy": {r[0]: r[1:] for r in rows}})
    return out


def read_release(folder: Path) -> pd.DataFrame:
    parts = sorted(folder.glob("part-*"))
    if parts and parts[0].suffix == ".csv":
        return pd.concat(
            [pd.read_csv(p, dtype=str, keep_default_na=False) for p in parts], ignore_index=True
        )
    return pd.concat([pq.read_table(p).to_pandas() for p in parts], ignore_index=True)


def search_inputs(config):
    """Phases 1 and 2 in this process, as `skald run` makes them: the plan (at the node the
    counts ended at), the root counts and the privacy policy the search judges under."""
    from airflow_skald.core.config.policy import build_policy
    from airflow_skald.core.encode.root import plan_root
    from airflow_skald.core.passes import pipeline

    chunks = pipeline.list_chunks(config)
    plan = plan_root(config, pipeline.scan_domain(config, chunks))
    counts = pipeline.count_histogram(config, plan, chunks)
    if counts.node is not None:
        plan = plan.with_root(counts.node)
    return plan, counts, build_policy(config, plan.stats.sensitive, plan.stats.n_rows)
