"""No personal data in logs, stdout, manifests, reports or error messages (issue 6, item 4).

A canary record with unique values (direct identifiers, an extreme age and zip that get its
class suppressed, a unique sensitive value) is planted in the input. Every log line, the
command's output, every file the run writes, and the error messages of failing runs are
searched for its raw values. The only raw values a release may hold are the sensitive
attribute (kept by design) and generalised QIDs; an error may quote a categorical label
missing from its hierarchy, never an identifier, a numerical value or a row.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from helpers_data import (
    CANARY,
    CANARY_RAW,
    canary_table,
    config_dict,
    make_table,
    run_inprocess,
    run_subprocess,
    write_config,
    write_dataset,
    write_table,
)

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import SkaldInputError
from airflow_skald.core.passes import pipeline
from airflow_skald.core.run import runner

_NUMBERS = [v for v in CANARY_RAW if v.isdigit()]
_TEXTS = [v for v in CANARY_RAW if not v.isdigit()]


def leaks(text: str, allow: tuple[str, ...] = ()) -> list[str]:
    """The canary's raw values found in `text` (numbers only as whole numbers)."""
    found = [v for v in _TEXTS if v in text and v not in allow]
    for v in _NUMBERS:
        if re.search(rf"(?<![\w.]){v}(?!\w)", text):  # not inside a number or a hash
            found.append(v)
    return found


def _table_text(path: Path) -> str:
    """A part's rows and, for Parquet, every text column's stored dictionary: a value listed
    there is released even if no row uses it."""
    if path.suffix != ".parquet":
        return json.dumps(pacsv.read_csv(path).to_pylist(), default=str)
    schema = pq.read_schema(path)
    text = [f.name for f in schema if pa.types.is_string(f.type)]
    table = pq.read_table(path, read_dictionary=text)
    stored = [
        table.column(c).chunk(i).dictionary.to_pylist()
        for c in text
        for i in range(table.column(c).num_chunks)
    ]
    return json.dumps([table.to_pylist(), stored], default=str)


