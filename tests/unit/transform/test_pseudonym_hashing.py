"""Pseudonyms (docs/design.md §2a): HMAC-SHA-256 of the value's text in the pseudonyms' own domain under
the key, 64 hex digits, checked against the standard library's hmac over the framed message
written out here (ADR 0030); the config's refusal without a key."""

from __future__ import annotations

import hashlib
import hmac

import pyarrow as pa
import pytest

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.secret import SecretRef
from airflow_skald.core.transform.pseudonyms import Pseudonyms
from airflow_skald.core.transform.pseudonyms.hashing import Hasher, pseudonymise

KEY = b"0123456789abcdef-test-key"


def reference(value: str, key: bytes = KEY) -> str:
    """The label, then the value, each after its length as 8 bytes big-endian."""
    label, data = b"airflow-skald/pseudonym/v2", value.encode()
    message = len(label).to_bytes(8, "big") + label + len(data).to_bytes(8, "big") + data
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def test_pseudonyms_are_the_domain_hmac_of_the_value_text() -> None:
    ids = pa.chunked_array([pa.array(["P1", "P2", None, "P1"]), pa.array(["P3", "P2"])])
    out = pseudonymise(ids, Hasher(KEY))
    assert pa.types.is_dictionary(out.type)
    got = out.cast(pa.string()).to_pylist()
    assert got == [reference("P1"), reference("P2"), None, reference("P1")] + [
        reference("P3"),
        reference("P2"),
    ]
    assert {len(v) for v in got if v} == {64}


def test_numbers_hash_as_their_decimal_text_and_long_keys_as_hmac_does() -> None:
    long_key = bytes(range(100))  # longer than SHA-256's block: hashed first (RFC 2104)
    out = pseudonymise(pa.array([42, 7, 42], pa.int64()), Hasher(long_key))
    assert out.cast(pa.string()).to_pylist() == [
        reference("42", long_key),
        reference("7", long_key),
        reference("42", long_key),
    ]


def test_dictionary_columns_hash_each_distinct_value_once() -> None:
    arr = pa.array(["a", "b", "a", "a"]).dictionary_encode()
    out = pseudonymise(arr, Hasher(KEY))
    assert len(out.chunk(0).dictionary) == 2
    assert out.cast(pa.string()).to_pylist() == [reference(v) for v in "abaa"]


def _config(tmp_path, **extra) -> dict:
    return {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "direct_identifiers": [{"pid": "pseudonymise"}, "name"],
        "quasi_identifiers": [{"name": "age", "type": "numerical"}],
        "privacy": {"k": 2},
        **extra,
    }


def test_config_without_a_key_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="'pid' is pseudonymised but the config has no"):
        config_from_dict(_config(tmp_path))


def test_key_from_env_and_file(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SKALD_TEST_KEY", KEY.decode())
    config = config_from_dict(_config(tmp_path, pseudonym_key={"env": "SKALD_TEST_KEY"}))
    assert config.direct_identifiers == ("name",)
    assert config.transformation(Pseudonyms).names == ("pid",)
    assert config.transformation(Pseudonyms).key.secret() == KEY
    settings = config.settings()
    assert settings["pseudonymised"] == ["pid"]
    assert KEY.decode() not in repr(config) + str(settings)
    (tmp_path / "key").write_bytes(KEY + b"\n")
    by_file = config_from_dict(_config(tmp_path, pseudonym_key={"file": "key"}), tmp_path)
    assert by_file.transformation(Pseudonyms).key.secret() == KEY
    assert by_file.settings()["pseudonym_key_id"] == settings["pseudonym_key_id"]


def test_missing_short_or_airflow_only_keys_are_one_line_errors(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SKALD_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="pseudonym_key.env: the environment variable it") as err:
        SecretRef("pseudonym_key", "env", "SKALD_TEST_KEY").secret()
    assert "SKALD_TEST_KEY" not in str(err.value)  # the name given is not echoed
    monkeypatch.setenv("SKALD_TEST_KEY", "short")
    with pytest.raises(ConfigError, match="shorter than 16 bytes") as err:
        SecretRef("pseudonym_key", "env", "SKALD_TEST_KEY").secret()
    assert "short'" not in str(err.value)
    with pytest.raises(ConfigError, match="read by the Airflow operators"):
        SecretRef("pseudonym_key", "variable", "skald_key").secret()
    with pytest.raises(ConfigError, match="may be 'pseudonymise' or 'drop'"):
        config_from_dict(_config(tmp_path, direct_identifiers=[{"pid": "hash"}]))
