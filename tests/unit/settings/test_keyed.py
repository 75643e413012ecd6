"""Keyed derivations kept apart (ADR 0030): a pseudonym of any value, even one planted to be
another use's message, is never the DP sample's or search's stream key nor the key check value
under the same secret; messages of different parts or domains never coincide; errors about a
secret reference never echo what was given where a name belongs."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings import keyed
from airflow_skald.core.settings.secret import SecretRef
from airflow_skald.core.transform.differential_privacy import keys
from airflow_skald.core.transform.pseudonyms.hashing import Hasher, pseudonymise
from airflow_skald.core.transform.pseudonyms.settings import key_id

SECRET = b"one secret for both settings, 0123456789"
TOKEN = "cli-4242-0badc0de"  # a run's token: predictable (its pid, a short nonce)
PASTED = "supersecretvalue-3f9a1c7e5b2d4086"  # a secret pasted where a name belongs


def _pseudonyms(values: list[bytes]) -> list[str]:
    return pseudonymise(pa.array(values, pa.binary()), Hasher(SECRET)).cast(pa.string()).to_pylist()


def test_a_planted_identifier_never_yields_a_dp_stream_key_or_the_key_check_value(
    monkeypatch,
) -> None:
    """The reproduced attack: the identifier `purpose || 0 || token` had the pseudonym
    HMAC(secret, purpose || 0 || token), whose first 16 bytes were the sample's Philox key."""
    planted = []
    for purpose in (keys.SAMPLE, keys.SEARCH):
        planted += [purpose.encode() + b"\x00" + TOKEN.encode(), purpose.encode() + TOKEN.encode()]
        planted.append(keyed.message(purpose, TOKEN.encode()))
    planted += [b"airflow-skald pseudonym key check value", keyed.message(keyed.PSEUDONYM_KEY_ID)]
    stream_keys = {keys.stream_key(SECRET, TOKEN, p) for p in (keys.SAMPLE, keys.SEARCH)}
    monkeypatch.setenv("SKALD_KEYED_TEST", SECRET.decode())
    check_value = key_id(SecretRef("pseudonym_key", "env", "SKALD_KEYED_TEST"))
    for digest in _pseudonyms(planted):
        assert int.from_bytes(bytes.fromhex(digest)[:16], "little") not in stream_keys
        assert not digest.startswith(check_value)


def test_the_domains_are_distinct_and_versioned() -> None:
    assert len(set(keyed.DOMAINS)) == len(keyed.DOMAINS)
    assert all(d.startswith("airflow-skald/") and d.endswith("/v2") for d in keyed.DOMAINS)
    assert (keys.SAMPLE, keys.SEARCH) == (keyed.DP_SAMPLE, keyed.DP_SEARCH)


parts = st.lists(st.binary(max_size=12), max_size=4)


@given(parts, parts, st.sampled_from(keyed.DOMAINS), st.sampled_from(keyed.DOMAINS))
def test_messages_of_other_parts_or_domains_never_coincide(a, b, da, db) -> None:
    """Length framing: no concatenation of parts collides (`ab` + `c` is not `a` + `bc`)."""
    if (a, da) != (b, db):
        assert keyed.message(da, *a) != keyed.message(db, *b)


def test_the_same_secret_for_both_settings_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigError, match="pseudonym_key and dp_key hold the same secret") as err:
        keyed.check_apart(SECRET, bytes(SECRET))
    assert SECRET.decode() not in str(err.value) and "\n" not in str(err.value)
    keyed.check_apart(SECRET, SECRET + b"!")  # two secrets: fine
    keyed.check_apart(SECRET, None)


@pytest.mark.parametrize("kind", ["env", "file", "connection", "variable"])
def test_errors_name_the_setting_never_what_was_given_as_a_name(
    kind, tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv(PASTED, raising=False)
    monkeypatch.chdir(tmp_path)
    ref = SecretRef.parse({kind: PASTED}, "pseudonym_key", tmp_path)
    with pytest.raises(ConfigError) as err:
        ref.secret()
    assert PASTED not in str(err.value) and f"pseudonym_key.{kind}" in str(err.value)
    assert PASTED not in repr(ref)


def test_a_short_secret_or_an_unknown_source_is_not_echoed(monkeypatch) -> None:
    monkeypatch.setenv("SKALD_KEYED_SHORT", "short-secret")
    with pytest.raises(ConfigError, match="shorter than 16 bytes") as err:
        SecretRef("dp_key", "env", "SKALD_KEYED_SHORT").secret()
    assert "short-secret" not in str(err.value) and "SKALD_KEYED_SHORT" not in str(err.value)
    with pytest.raises(ConfigError, match="dp_key takes one of env, file") as err:
        SecretRef.parse({PASTED: "x"}, "dp_key")
    assert PASTED not in str(err.value)