def _written_files_text(root: Path, skip: Path) -> dict[str, str]:
    """Every file under `root` except the input folder, as text (tables decoded)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or skip in p.parents:
            continue
        if p.suffix in (".parquet", ".csv") and p.name.startswith("part-"):
            out[str(p)] = _table_text(p)
        else:
            out[str(p)] = p.read_bytes().decode("utf-8", errors="replace")
    return out


@pytest.fixture
def canary_run(tmp_path: Path) -> dict:
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=3, rows=40, canary_in=1)
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out))
    return {"tmp": tmp_path, "input": inp, "output": out, "config": config}


def _assert_release_clean(run: dict) -> None:
    out = run["output"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_suppressed"] >= 1
    rows = [r for p in sorted(out.glob("part-*")) for r in pq.read_table(p).to_pylist()]
    assert not {"pid", "name", "address"} & set(rows[0])
    canary_rows = [r for r in rows if r["disease"] == CANARY["disease"]]
    assert canary_rows == [{"city": "*", "age": "*", "zip": "*", "disease": CANARY["disease"]}], (
        "the canary must be suppressed (masked)"
    )
    # Nothing but the sensitive attribute (kept by design) may carry a canary value.
    for path, text in _written_files_text(run["tmp"], skip=run["input"]).items():
        if path.endswith("skald.yaml"):
            continue
        assert leaks(text, allow=(CANARY["disease"],)) == [], path
        if not Path(path).name.startswith("part-"):
            assert leaks(text) == [], path


def test_cli_process_logs_and_outputs_hold_no_canary(canary_run: dict) -> None:
    proc = run_subprocess(["run", str(canary_run["config"])])  # logging at INFO
    assert proc.returncode == 0, proc.stderr
    assert "INFO" in proc.stderr, "expected progress logging on stderr"
    assert leaks(proc.stdout) == []
    assert leaks(proc.stderr) == []
    _assert_release_clean(canary_run)
    verify = run_subprocess(["verify", str(canary_run["output"]), "--k", "3"])
    assert verify.returncode == 0, verify.stderr
    assert leaks(verify.stdout + verify.stderr) == []


def test_in_process_log_records_hold_no_canary(
    canary_run: dict, caplog, capsys, monkeypatch
) -> None:
    caplog.set_level(logging.DEBUG)
    code, stdout, err = run_inprocess(["run", str(canary_run["config"])], capsys)
    assert code == 0, err
    assert caplog.records, "expected log records"
    for record in caplog.records:
        text = record.getMessage() + " " + repr(record.args)
        assert leaks(text) == [], text
    assert leaks(stdout + err) == []
    _assert_release_clean(canary_run)


def _fail(tmp_path: Path, table_for_file1: pa.Table, fmt: str, capsys, **cfg) -> str:
    inp, out = tmp_path / "in", tmp_path / "out"
    files = write_dataset(inp, n_files=2, rows=30, fmt=fmt)
    write_table(table_for_file1, files[1], fmt)
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out, fmt=fmt, **cfg))
    code, stdout, err = run_inprocess(["run", str(config)], capsys)
    assert code == 2, err
    assert err.startswith("skald: error:") and "Traceback" not in err
    return stdout + err


def _with_canary(canary: dict | None = None) -> pa.Table:
    table = pa.concat_tables([make_table(20, seed=5, start=500), canary_table()])
    if canary:
        for col, value in canary.items():
            values = table.column(col).to_pylist()
            values[-1] = value
            typ = table.schema.field(col).type if value is not None else None
            arr = pa.array(values, typ) if typ is not None else pa.array(values)
            table = table.set_column(table.schema.get_field_index(col), col, arr)
    return table


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_unknown_categorical_error_quotes_only_the_label(tmp_path: Path, capsys, fmt) -> None:
    label = "Atlantis-Canary-City"
    msg = _fail(tmp_path, _with_canary({"city": label}), fmt, capsys)
    assert f"'{label}'" in msg and "row 21" in msg  # the one raw value an error may quote
    assert leaks(msg) == []


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_null_qid_error_names_row_not_record(tmp_path: Path, capsys, fmt) -> None:
    msg = _fail(tmp_path, _with_canary({"zip": None}), fmt, capsys)
    assert "column 'zip'" in msg and "row 21" in msg
    assert leaks(msg) == []


def test_text_in_numerical_csv_error_does_not_quote_value(tmp_path: Path, capsys) -> None:
    table = _with_canary()
    table = table.set_column(
        table.schema.get_field_index("age"),
        "age",
        pa.array([str(x) for x in table.column("age").to_pylist()[:-1]] + [CANARY["name"]]),
    )
    msg = _fail(tmp_path, table, "csv", capsys)
    assert "column 'age'" in msg and "row 21" in msg and "not a number" in msg
    assert leaks(msg) == []


def test_text_in_numerical_parquet_error_does_not_quote_value(tmp_path: Path, capsys) -> None:
    table = _with_canary()
    ages = [str(x) for x in table.column("age").to_pylist()]
    table = table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))
    msg = _fail(tmp_path, table, "parquet", capsys)
    assert "column 'age'" in msg
    assert leaks(msg) == []


def test_ragged_canary_row_error_does_not_quote_row(tmp_path: Path, capsys) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    files = write_dataset(inp, n_files=2, rows=30, fmt="csv", canary_in=1)
    lines = files[1].read_text().splitlines()
    lines[-1] += ",one-cell-too-many"
    files[1].write_text("\n".join(lines) + "\n")
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out, fmt="csv"))
    code, stdout, err = run_inprocess(["run", str(config)], capsys)
    assert code == 2
    assert "ragged row 31" in err
    assert leaks(stdout + err) == [] and "one-cell-too-many" not in err


def test_infinite_value_error_does_not_quote_value(tmp_path: Path, capsys) -> None:
    table = _with_canary()
    ages = [float(x) for x in table.column("age").to_pylist()[:-1]] + [float("inf")]
    table = table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))
    msg = _fail(tmp_path, table, "parquet", capsys)
    assert "column 'age'" in msg and "inf" in msg
    assert leaks(msg) == []


def test_input_changed_between_passes_error_does_not_quote_value(tmp_path: Path) -> None:
    """Phase 2 meets a value phase 1 never saw (the file was rewritten): no value quoted."""
    inp, out = tmp_path / "in", tmp_path / "out"
    files = write_dataset(inp, n_files=2, rows=30)
    config = config_from_dict(config_dict(inp, out))
    chunks = pipeline.list_chunks(config)
    plan = pipeline.plan_root(config, pipeline.scan_domain(config, chunks))
    table = make_table(30, seed=1, start=30)
    ages = table.column("age").to_pylist()
    ages[7] = CANARY["age"]
    table = table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))
    write_table(table, files[1])
    with pytest.raises(SkaldInputError) as info:
        pipeline.count_histogram(config, plan, chunks)
    msg = str(info.value)
    assert "column 'age'" in msg and "row 8" in msg
    assert leaks(msg) == []


def test_manifest_holds_no_data_values(canary_run: dict, monkeypatch) -> None:
    """The manifest's strings are names, hashes, paths and versions: no canary, no labels."""
    manifest = runner.run(config_from_dict(config_dict(canary_run["input"], canary_run["output"])))
    text = json.dumps(manifest)
    assert leaks(text) == []
    for city in ("Oslo", "Bergen", "Lund", "Malmo", "Norway", "Sweden"):
        assert city not in text


def test_outlier_value_not_released_at_top_level(tmp_path: Path, capsys) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=1, rows=40, canary_in=0)
    cfg = config_dict(inp, out, k=40)  # k large: every QID goes up to its top level
    config = write_config(tmp_path / "skald.yaml", cfg)
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 0, err
    for p in out.glob("part-*"):
        assert leaks(_table_text(p), allow=(CANARY["disease"],)) == []


def test_dropped_record_leaves_nothing_in_parts(canary_run: dict, monkeypatch) -> None:
    """With suppressed records dropped, not even the canary's sensitive value may remain: text
    columns are written dictionary-encoded, and a dictionary must list only kept rows' values."""
    cfg = config_dict(canary_run["input"], canary_run["output"])
    cfg["suppressed_records"] = "drop"
    manifest = runner.run(config_from_dict(cfg))
    assert manifest["n_suppressed"] >= 1
    parts = sorted(canary_run["output"].glob("part-*"))
    assert parts
    for p in parts:
        assert leaks(_table_text(p)) == [], p
