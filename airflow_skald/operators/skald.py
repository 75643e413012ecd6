"""EncodeOperator, HistogramLatticeOperator, GeneraliseOperator: the three SKALD phases.

Each operator is a thin shell over ``airflow_skald.core.pipeline``. ``mode`` picks how much of
its phase one task instance does:

- ``"all"`` (default): the whole phase over every chunk (DAG ``skald_anonymise``);
- ``"partial"``: only the chunks of ``chunk_group`` (a mapped task instance, one per group);
- ``"merge"``: merge the partial results of all groups exactly and finish the phase;
- ``"list"`` (EncodeOperator only): list the chunks and return the groups to map over.

Artifacts go to ``{artifacts}/{dag_id}/{run_id}/`` (see ``artifacts.py``); the XCom return
values are small JSON summaries (paths, levels, counts, DM*) and never hold a data value.
Nothing is done in ``__init__``; the core is imported inside ``execute``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from airflow_skald.operators import artifacts as A
from airflow_skald.operators.links import SkaldManifestLink, manifest_url

_COMMON_FIELDS = (
    "config",
    "input_path",
    "output_path",
    "k",
    "suppression_limit",
    "histogram_bins",
    "chunk_rows",
    "artifacts",
)
_MODES = ("all", "partial", "merge")


def _none_if_blank(value: Any) -> Any:
    """Templated values render to strings unless the DAG renders native objects."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip() in ("", "None", "null"):
        return None
    return value


