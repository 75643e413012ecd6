"""`io.cut_chunks`: the chunk path's chunks of the same rows, whoever listed them (the input
fingerprint hashes them, ADR 0053's amendment)."""

from __future__ import annotations

from airflow_skald.core.data.io import ChunkRef, cut_chunks


def test_files_are_cut_as_the_chunk_path_cuts_them():
    whole = [ChunkRef(0, "a.parquet", 0, 300, "v1"), ChunkRef(1, "b.parquet", 0, 0, "v2")]
    whole.append(ChunkRef(2, "c.parquet", 0, 151, "v3"))
    cut = cut_chunks(whole, 150)
    assert [(c.chunk_id, c.file, c.row_start, c.n_rows) for c in cut] == [
        (0, "a.parquet", 0, 150),
        (1, "a.parquet", 150, 150),
        (2, "c.parquet", 0, 150),
        (3, "c.parquet", 150, 1),
    ]
    assert {c.version for c in cut} == {"v1", "v3"}  # each its file's; the empty file has none


def test_chunks_the_chunk_path_listed_are_kept_as_they_are():
    staged = [ChunkRef(0, "s-0.parquet", 0, 150, "x", "table t", 0)]
    staged.append(ChunkRef(1, "s-1.parquet", 0, 40, "y", "table t", 150))
    assert cut_chunks(staged, 150) == staged
    assert cut_chunks(cut_chunks(staged, 100), 100) == cut_chunks(staged, 100)
    assert cut_chunks(staged, 100)[1].origin_row == 100  # a message names the table's row
