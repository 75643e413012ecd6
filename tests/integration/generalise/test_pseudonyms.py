"""Pseudonymised direct identifiers end to end (docs/design.md §2a): a release's pseudonym column is
the HMAC-SHA-256 of each row's identifier (recomputed here with the standard library), one
pseudonym per person whatever the chunking, the key and raw identifiers in no written file,
the report's sentence on linking, `skald verify` catching a column that is not pseudonyms."""

from __future__ import annotations

import hashlib
import hmac
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_data import config_dict, make_table, release_rows, write_dataset

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError, VerificationError
from airflow_skald.core.release.check.verify import verify_release
from airflow_skald.core.run import runner

KEY = "k3y-for-tests-0123456789"


def _run(tmp_path, out: str, chunk_rows: int, monkeypatch, fmt: str = "parquet") -> dict:
    monkeypatch.setenv("SKALD_TEST_PSEUDONYM_KEY", KEY)
    cfg = config_dict(tmp_path / "in", tmp_path / out, fmt=fmt, chunk_rows=chunk_rows)
    cfg["direct_identifiers"] = [{"pid": "pseudonymise"}, "name", "address"]
    cfg["pseudonym_key"] = {"env": "SKALD_TEST_PSEUDONYM_KEY"}
    return runner.run(config_from_dict(cfg))


def _pseudonym(value: str) -> str:
    """HMAC-SHA-256 of the framed domain label and value (ADR 0030), by the standard library."""
    label, data = b"airflow-skald/pseudonym/v2", value.encode()
    message = len(label).to_bytes(8, "big") + label + len(data).to_bytes(8, "big") + data
    return hmac.new(KEY.encode(), message, hashlib.sha256).hexdigest()


def _input_pids(n_files: int = 3, rows: int = 40) -> list[str]:
    return [p for i in range(n_files) for p in make_table(rows, i, i * rows)["pid"].to_pylist()]


def test_pseudonyms_are_keyed_hmacs_one_per_person_whatever_the_chunks(
    tmp_path, monkeypatch
) -> None:
    write_dataset(tmp_path / "in")
    manifest = _run(tmp_path, "a", 1000, monkeypatch)
    _run(tmp_path, "b", 17, monkeypatch)
    pids = _input_pids()
    expected = [_pseudonym(p) for p in pids]
    rows_a, rows_b = release_rows(tmp_path / "a"), release_rows(tmp_path / "b")
    assert [r["pid"] for r in rows_a] == expected  # rows in input order (suppressed: masked)
    assert [r["pid"] for r in rows_b] == expected  # chunking changes nothing
    assert len(set(expected)) == len(set(pids))  # one-to-one
    assert "name" not in rows_a[0] and "address" not in rows_a[0]
    assert manifest["pseudonymised"] == ["pid"]
    assert manifest["direct_identifiers_removed"] == ["name", "address"]
    report = (tmp_path / "a" / "report.html").read_text()
    assert "across releases made with the same key" in report
    for path in (tmp_path / "a").rglob("*"):  # neither the key nor a raw identifier
        data = path.read_bytes()
        if path.suffix == ".parquet":  # stored dictionaries decoded too
            data += json.dumps(pq.read_table(path).to_pylist()).encode()
        assert KEY.encode() not in data, path.name
        assert not [p for p in pids if p.encode() in data], path.name


def test_verify_refuses_a_pseudonym_column_holding_other_values(tmp_path, monkeypatch) -> None:
    write_dataset(tmp_path / "in", n_files=1)
    _run(tmp_path, "out", 1000, monkeypatch, fmt="parquet")
    part = tmp_path / "out" / "part-00000.parquet"
    table = pq.read_table(part)
    raw = pa.array(make_table(40, 0)["pid"].to_pylist())
    pq.write_table(table.set_column(table.schema.get_field_index("pid"), "pid", raw), part)
    with pytest.raises(VerificationError, match="column 'pid' in part part-00000.parquet"):
        verify_release(str(tmp_path / "out"))


def test_a_run_without_the_key_is_refused_before_any_pass(tmp_path, monkeypatch) -> None:
    write_dataset(tmp_path / "in", n_files=1)
    monkeypatch.delenv("SKALD_TEST_PSEUDONYM_KEY", raising=False)
    cfg = config_dict(tmp_path / "in", tmp_path / "out")
    cfg["direct_identifiers"] = [{"pid": "pseudonymise"}]
    cfg["pseudonym_key"] = {"env": "SKALD_TEST_PSEUDONYM_KEY"}
    with pytest.raises(ConfigError, match="pseudonym_key.env: the environment variable it names"):
        runner.run(config_from_dict(cfg))
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "out").exists()
