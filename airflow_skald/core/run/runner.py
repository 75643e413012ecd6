"""One phase runner for every route: `skald run` (serial or `--workers`), `--per-chunk`, and
the Airflow operators (one task per phase, or mapped tasks per chunk group plus a merge).

Each pass is a `Phase` (``phase``): ``partial`` over some chunks, an exact ``merge`` of
partials, and a ``finish`` that turns the merged result into what the next phase reads (as
Dask's reductions are ``chunk`` + ``aggregate``); the three are ``phase_encode``,
``phase_histogram`` and ``phase_generalise``. Partials and results go through a `Store` (the
Airflow run's artifact folder, or memory for a CLI run), so a task that runs one group in a
mapped task instance and a process that runs them all execute the same code. Phase 1's root
choice is persisted (``plan.json``) and read back by the later phases, never re-derived.

Where the passes run is the run's engine (`core.engine`, docs/design.md §2b): each phase asks
it for its pass's result (`Phase.gather`: phase 1's statistics, the root histogram, the written
release and its classes) and finishes it the same way whatever engine ran. The chunk engine
(the default) drives the phases' partials and merges, including the mapped tasks per chunk
group.

The release has one publish step (``publish``): stage, verify, run record, manifest last,
commit. Here: the output's lease a run holds (one process, or the tasks of an Airflow run), and
the phases run one after the other in this process. The CLI and the operators import what they
drive from this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.engine.chunks import chunk_engine
from airflow_skald.core.engine.registry import run_engine
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.store import TARGET
from airflow_skald.core.release.write.commit import discard, prepare_staging, remove_stale_staging
from airflow_skald.core.release.write.lease import (
    Judge,
    Lease,
    check_lease_token,
    output_lease,
    release_run_lease,
)
from airflow_skald.core.release.write.leftovers import clear_leftovers
from airflow_skald.core.release.write.output_target import check_output_target
from airflow_skald.core.run.phase import Phase
from airflow_skald.core.run.phase_encode import ENCODE
from airflow_skald.core.run.phase_generalise import GENERALISE
from airflow_skald.core.run.phase_histogram import HISTOGRAM_PHASE
from airflow_skald.core.run.publish import (
    CONFIG_ARCHIVE,
    already_published,
    archive_config,
    copy_release_records,
    drop_temporaries,
    publish,
)

# what the CLI, the operators and the per-chunk baseline drive (from the modules named above)
__all__ = [
    "CONFIG_ARCHIVE",
    "ENCODE",
    "GENERALISE",
    "HISTOGRAM_PHASE",
    "TARGET",
    "Phase",
    "Run",
    "already_published",
    "archive_config",
    "begin_run",
    "check_lease",
    "check_output_target",
    "check_still_current",
    "claim_output",
    "copy_release_records",
    "drop_temporaries",
    "prepare_staging",
    "publish",
    "release_output",
    "run",
    "run_local",
]


@contextlib.contextmanager
def claim_output(
    run: Run, ttl_s: float, release: str = "never", judge: Judge | None = None
) -> Iterator[Lease]:
    """The output's lease for a run that spans several task processes: taken (or taken over:
    same token) by its tasks, expiring if none renews it, released when the commit is done.
    It names the Airflow run (``run.record.airflow``); `judge` tells whether another run
    holding it is still running (operators: its DAG run's state)."""
    with output_lease(
        run.config.output,
        run.token,
        ttl_s=ttl_s,
        pid=None,
        release=release,
        holder=dict(run.record.airflow) or None,
        judge=judge,
    ) as lease:
        run.lease = lease
        yield lease


def begin_run(
    run: Run, ttl_s: float, judge: Judge | None, chunks_per_group: int, mapped: bool = False
) -> list[dict]:
    """A run of several task processes (Airflow), before phase 1: the output checked, the
    output's lease taken for its later tasks (`claim_output`), the config archived and the chunks
    listed in groups (returned, for mapped tasks: `mapped`, which only an engine with chunk
    groups runs); refused, the run frees the output at once."""
    engine = run_engine(run)  # not registered, or refusing the config: before anything is written
    if mapped and not engine.groups:
        chunk_engine(run)  # refused in one line: mapped tasks per chunk group need chunks
    # the output is not the input, a file or foreign data: checked before the lease or
    # the artifacts create anything (a refusal writes nothing)
    check_output_target(run.config)
    run.check_secrets()  # no secret, one secret for two settings: refused before the lease
    check_still_current(run)  # a cleared stale run: refused before phase 1
    try:
        with claim_output(run, ttl_s, judge=judge):  # for later tasks
            clear_output(run)
            archive_config(run)
            groups = layout(run, chunks_per_group)
            run.check_target(engine.input_columns)
    except BaseException:
        # refused before phase 1 (a release it may not replace, foreign data): free the
        # output now, or the next run (even with overwrite) would wait out `ttl_s`
        if run.lease is not None:
            run.remove_extract()
            run.lease.release()
        raise
    return groups


def run_group(phase: Phase, run: Run, group: int, chunk_ids: Sequence[int]) -> Any:
    """A mapped task instance: one group's partial, stored for the merge (the chunk engine's
    own route; refused in one line for another engine)."""
    return chunk_engine(run).run_group(phase, run, group, chunk_ids)


def run_merge(phase: Phase, run: Run) -> Any:
    """The merge task: every group's stored partial, merged exactly, then finished."""
    return phase.finish(run, chunk_engine(run).run_merge(phase, run))


def run_all(phase: Phase, run: Run, workers: int = 1) -> Any:
    """The whole pass, as the run's engine computes it (`workers`: the chunk engine's
    processes), then finished."""
    return phase.run_on(run_engine(run, workers), run)


def layout(run: Run, chunks_per_group: int = 1) -> list[dict]:
    """Phase 0: what the run reads, listed once by its engine (`Engine.list_input`: the chunk
    engine reads a database input here, once, into the staged chunks the passes read), cut
    into groups for mapped tasks (`Run.layout`)."""
    run.check_secrets()  # no key, one key for both: refused before any read
    run.check_target_early()
    return run.layout(run_engine(run).list_input(run), chunks_per_group)


def clear_output(run: Run) -> None:
    """What killed runs left beside the output (`leftovers.clear_leftovers`), removed or
    completed by this run, which holds the output's lease."""
    table = run.config.output_table
    uri = run.output_uri() if table is not None else None
    clear_leftovers(run.config.output.path, run.token, table, uri)


def check_still_current(run: Run) -> None:
    """Before a task's work: the release at the output is still the one this run found when
    it began, or its own (`check_not_superseded`); a stale retry is refused before it
    generalises a chunk, not at its commit. A no-op before the run recorded what it found
    (`Run.check_target`, its first encode)."""
    if not run.store.exists(TARGET):
        return
    run.check_not_superseded()


def check_lease(run: Run, judge: Judge | None = None) -> None:
    """A mapped writer's fence: no other (running) run may hold the output's lease."""
    check_lease_token(run.config.output.path, run.token, judge)


def release_output(run: Run) -> bool:
    """Free the output's lease if this run holds it: the run failed for good."""
    return release_run_lease(run.config.output.path, run.token)


def run(
    config: SkaldConfig,
    progress: P.Progress | None = None,
    token: str | None = None,
    workers: int = 1,
) -> dict:
    """All three phases in this process; returns the manifest of the committed release."""
    r = Run(config, token=token or "", progress=progress)
    return run_local(r, (ENCODE, HISTOGRAM_PHASE, GENERALISE), workers)


def run_local(run: Run, phases: Sequence[Phase], workers: int = 1) -> Any:
    """Phases one after the other in this process, each asking the run's engine (`workers`:
    the chunk engine's processes), the output's lease held throughout; the last phase writes
    the staged release (discarded if anything fails)."""
    engine = run_engine(run, workers)  # not registered, or refusing the config: before any work
    check_output_target(run.config)  # before listing chunks: output inside input, a file...
    run.check_secrets()  # no secret, one secret for two settings: refused before any work
    with output_lease(run.config.output, run.token) as lease:
        run.lease = lease
        try:
            clear_output(run)
            layout(run)
            run.check_target(engine.input_columns)
            remove_stale_staging(run.config.output.path, holder=run.token)  # of killed CLI runs
            for phase in phases[:-1]:
                phase.run_on(engine, run)
            prepare_staging(run.staging, private=run.config.output_table is not None)
            try:
                return phases[-1].run_on(engine, run)
            except BaseException:
                discard(run.staging)
                raise
        finally:
            run.remove_extract()  # committed or abandoned: the staged input goes
