"""`Written`: phase 3's result, whatever engine wrote the release (docs/design.md §2b): the
release's files written into the staging folder, and their classes as read back from them."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.utility.collect import UtilityPartial


@dataclass
class Written:
    """Phase 3's result: the release's files written into the staging folder, and their
    classes as read back from them (what the release check judges)."""

    names: list[str]  # the parts, by file name in `run.staging`, one per chunk of list_input
    classes: ReleaseClasses
    utility: UtilityPartial | None = None  # the utility analysis's share (docs/design.md §5)
    in_sample: int | None = None  # a DP run: released rows checked against its keyed sample
    #: a table release the engine wrote itself (its new table, `release_table.new_table_name`):
    #: its columns; `names` then stage nothing and `classes` are the engine's GROUP BY of it
    table_columns: list[str] | None = None
