"""`skald verify`'s check of pseudonymised columns (docs/design.md §2a): every value of every part is a
pseudonym (64 lowercase hex digits) or empty, never a raw identifier left in place."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.data.io import read_release_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.transform.pseudonyms.hashing import PSEUDONYM_CHARS


def pseudonyms_well_formed(manifest: dict, location: DataLocation, parts: Sequence[str]) -> None:
    """Every pseudonymised column of every part holds 64 lowercase hex digits (or null)."""
    names = manifest.get("pseudonymised") or []
    if not names:
        return
    pattern = f"^([0-9a-f]{{{PSEUDONYM_CHARS}}})?$"  # a null: empty in a CSV
    for part in parts:
        table = read_release_part(location, part, names)
        for name in names:
            column = table.column(name)
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            good = pc.match_substring_regex(column.cast(pa.string()), pattern)
            if not pc.all(good.fill_null(True)).as_py():
                raise VerificationError(
                    f"column '{name}' in part {part.rsplit('/', 1)[-1]} holds a value that is "
                    "not a pseudonym"
                )
