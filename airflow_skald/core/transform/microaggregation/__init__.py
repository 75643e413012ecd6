"""Microaggregation (docs/design.md §4f; Domingo-Ferrer and Mateo-Sanz 2002; ARX 3.9's
``MicroAggregationFunction`` and ``DistributionAggregateFunction``; ADR 0022, 0064, 0072): a
QID released as an aggregate of its values over the record's class instead of a label.

The package owns the feature: its settings (`Microaggregation`, the value
`SkaldConfig.transformations` holds: each microaggregated QID's function, and the QIDs that
leave the lattice with ``cluster: false``), what it computes (`aggregates`: phase 2's
per-class aggregates, phase 3's column; `at_node`: phase 2's, after the search), its manifest key and what `skald verify` reads of it
(`out_of_lattice`) and its check of the written column (`verify`: the registry's
`counted_columns` and `check_classes`, with the classes verify counted). Read through the
registry's hooks and `SkaldConfig.microaggregations` / `microaggregated` (which encode, the
engines and the runner ask).

Kept where they are (ADR 0072): each QID's ``microaggregation:`` entry is parsed with the QID
(`config/qids.py`, `settings/microaggregation.py`: part of the QID's definition, its hash in
``qids``); the lattice's QIDs are split from the others by the config (`run_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.settings.microaggregation import QidMicroaggregation
from airflow_skald.core.transform.base import ManifestKey, ParseContext, Transformation

if TYPE_CHECKING:
    from airflow_skald.core.transform.counted import CountedRelease
    from airflow_skald.core.transform.encoded import EncodedPlan
    from airflow_skald.core.transform.hooks_phases import Searched


@dataclass(frozen=True)
class Microaggregation(Transformation):
    """`functions`: every microaggregated QID (those in the lattice first, then those out of
    it, each in config order) and its setting; `left`: the QIDs' specs (`QidSpec`) that leave
    the lattice (``cluster: false``), released as the aggregate over the other QIDs' classes."""

    functions: tuple[tuple[str, QidMicroaggregation], ...]
    left: tuple[Any, ...] = ()

    name: ClassVar[str] = "microaggregation"
    settings_after: ClassVar[str] = "qids"
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {
        "microaggregation": ManifestKey(
            {"type": "object"},
            "an object",
            "each microaggregated QID (docs/design.md §4f): its function, cluster (true: it "
            "stays in the lattice; false: the other QIDs form its classes) and data_type "
            "(integer: ARX's rounding; decimal); no values",
        )
    }

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> Microaggregation | None:
        """From the QIDs as the config parsed them (`ctx.qids`, each with its
        ``microaggregation`` entry); None when no QID is microaggregated."""
        every = [q for q in ctx.qids if q.microaggregation is not None]
        kept = [q for q in every if q.microaggregation.cluster]
        left = tuple(q for q in every if not q.microaggregation.cluster)
        if not every:
            return None
        return cls(tuple((q.name, q.microaggregation) for q in (*kept, *left)), left)

    @classmethod
    def per_chunk_refusal(cls, config: Any) -> str | None:
        if config.transformation(cls) is None:
            return None
        return (
            "--per-chunk does not take microaggregation (docs/design.md §4f: the aggregates are the "
            "global run's classes')"
        )

    def aggregated(self) -> dict[str, QidMicroaggregation]:
        return dict(self.functions)

    def out_of_lattice(self) -> tuple[Any, ...]:
        return self.left

    def settings_entry(self) -> dict[str, Any]:
        """The QIDs out of the lattice (after ``qids``: the others are described there)."""
        return {"microaggregated": [q.describe() for q in self.left]} if self.left else {}

    def arx_dp_refusal(self) -> str | None:
        return "microaggregation"

    def manifest_section_at(self, plan: EncodedPlan) -> dict[str, Any]:
        """Each QID's function, cluster and data type (ARX's INTEGER or DECIMAL: how its
        aggregates are rounded and written, from phase 1's values: `plan`, the encoding's `Plan`),
        never a value."""
        from airflow_skald.core.transform.microaggregation.values import ValueDomain

        out = {}
        for name, m in self.functions:
            domain = ValueDomain.of_stats(plan.stats.sensitive[name])
            out[name] = {**m.describe(), "data_type": "integer" if domain.integer else "decimal"}
        return {"microaggregation": out}

    @classmethod
    def counted_columns(cls, manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
        """The QIDs out of the lattice: `skald verify` counts them beside the classes."""
        return out_of_lattice(manifest)

    @classmethod
    def check_classes(cls, release: CountedRelease) -> None:
        from airflow_skald.core.transform.microaggregation.verify import check_microaggregated

        names = out_of_lattice(release.manifest)
        check_microaggregated(
            release.classes, release.n_qids, release.start, names, release.top_released
        )

    @classmethod
    def after_search(cls, ctx: Searched) -> None:
        """Phase 2: the aggregates per class of the chosen node, kept for phase 3."""
        if not ctx.config.microaggregations:
            return
        from airflow_skald.core.transform.microaggregation.aggregates import aggregates_to_bytes
        from airflow_skald.core.transform.microaggregation.at_node import (
            MICROAGGREGATES,
            microaggregate,
        )

        aggregates = microaggregate(ctx.config, ctx.classes)
        ctx.store.write_bytes(MICROAGGREGATES, aggregates_to_bytes(aggregates))
        ctx.cache["microaggregates"] = aggregates


def out_of_lattice(manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The manifest's microaggregated QIDs with `cluster: false`, in its order."""
    entries = (manifest or {}).get("microaggregation") or {}
    return tuple(n for n, e in entries.items() if isinstance(e, Mapping) and not e.get("cluster"))
