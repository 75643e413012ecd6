"""The release's one publish step (`publish`): verify the staged release, write the report, the
run record and the config files, the manifest last, and commit. Also what a run keeps of its
release: the config files in its artifacts (before phase 1) and the committed release's records
(after), the run record's timings in phase order, and `already_published` for a cleared task."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import filesystem
from airflow_skald.core.passes import pipeline as P
from airflow_skald.core.passes.state import Run
from airflow_skald.core.passes.store import TIMINGS
from airflow_skald.core.release.table_release import publish_table
from airflow_skald.core.release.write.commit import (
    commit,
    discard,
    set_staging_private,
    write_bytes_atomic,
)
from airflow_skald.core.release.write.manifest import (
    CONFIG_YAML,
    EFFECTIVE_JSON,
    MANIFEST_JSON,
    REPORT_HTML,
    RUN_JSON,
    effective_json_bytes,
    input_fingerprint,
    now_iso,
    to_json_bytes,
)

log = logging.getLogger("airflow_skald")


def publish(run: Run, verify: Callable[[], dict], written: bool = False) -> dict:
    """The one publish step: verify the staged release (returns its manifest), write the
    report and the run record, the manifest last, and move the release into place.
    `written`: a table release the engine wrote itself (`table_release.publish_table`)."""
    t0 = time.perf_counter()
    committing = False
    try:
        # the run holds the output's lease: no other run commits between this check and ours
        run.check_not_superseded()
        manifest = verify()
        record = run.record
        record.timings_s["verify"] = time.perf_counter() - t0
        record.peak_rss_bytes = P.peak_rss_bytes()
        record.peak_rss_bytes_by_phase.setdefault("verify", record.peak_rss_bytes)
        record.finished_at = now_iso()
        from airflow_skald.core.release.report import write_report

        staged = run.staging.rstrip("/") + "/"
        write_report(manifest, run.staging, run=record.to_dict())
        write_bytes_atomic(staged + RUN_JSON, to_json_bytes(record.to_dict()))
        for name, data in config_files(run.config).items():  # "from which config?"
            write_bytes_atomic(staged + name, data)
        write_bytes_atomic(staged + MANIFEST_JSON, to_json_bytes(manifest))
        if run.config.output_table is not None:  # the rows: into a new table, swapped in
            check = run.lease.check if run.lease is not None else None
            args = (run.staging, manifest, to_json_bytes(manifest), run.predecessor(), check)
            out = run.config.output.path
            target, uri = run.config.output_table, run.output_uri()
            publish_table(target, uri, *args, output=out, written=written)
            set_staging_private(run.staging, False)  # the rows went: the records stay
        committing = True
        commit(run.staging, run.config.output.path, lease=run.lease)
    except BaseException:
        # A commit that failed part-way keeps the verified staging folder: the retry of this
        # run's task completes it (a mapped run's parts exist nowhere else); the CLI's run_local
        # discards it anyway.
        if not committing:
            discard(run.staging)
        raise
    log.info("release committed at %s", run.config.output.path)
    return manifest


def already_published(run: Run, own: bool = False) -> dict | None:
    """The manifest at the output if this run (same config, input and node) committed it:
    a cleared merge task re-publishes instead of failing. `own`: only a release this very run
    made (its token; a table release: the one its table holds), e.g. a task cleared after a
    database input's staged chunks were deleted at the commit."""
    if own and run.release_in_place() != run.token:
        return None
    fs, root = filesystem(run.staging)
    if fs.exists(root):
        return None
    ofs, out = filesystem(run.config.output.path)
    path = out.rstrip("/") + "/" + MANIFEST_JSON
    if not ofs.exists(path):
        return None
    with ofs.open(path, "rb") as fh:
        manifest = json.loads(fh.read())
    same = (
        # a randomised release (a DP run's draw): only the very run that drew it
        (not run.config.randomised or manifest.get("run_token") == run.token)
        and manifest.get("config_sha256") == run.config.fingerprint()
        and manifest.get("input_fingerprint")
        == input_fingerprint(run.chunks(), run.config.chunk_rows)
        and manifest.get("node") == run.decision().levels
    )
    return manifest if same else None


def drop_temporaries(staging: str) -> None:
    """Remove ``.*.tmp`` files a killed mapped writer may have left, before commit."""
    fs, root = filesystem(staging)
    if not fs.exists(root):
        return
    for path in fs.ls(root, detail=False):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name.startswith(".") and name.endswith(".tmp"):
            log.info("removing %s left by an interrupted attempt", name)
            fs.rm(path)


CONFIG_ARCHIVE = "config/"  # the effective config and hierarchies, and the file as written


def config_files(config: SkaldConfig) -> dict[str, bytes]:
    """The effective config (with this run's settings) and the YAML file as written: kept in
    the release folder and the run's artifacts, for the audit record."""
    files = {EFFECTIVE_JSON: effective_json_bytes(config.effective())}
    if config.source and os.path.isfile(config.source):
        with open(config.source, "rb") as fh:
            files[CONFIG_YAML] = fh.read()
    return files


def archive_config(run: Run) -> None:
    """The config files in the run's artifacts (``config/``), before phase 1."""
    for name, data in config_files(run.config).items():
        run.store.write_bytes(CONFIG_ARCHIVE + name, data)


def copy_release_records(run: Run) -> None:
    """The committed release's manifest, run record and report into the run's store."""
    fs, out = filesystem(run.config.output.path)
    for name in (MANIFEST_JSON, RUN_JSON, REPORT_HTML, EFFECTIVE_JSON, CONFIG_YAML):
        path = out.rstrip("/") + "/" + name
        if fs.exists(path):
            with fs.open(path, "rb") as fh:
                run.store.write_bytes(name, fh.read())


PHASE_ORDER = ("encode", "histogram", "search", "generalise", "verify")


def record_timings(run: Run) -> None:
    """The run record's timings from the per-phase timing artifacts (tasks of a DAG run, each
    phase measured by its own task), in the phases' order."""
    t = run.record.timings_s
    for phase in PHASE_ORDER:
        if phase not in t and run.store.exists(f"{TIMINGS}{phase}.json"):
            t[phase] = run.seconds(phase)
    ordered = {p: t[p] for p in PHASE_ORDER if p in t}
    run.record.timings_s = {**ordered, **{p: v for p, v in t.items() if p not in ordered}}
