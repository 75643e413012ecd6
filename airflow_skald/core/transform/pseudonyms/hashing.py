"""Pseudonyms for direct identifiers (docs/design.md §2a): HMAC-SHA-256 under the run's key of the value
in the pseudonyms' own domain (``settings/keyed.py``: the framed label ``PSEUDONYM``, then the
framed value), as 64 lowercase hex digits (one length for every value).

The value hashed is its text: a string's UTF-8 bytes, a number's decimal text (``42`` in a
Parquet int column and ``"42"`` in a CSV get the same pseudonym), other types as pyarrow casts
them to text. The same value under the same key gets the same pseudonym in every chunk, run
and release, so pseudonyms link a person's records; a null stays null (no person to link).
Each distinct value of a chunk is hashed once (the column's dictionary), and the column comes
back dictionary-encoded: one pseudonym per distinct value, one index per row.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.settings import keyed

PSEUDONYM_CHARS = 64  # hex digits of a SHA-256 HMAC
ALGORITHM = f"HMAC-SHA-256 in domain {keyed.PSEUDONYM}, hex"


class Hasher:
    """HMAC-SHA-256 with the key's inner and outer pads and the pseudonyms' domain label hashed
    once (RFC 2104), so each value costs two SHA-256 state copies instead of a new HMAC
    object: the digest of ``keyed.message(PSEUDONYM, value)``."""

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:
            key = hashlib.sha256(key).digest()
        key = key.ljust(64, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in key))
        self._inner.update(keyed.message(keyed.PSEUDONYM))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in key))

    def hex(self, values: list) -> list:
        inner, outer = self._inner, self._outer
        out = []
        for v in values:
            if v is None:
                out.append(None)
                continue
            h = inner.copy()
            h.update(keyed.frame(v))
            o = outer.copy()
            o.update(h.digest())
            out.append(o.hexdigest())
        return out


def _as_bytes(values: pa.Array) -> list:
    """The dictionary's values as the bytes hashed (their text)."""
    typ = values.type
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return values.to_pylist()
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        values = pc.cast(values, pa.string())
    return [None if v is None else v.encode() for v in values.to_pylist()]


def pseudonymise(column: pa.ChunkedArray | pa.Array, hasher: Hasher) -> pa.ChunkedArray:
    """The column's pseudonyms, dictionary-encoded (string values, int32 indices)."""
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    out = []
    for arr in column.chunks:
        encoded = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
        digests = pa.array(hasher.hex(_as_bytes(encoded.dictionary)), pa.string())
        indices = pc.cast(encoded.indices, pa.int32())
        out.append(pa.DictionaryArray.from_arrays(indices, digests))
    return pa.chunked_array(out, pa.dictionary(pa.int32(), pa.string()))
