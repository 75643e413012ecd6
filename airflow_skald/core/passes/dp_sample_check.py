"""A differentially private run's own last check (docs/design.md §4e, ADR 0027): every released row is a
record its keyed sample kept. Only the run can check this: it holds the secret the sample is
drawn from (`skald verify` cannot, and says so).

Each written part is read back and compared, row by row and in order, with its input chunk's
sampled records generalised to the node again (mask mode: every sampled record, those of
suppressed classes all-'*'; drop mode: those of kept classes): a row the sample left out, a
missing row or a row out of place fails the run before anything is published (what the
manifest says of it: `transform.differential_privacy.sample_check`)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import ChunkRef, map_ahead, read_chunk
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.data.part_files import read_release_part
from airflow_skald.core.encode.domain import csv_types
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.generalise.part import generalise_table
from airflow_skald.core.release.write.commit import part_name
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.differential_privacy.sampler import RowSample


def _text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return pc.cast(column, pa.string())


def check_in_sample(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    chunks: Sequence[ChunkRef],
    staging: str,
    sample: RowSample,
) -> int:
    """The released rows of `chunks`' parts checked against the keyed sample (VerificationError
    naming the part and row if one is not a sampled record generalised); returns their number."""
    qids = list(config.qid_names)
    location = DataLocation(staging, config.output.format, config.output.delimiter)

    def check(chunk: ChunkRef) -> int:
        table = read_chunk(config.input, chunk, qids, csv_types(config), text_as_dictionary=True)
        table = table.filter(pa.array(sample.keeps(chunk, table.num_rows)))
        expected = generalise_table(config, plan, decision, table, chunk, (), None)
        name = part_name(chunk.chunk_id, config.output.format)
        written = read_release_part(location, staging.rstrip("/") + "/" + name, qids)
        if written.num_rows != expected.num_rows:
            raise VerificationError(
                f"part {name} holds {written.num_rows} rows, but its chunk's keyed sample "
                f"releases {expected.num_rows}: the release is not the sampled records"
            )
        for q in qids:
            same = pc.equal(_text(written.column(q)), _text(expected.column(q)))
            if not pc.all(same).as_py() and written.num_rows:
                row = pc.index(same, False).as_py()
                raise VerificationError(
                    f"part {name} row {row}: column '{q}' is not the keyed sample's record "
                    "generalised to the node: the release is not the sampled records"
                )
        return written.num_rows

    return sum(n for _, n in map_ahead(check, chunks))
