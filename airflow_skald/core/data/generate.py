"""`skald generate`: a synthetic dataset written as chunk files and its skald.yaml.

The paper's medical table (docs/design.md §8: `paper_table`, drawn from `paper_distributions`) or
the clinical table (`clinical`), rows [i*chunk_rows, (i+1)*chunk_rows) per file. A row depends
only on the seed and its global row number (`random_streams`): the same rows come out whatever
``chunk_rows`` is (so "one input cut into different chunks" can be tested directly), a smaller
dataset is a prefix of a larger one, and each chunk is generated and written alone, with memory
bounded by one chunk.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import yaml

from airflow_skald.core.data.clinical import clinical_config_dict, clinical_table
from airflow_skald.core.data.paper_distributions import (
    BLOOD_GROUP_HIERARCHY,
    COLUMNS,
    HEALTH_CONDITION_HIERARCHY,
    HEALTH_CONDITIONS,
    PROFESSION_HIERARCHY,
    pin_code_pool,
)
from airflow_skald.core.data.paper_table import (
    PaperPools,
    chunk_table,
    paper_config_dict,
    write_csv,
)
from airflow_skald.core.errors import DataError

# the paper's dataset as the tests, benchmarks and docs import it (`core.data.generate`)
__all__ = [
    "BLOOD_GROUP_HIERARCHY",
    "COLUMNS",
    "HEALTH_CONDITIONS",
    "HEALTH_CONDITION_HIERARCHY",
    "PROFESSION_HIERARCHY",
    "chunk_table",
    "example_criteria",
    "generate_dataset",
    "paper_config_dict",
    "pin_code_pool",
]
_CHUNK_FILE = re.compile(r"^chunk-\d{5,}\.(parquet|csv)$")


def example_criteria() -> dict[str, list[dict[str, Any]]]:
    """The ``privacy`` keys of an l-diversity criterion on the paper's sensitive attribute
    (docs/design.md §4b), to merge into `paper_config_dict`'s ``privacy`` section; the generated
    skald.yaml carries them as a commented example."""
    return {"l_diversity": [{"attribute": "health_condition", "l": 3, "variant": "distinct"}]}


def _example_comment(config: dict[str, Any]) -> str:
    """The config's privacy section with `example_criteria` added, as YAML comment lines."""
    privacy = {"privacy": {**config["privacy"], **example_criteria()}}
    lines = yaml.safe_dump(privacy, sort_keys=False).splitlines()
    return (
        "\n# Example: k-anonymity and l-diversity on the sensitive attribute together (docs/design.md §4b).\n"
        "# To use it, replace the privacy section above with:\n"
        + "".join(f"# {line}\n" for line in lines)
    )


def _integer(name: str, value: object, minimum: int) -> int:
    """A plain int >= minimum (numpy integers accepted; bools and floats are mistakes)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return int(value)


def generate_dataset(
    rows: int,
    chunk_rows: int,
    seed: int,
    out_dir: str | Path,
    fmt: str = "parquet",
    *,
    overwrite: bool = False,
    schema: str = "paper",
) -> Path:
    """Write ceil(rows/chunk_rows) chunk files out_dir/chunk-00000.parquet (or .csv) and
    out_dir/skald.yaml; return the yaml path.

    Chunk i holds global rows [i*chunk_rows, min(rows, (i+1)*chunk_rows)). Each file is written
    under a temporary name and renamed when complete. An existing out_dir that is not empty is
    refused (DataError, nothing written) unless `overwrite`: then chunk files of an earlier run
    that are not part of this one are removed, so the folder holds exactly this dataset, and
    skald.yaml is replaced (other files stay). `schema` "clinical" writes the clinical table
    (clinical.py) and its config of rule-built hierarchies instead of the paper's.
    """
    if schema not in ("paper", "clinical"):
        raise ValueError(f"schema must be 'paper' or 'clinical', not {schema!r}")
    rows = _integer("rows", rows, 1)
    chunk_rows = _integer("chunk_rows", chunk_rows, 1)
    seed = _integer("seed", seed, 0)
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"fmt must be 'parquet' or 'csv', not {fmt!r}")

    out = Path(out_dir).resolve()
    if not overwrite and out.is_dir() and any(out.iterdir()):
        raise DataError(
            f"output folder {out_dir} exists and is not empty; pass --overwrite to replace "
            "the dataset in it"
        )
    out.mkdir(parents=True, exist_ok=True)
    written = _write_chunks(out, rows, chunk_rows, seed, fmt, schema)
    for stale in out.iterdir():
        if _CHUNK_FILE.match(stale.name) and stale.name not in written:
            stale.unlink()
    return _write_config(out, chunk_rows, fmt, schema)


def _write_chunks(
    out: Path, rows: int, chunk_rows: int, seed: int, fmt: str, schema: str
) -> set[str]:
    """Every chunk file, each written under a temporary name and renamed when complete; the
    names written."""
    tables = PaperPools()
    written: set[str] = set()
    for i in range(-(-rows // chunk_rows)):
        start = i * chunk_rows
        stop = min(rows, start + chunk_rows)
        if schema == "clinical":
            table = clinical_table(seed, start, stop)
        else:
            table = chunk_table(seed, start, stop, tables)
        final = out / f"chunk-{i:05d}.{fmt}"
        tmp = out / f".{final.name}.tmp"
        try:
            if fmt == "parquet":
                pq.write_table(table, tmp)
            elif schema == "clinical":
                pacsv.write_csv(table, tmp)
            else:
                write_csv(table, tmp)
            os.replace(tmp, final)  # readers never see half a file
        finally:
            tmp.unlink(missing_ok=True)
        written.add(final.name)
    return written


def _write_config(out: Path, chunk_rows: int, fmt: str, schema: str) -> Path:
    """out/skald.yaml for the dataset (replaced atomically); its path."""
    make_config = clinical_config_dict if schema == "clinical" else paper_config_dict
    config = make_config(".", f"../{out.name}-anonymised", chunk_rows, fmt)
    yaml_path = out / "skald.yaml"
    tmp = out / ".skald.yaml.tmp"
    text = yaml.safe_dump(config, sort_keys=False)
    if schema == "paper":
        text += _example_comment(config)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, yaml_path)
    return yaml_path
