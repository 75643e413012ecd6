"""What phase 1 checks and learns from each input file's schema, before reading any data.

Every configured column is present (`check_columns`), QIDs are stored with types their kind
can take (`check_types`), passed-through columns have one type in every file
(`check_passed_through`), and the record size of paper eq. 3 comes from the schema alone
(`estimate_bytes_per_record`).
"""

from __future__ import annotations

import pyarrow as pa

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.errors import ConfigError, DataError
from airflow_skald.core.privacy.differential_privacy import passed_through_refusal


def _is_fixed_width(typ: pa.DataType) -> bool:
    """pyarrow has no public is_fixed_width (in 26.x): bit_width raises for variable widths."""
    try:
        return typ.bit_width > 0
    except ValueError:
        return False


def estimate_bytes_per_record(
    schema: pa.Schema | None, config: SkaldConfig, names: list[str]
) -> int:
    """Record size d of paper eq. 3, from the schema alone so it does not depend on chunking."""
    numeric = {q.name for q in config.quasi_identifiers if q.type == "numerical"}
    total = 0
    for name in names:
        typ = schema.field(name).type if schema is not None else None
        if typ is not None and _is_fixed_width(typ) and not pa.types.is_dictionary(typ):
            total += max(1, typ.bit_width // 8)
        elif typ is None and name in numeric:
            total += 8
        else:
            total += 32  # strings and other variable-width values: a typical short text
    return max(total, 1)


def check_columns(config: SkaldConfig, names: list[str], where: str) -> None:
    """Every configured column must exist in the file (`where`: "file F", or a database
    input's table, `ChunkRef.where`)."""
    needed = [
        *config.qid_names,
        *(q.name for q in config.microaggregated),
        *config.direct_identifiers,
        *config.transformed_columns,
        *config.sensitive_attributes,
        *(config.research_subset.input_columns if config.research_subset else ()),
    ]
    for name in needed:
        if name not in names:
            raise DataError(f"column '{name}' is missing from {where}")
    if config.data_independent:  # every released column generalised with its record
        for name in names:
            if name not in needed:
                raise ConfigError(passed_through_refusal(name))


def check_types(config: SkaldConfig, where: str, schema: pa.Schema | None) -> None:
    """A numerical QID must be stored as numbers in every file (Parquet; CSV, no `schema`:
    read as such)."""
    if schema is None:
        return
    for q in config.quasi_identifiers:
        typ = _logical(schema.field(q.name).type)
        number = pa.types.is_integer(typ) or pa.types.is_floating(typ)
        text = pa.types.is_string(typ)
        fits = {
            "numerical": number,
            "date": text or pa.types.is_date(typ) or pa.types.is_timestamp(typ),
            "masked": text or number,
        }.get(q.type, True)
        if not fits:
            raise DataError(
                f"column '{q.name}' in {where} has type {typ}, but it is a {q.type} QID"
            )


def _logical(typ: pa.DataType) -> pa.DataType:
    """A column's type as released: dictionary-encoded and large text and binary as plain."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}.get(typ, typ)


def check_passed_through(
    config: SkaldConfig,
    where: str,
    schema: pa.Schema | None,
    seen: dict[str, tuple[pa.DataType, str]],
) -> None:
    """Columns the release passes through unchanged (neither QIDs nor removed identifiers)
    must have one type in every input file, or the release's parts would disagree."""
    if schema is None:  # CSV: such columns are read as text
        return
    skip = {*config.qid_names, *config.direct_identifiers, *config.transformed_columns}
    for column in schema:
        if column.name in skip:
            continue
        typ = _logical(column.type)
        first = seen.setdefault(column.name, (typ, where))
        if first[0] != typ:
            raise DataError(
                f"column '{column.name}' has type {typ} in {where} but {first[0]} in "
                f"{first[1]}: every input file must give a released column the same type"
            )
