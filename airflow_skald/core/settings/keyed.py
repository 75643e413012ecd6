"""Every keyed derivation of a run's secrets, each in a domain of its own (docs/design.md §2a, §4e;
ADR 0030).

A secret keys HMAC-SHA-256 over a message that starts with its use's domain label, and every
part of the message (the label included) is framed by its length (8 bytes, big-endian), so
the messages of two uses never coincide, nor do two different part lists of one use: a
pseudonym of any value can never equal the DP sample's key, a DP search stream or the key
check value, whatever the value. The labels (one per use, versioned: a change of the
derivation changes its label):

- ``PSEUDONYM``: a direct identifier's pseudonym, ``HMAC(pseudonym_key, [PSEUDONYM, value])``;
- ``PSEUDONYM_KEY_ID``: the pseudonym key's check value in the manifest, ``HMAC(pseudonym_key,
  [PSEUDONYM_KEY_ID])``;
- ``DP_SAMPLE`` / ``DP_SEARCH``: the Philox keys of a DP run's sample and search streams,
  ``HMAC(dp_key, [DP_SAMPLE or DP_SEARCH, run token])``.

Domains keep the derivations of one secret apart; the run refuses the same secret for
``pseudonym_key`` and ``dp_key`` too (`check_apart`), so a leak of one use never weakens the
other.
"""

from __future__ import annotations

import hashlib
import hmac

from airflow_skald.core.errors import ConfigError

PSEUDONYM = "airflow-skald/pseudonym/v2"
PSEUDONYM_KEY_ID = "airflow-skald/pseudonym-key-id/v2"
DP_SAMPLE = "airflow-skald/dp/sample/v2"
DP_SEARCH = "airflow-skald/dp/search/v2"
DOMAINS = (PSEUDONYM, PSEUDONYM_KEY_ID, DP_SAMPLE, DP_SEARCH)
LENGTH_BYTES = 8

SAME_SECRET = (
    "pseudonym_key and dp_key hold the same secret: give each its own (e.g. `openssl rand "
    "-hex 32` twice), one key must not serve both pseudonyms and the DP sample"
)


def frame(part: bytes) -> bytes:
    """One part of a message: its length (8 bytes, big-endian), then its bytes."""
    return len(part).to_bytes(LENGTH_BYTES, "big") + part


def message(domain: str, *parts: bytes) -> bytes:
    """The message one use keys: its domain label, then each part, every one framed."""
    return b"".join(frame(p) for p in (domain.encode(), *parts))


def derive(secret: bytes, domain: str, *parts: bytes) -> bytes:
    """HMAC-SHA-256 of the use's message under the secret (32 bytes)."""
    return hmac.new(secret, message(domain, *parts), hashlib.sha256).digest()


def check_apart(pseudonym_secret: bytes | None, dp_secret: bytes | None) -> None:
    """ConfigError (one line, naming the settings only) when both settings hold one secret."""
    if pseudonym_secret is None or dp_secret is None:
        return
    if hmac.compare_digest(pseudonym_secret, dp_secret):
        raise ConfigError(SAME_SECRET)