class _SkaldOperator(BaseOperator):
    """Shared settings: a config file plus per-run overrides (DAG params)."""

    template_fields: Sequence[str] = (*_COMMON_FIELDS, "chunk_group")
    ui_color = "#e8f0fe"
    modes: tuple[str, ...] = _MODES

    def __init__(
        self,
        *,
        config: str | None = None,
        input_path: str | None = None,
        output_path: str | None = None,
        k: int | str | None = None,
        suppression_limit: float | str | None = None,
        histogram_bins: int | str | None = None,
        chunk_rows: int | str | None = None,
        artifacts: str | None = None,
        mode: str = "all",
        chunk_group: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if mode not in self.modes:
            raise ValueError(
                f"{type(self).__name__}: mode must be one of {self.modes}, not {mode!r}"
            )
        self.config = config
        self.input_path = input_path
        self.output_path = output_path
        self.k = k
        self.suppression_limit = suppression_limit
        self.histogram_bins = histogram_bins
        self.chunk_rows = chunk_rows
        self.artifacts = artifacts
        self.mode = mode
        self.chunk_group = chunk_group

    def execute(self, context) -> Any:
        """Run the phase; bad input (config or data) fails at once, without retries."""
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_skald.core.errors import SkaldInputError

        try:
            return self.run_phase(context)
        except SkaldInputError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from None

    def run_phase(self, context) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers
    def load(self):
        """The validated config with this run's overrides (a bad value fails the task clearly)."""
        from airflow_skald.core.config import load_config
        from airflow_skald.core.errors import ConfigError

        path = _none_if_blank(self.config)
        if not path:
            raise ConfigError(
                "no SKALD config: set the DAG param 'config' (path of a skald.yaml readable "
                "by the workers) or the operator's config argument"
            )
        overrides = {
            "input_path": _none_if_blank(self.input_path),
            "output_path": _none_if_blank(self.output_path),
            "k": _none_if_blank(self.k),
            "suppression_limit": _none_if_blank(self.suppression_limit),
            "histogram_bins": _none_if_blank(self.histogram_bins),
            "chunk_rows": _none_if_blank(self.chunk_rows),
        }
        return load_config(path, overrides={k: v for k, v in overrides.items() if v is not None})

    def store(self, context) -> A.RunArtifacts:
        return A.RunArtifacts.from_context(_none_if_blank(self.artifacts), context)

    def check_same_config(self, config, store: A.RunArtifacts) -> None:
        """Later phases must run with the settings phase 1 ran with (params are per run)."""
        from airflow_skald.core.errors import ConfigError

        encoded = store.read_json(A.ENCODE)
        if encoded["config_sha256"] != config.fingerprint():
            raise ConfigError(
                "the SKALD config or params changed since the encode task of this run "
                f"(config sha256 {encoded['config_sha256'][:12]} -> {config.fingerprint()[:12]}); "
                "clear the whole run instead of single tasks"
            )

    @staticmethod
    def chunks(store: A.RunArtifacts, chunk_ids: Sequence[int] | None = None):
        from airflow_skald.core.io import ChunkRef

        layout = store.read_json(A.CHUNKS)
        refs = [ChunkRef.from_dict(c) for c in layout["chunks"]]
        if chunk_ids is None:
            return refs
        wanted = set(chunk_ids)
        return [c for c in refs if c.chunk_id in wanted]

    def group(self) -> tuple[int, list[int]]:
        group = self.chunk_group
        if not isinstance(group, dict) or "group" not in group or "chunk_ids" not in group:
            raise ValueError(
                f"mode='partial' needs chunk_group={{'group': i, 'chunk_ids': [...]}} (got {group!r}); "
                "map it over the return value of EncodeOperator(mode='list')"
            )
        return int(group["group"]), [int(c) for c in group["chunk_ids"]]

    @staticmethod
    def groups(store: A.RunArtifacts) -> list[dict]:
        return store.read_json(A.CHUNKS)["groups"]

    @staticmethod
    def partial_name(phase: str, group: int, ext: str) -> str:
        return f"partials/{phase}/group-{group:05d}.{ext}"

    @staticmethod
    def timing_name(phase: str, group: int) -> str:
        """Wall-clock seconds: the only artifacts that differ between retries (kept apart)."""
        return f"{A.TIMINGS}{phase}-group-{group:05d}.json"

    def plan(self, config, store: A.RunArtifacts):
        from airflow_skald.core.encoding import DomainStats
        from airflow_skald.core.pipeline import plan_root

        return plan_root(config, DomainStats.from_bytes(store.read_bytes(A.DOMAIN_STATS)))


class EncodeOperator(_SkaldOperator):
    """Phase 1: list the chunks, scan the domain (min/max, distinct values), choose the RAM root.

    Writes ``chunks.json``, ``domain_stats.json`` (personal data: object storage only) and
    ``encode.json``; returns ``{"artifacts", "n_chunks", "n_rows", "root_node", "root_bins",
    "histogram_bins"}``. ``mode="list"`` returns the chunk groups for ``.expand(chunk_group=...)``.
    """

    modes = (*_MODES, "list")
    template_fields: Sequence[str] = (*_SkaldOperator.template_fields, "chunks_per_task")

    def __init__(self, *, chunks_per_task: int | str = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunks_per_task = chunks_per_task

    def run_phase(self, context) -> Any:
        from airflow_skald.core import pipeline
        from airflow_skald.core.release import check_output_target

        config = self.load()
        store = self.store(context)
        t0 = time.perf_counter()

        if self.mode in ("all", "list"):
            check_output_target(config)  # fail before any work if the output is not ours
            chunks = pipeline.list_chunks(config)
            size = max(1, int(self.chunks_per_task or 1))
            ids = [c.chunk_id for c in chunks]
            groups = [
                {"group": g, "chunk_ids": ids[i : i + size]}
                for g, i in enumerate(range(0, len(ids), size))
            ]
            store.write_json(A.CHUNKS, {"chunks": [c.to_dict() for c in chunks], "groups": groups})
            self.log.info(
                "%d chunks, %d rows, in %d groups of up to %d chunks",
                len(chunks),
                sum(c.n_rows for c in chunks),
                len(groups),
                size,
            )
            if self.mode == "list":
                return groups
            stats = pipeline.scan_domain(config, chunks)
            return self._finish(config, store, stats, time.perf_counter() - t0, len(chunks))

        if self.mode == "partial":
            group, chunk_ids = self.group()
            chunks = self.chunks(store, chunk_ids)
            stats = pipeline.scan_domain(config, chunks)
            seconds = time.perf_counter() - t0
            store.write_bytes(self.partial_name("encode", group, "json"), stats.to_bytes())
            store.write_json(self.timing_name("encode", group), {"seconds": seconds})
            return {"group": group, "chunks": len(chunks), "n_rows": stats.n_rows}

        # merge
        from airflow_skald.core.encoding import DomainStats

        parts, seconds = [], 0.0
        for g in self.groups(store):
            parts.append(
                DomainStats.from_bytes(
                    store.read_bytes(self.partial_name("encode", g["group"], "json"))
                )
            )
            seconds += store.read_json(self.timing_name("encode", g["group"]))["seconds"]
        stats = DomainStats.merge(parts)
        chunks = self.chunks(store)
        return self._finish(config, store, stats, seconds + time.perf_counter() - t0, len(chunks))

    def _finish(self, config, store, stats, seconds: float, n_chunks: int) -> dict:
        from airflow_skald.core.pipeline import plan_root

        plan = plan_root(config, stats)
        store.write_bytes(A.DOMAIN_STATS, stats.to_bytes())
        summary = {
            "n_chunks": n_chunks,
            "n_rows": stats.n_rows,
            "root_node": plan.levels(plan.root),
            "root_bins": plan.root_bins,
            "histogram_bins": plan.n_ram,
            "histogram_bins_derived": plan.n_ram_derived,
            "config_sha256": config.fingerprint(),
        }
        store.write_json(A.ENCODE, summary)
        store.write_json(A.TIMINGS + "encode.json", {"seconds": seconds})
        self.log.info(
            "RAM root %s (%d bins of N_RAM=%d) over %d records",
            summary["root_node"],
            plan.root_bins,
            plan.n_ram,
            stats.n_rows,
        )
        return {"artifacts": store.uri(), **summary}


class HistogramLatticeOperator(_SkaldOperator):
    """Phase 2: count the root histogram over the chunks, then search the sub-lattice above it.

    Writes ``histogram.bin`` and ``decision.json``; returns the chosen node (levels and the
    paper's notation), DM*, suppressed count, classes and lattice counts.
    """

    def run_phase(self, context) -> Any:
        from airflow_skald.core import pipeline
        from airflow_skald.core.histogram import Histogram

        config = self.load()
        store = self.store(context)
        self.check_same_config(config, store)
        plan = self.plan(config, store)
        t0 = time.perf_counter()

        if self.mode == "partial":
            group, chunk_ids = self.group()
            hist = pipeline.count_histogram(config, plan, self.chunks(store, chunk_ids))
            seconds = time.perf_counter() - t0
            store.write_bytes(self.partial_name("histogram", group, "bin"), hist.to_bytes())
            store.write_json(self.timing_name("histogram", group), {"seconds": seconds})
            return {"group": group, "n_records": hist.n_records, "bins": hist.n_bins}

        if self.mode == "all":
            hist = pipeline.count_histogram(config, plan, self.chunks(store))
            seconds = time.perf_counter() - t0
        else:
            parts, seconds = [], 0.0
            for g in self.groups(store):
                parts.append(
                    Histogram.from_bytes(
                        store.read_bytes(self.partial_name("histogram", g["group"], "bin"))
                    )
                )
                seconds += store.read_json(self.timing_name("histogram", g["group"]))["seconds"]
            hist = Histogram.merge(parts)
            seconds += time.perf_counter() - t0
        store.write_bytes(A.HISTOGRAM, hist.to_bytes())

        t1 = time.perf_counter()
        decision = pipeline.search_lattice(config, plan, hist)
        search_s = time.perf_counter() - t1
        store.write_bytes(A.DECISION, decision.to_bytes())
        store.write_json(
            A.TIMINGS + "histogram_lattice.json", {"histogram_s": seconds, "search_s": search_s}
        )
        d = decision.to_dict()
        self.log.info(
            "chosen node %s %s: DM*=%d, suppressed %d of %d (limit %d), %d/%d nodes evaluated",
            d["node"],
            d["node_paper"],
            d["dm_star"],
            d["n_suppressed"],
            d["n_records"],
            d["max_suppressed"],
            d["lattice"]["evaluated"],
            d["lattice"]["nodes"],
        )
        return {
            "artifacts": store.uri(),
            **{
                key: d[key]
                for key in (
                    "node",
                    "node_paper",
                    "dm_star",
                    "dm_star_arx",
                    "dm",
                    "precision",
                    "n_records",
                    "n_suppressed",
                    "max_suppressed",
                    "n_equivalence_classes",
                    "min_class_size",
                    "lattice",
                )
            },
            "root_bins_nonempty": hist.n_bins,
        }


class GeneraliseOperator(_SkaldOperator):
    """Phase 3: generalise each chunk to the chosen node, verify, write the manifest, commit.

    Parts are staged beside the output under a name unique to the DAG run and moved into place
    only after the written release passed verification; the manifest (written last) is copied to
    the run's artifacts and linked from the task ("SKALD manifest").
    """

    operator_extra_links = (SkaldManifestLink(),)

    def run_phase(self, context) -> Any:
        from airflow_skald.core import pipeline
        from airflow_skald.core.release import (
            check_output_target,
            discard,
            prepare_staging,
            staging_path,
        )
        from airflow_skald.core.search import Decision

        config = self.load()
        store = self.store(context)
        self.check_same_config(config, store)
        plan = self.plan(config, store)
        decision = Decision.from_bytes(store.read_bytes(A.DECISION))
        staging = staging_path(config.output.path, f"{store.dag_id}-{store.run_id}")
        t0 = time.perf_counter()

        if self.mode == "partial":
            from airflow_skald.core.io import filesystem

            group, chunk_ids = self.group()
            fs, root = filesystem(staging)
            fs.makedirs(root, exist_ok=True)
            names = pipeline.write_parts(
                config, plan, decision, self.chunks(store, chunk_ids), staging
            )
            t1 = time.perf_counter()
            classes = pipeline.count_written(config, staging, names)  # read back: the check
            store.write_bytes(self.partial_name("verify", group, "npz"), classes.to_bytes())
            store.write_json(
                self.timing_name("generalise", group),
                {"seconds": t1 - t0, "verify_seconds": time.perf_counter() - t1},
            )
            return {"group": group, "parts": names}

        chunks = self.chunks(store)
        if self.mode == "merge":
            already = self._already_committed(config, store, staging, context)
            if already is not None:
                return already
        check_output_target(config)
        classes, counted_s = None, 0.0
        if self.mode == "all":
            prepare_staging(staging)
            try:
                pipeline.write_parts(config, plan, decision, chunks, staging)
            except BaseException:
                discard(staging)
                raise
            generalise_s = time.perf_counter() - t0
        else:
            from airflow_skald.core.verify import ReleaseClasses

            self._drop_temporaries(staging)
            groups = [g["group"] for g in self.groups(store)]
            group_timings = [store.read_json(self.timing_name("generalise", g)) for g in groups]
            generalise_s = sum(t["seconds"] for t in group_timings)
            counted_s = sum(t.get("verify_seconds", 0.0) for t in group_timings)
            classes = ReleaseClasses.merge(
                [
                    ReleaseClasses.from_bytes(
                        store.read_bytes(self.partial_name("verify", g, "npz"))
                    )
                    for g in groups
                ]
            )
        encoded = store.read_json(A.TIMINGS + "encode.json")
        phase2 = store.read_json(A.TIMINGS + "histogram_lattice.json")
        timings = {
            "encode": encoded["seconds"],
            "histogram": phase2["histogram_s"],
            "search": phase2["search_s"],
            "generalise": generalise_s,
        }
        if counted_s:  # the mapped tasks' share of the verification (they read their parts)
            timings["verify_in_mapped_tasks"] = counted_s
        manifest = pipeline.finalise_release(
            config, plan, decision, chunks, staging, timings, classes=classes
        )
        return self._publish(config, store, manifest, context)

    def _drop_temporaries(self, staging: str) -> None:
        """Remove ``.*.tmp`` files a killed mapped writer may have left, before commit."""
        from airflow_skald.core.io import filesystem

        fs, root = filesystem(staging)
        if not fs.exists(root):
            return
        for path in fs.ls(root, detail=False):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name.startswith(".") and name.endswith(".tmp"):
                self.log.info("removing %s left by an interrupted attempt", name)
                fs.rm(path)

    def _already_committed(self, config, store, staging: str, context) -> dict | None:
        """A cleared merge task whose run already committed: re-publish, do not fail."""
        import json

        from airflow_skald.core.io import filesystem
        from airflow_skald.core.release import MANIFEST

        fs, root = filesystem(staging)
        if fs.exists(root):
            return None
        ofs, out = filesystem(config.output.path)
        path = out.rstrip("/") + "/" + MANIFEST
        if not ofs.exists(path):
            return None
        with ofs.open(path, "rb") as fh:
            manifest = json.loads(fh.read())
        chunks = store.read_json(A.CHUNKS)["chunks"]
        from airflow_skald.core.io import ChunkRef
        from airflow_skald.core.manifest import input_fingerprint

        decision = store.read_json(A.DECISION)
        same = (
            manifest.get("config_sha256") == config.fingerprint()
            and manifest.get("input_fingerprint")
            == input_fingerprint([ChunkRef.from_dict(c) for c in chunks])
            and manifest.get("node") == decision["node"]
        )
        if not same:
            return None
        self.log.info("release at %s is already committed by this run; re-publishing", out)
        return self._publish(config, store, manifest, context)

    def _publish(self, config, store: A.RunArtifacts, manifest: dict, context) -> dict:
        import json

        from airflow_skald.core.io import filesystem
        from airflow_skald.core.release import REPORT

        store.write_bytes(A.MANIFEST, json.dumps(manifest, indent=2).encode() + b"\n")
        fs, out = filesystem(config.output.path)
        report = out.rstrip("/") + "/" + REPORT
        if fs.exists(report):
            with fs.open(report, "rb") as fh:
                store.write_bytes(A.REPORT, fh.read())
        self.log.info(
            "release committed at %s: node %s, DM*=%s, %s suppressed, verified=%s",
            config.output.path,
            manifest["node"],
            manifest["dm_star"],
            manifest["n_suppressed"],
            manifest["verified"],
        )
        summary = {
            "release": config.output.path,
            "manifest": store.uri(A.MANIFEST),
            "manifest_url": manifest_url(store.dag_id, store.run_id),
            "artifacts": store.uri(),
            "node": manifest["node"],
            "node_paper": manifest["node_paper"],
            "dm_star": manifest["dm_star"],
            "n_records": manifest["n_records"],
            "n_suppressed": manifest["n_suppressed"],
            "n_equivalence_classes": manifest["n_equivalence_classes"],
            "min_class_size": manifest["min_class_size"],
            "verified": manifest["verified"],
        }
        # Lineage: one asset event per release, on the Asset of its output location (via the
        # DAGs' AssetAlias outlet); a cleared task that re-publishes adds none (release_event.py).
        from airflow_skald.operators.release_event import emit_release_event

        emit_release_event(context, self.outlets, manifest, {"output_path": config.output.path})
        return summary
