"""(ε, δ)-differential privacy's sample, search and report (docs/design.md §4e; SafePub: Bild,
Kuhn and Prasser, PETS 2018; ARX 3.9's ``EDDifferentialPrivacy`` and
``DataDependentEDDPAlgorithm``; ADR 0024, 0027, 0067).

The model itself (ε and δ, k and β by ARX's ``ParameterCalculation``, what it judges and
refuses of the data) is a privacy model (`core.privacy.differential_privacy`, with
`core.privacy.dp_parameters`): the privacy registry parses and rebuilds it. This package holds
what the model adds to the run around it:

- `keys`: the run's keyed Philox streams; `sampler`: phase 1/2/3's keyed β-sample;
- `mechanism`: the exponential mechanism (SafePub's walk over pivots, `core.search.safepub`,
  draws with it: its score functions read the quality models' context, a layer above);
- `sample_check`: what the manifest says of the run's check of its sample (phase 3);
- `rules`: what a DP config may not combine it with (config loading applies them);
- `report`: the report's section and its words for the lattice floor, from the manifest
  alone (the registry's `report_section`, `lattice_floor`); its manifest key
  (``differential_privacy``, the search's result, written from the run's decision) and its
  schema are declared here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.privacy.differential_privacy import dp_of
from airflow_skald.core.transform.base import (
    ManifestKey,
    ParseContext,
    ReportSection,
    Transformation,
)

if TYPE_CHECKING:
    from airflow_skald.core.transform.differential_privacy.sampler import RowSample
    from airflow_skald.core.transform.hooks_engine import KeyedRun
    from airflow_skald.core.transform.hooks_phases import Staged

#: its manifest key: the parameters and the search's result (before the node it chose)
MANIFEST_KEYS = {
    "differential_privacy": ManifestKey(
        {"type": "object"},
        "an object",
        "(epsilon, delta)-DP (docs/design.md §4e): epsilon, delta, k and beta (ARX's), the search "
        "budget and steps, the node, the records sampled, released and suppressed (records the "
        "sample left out count as suppressed), that releases of the same data compose, who "
        "checked that every released row is in the keyed sample (`sample_check`), and the "
        "score function chosen when none was named (`objective_chosen`)",
        before="node",
    )
}


@dataclass(frozen=True)
class DifferentialPrivacySample(Transformation):
    """Registered for its hooks: those read from the manifest (its key, the report's section
    and lattice floor) and its answers about a config that asks for the model (the per-chunk
    baseline, the manifest's facts over every input record). Its settings are the privacy
    model's (``privacy.differential_privacy``), so `parse` adds nothing to
    `SkaldConfig.transformations`."""

    name: ClassVar[str] = "differential_privacy"
    report_after: ClassVar[str] = "privacy"
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = MANIFEST_KEYS

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> None:
        return None

    @classmethod
    def per_chunk_refusal(cls, config: Any) -> str | None:
        """The sample and the search are one release's over the whole input."""
        if dp_of(config) is None:
            return None
        return (
            "--per-chunk does not take differential_privacy (its sample and search are one "
            "release's over the whole input)"
        )

    @classmethod
    def hides_input_facts(cls, config: Any) -> bool:
        """A built hierarchy lists the level-0 values of every input record: its hash would
        tell of records the sample left out (its levels are stated), and so would phase 1's
        flags of a date QID (ADR 0027)."""
        return dp_of(config) is not None

    @classmethod
    def row_sample(cls, run: KeyedRun) -> RowSample | None:
        """The run's β-sample: keyed by the secret and the run's token (a retry's too)."""
        dp = dp_of(run.config)
        if dp is None:
            return None
        from airflow_skald.core.transform.differential_privacy.sampler import (
            RowSample,
            Sampler,
            row_offsets,
        )

        sampler = Sampler.of(run.secret(), run.token, dp.beta)
        return RowSample(sampler, row_offsets(run.chunks()))

    @classmethod
    def search_key(cls, run: KeyedRun) -> int | None:
        """SafePub's search stream: keyed by the secret and the run's token."""
        if dp_of(run.config) is None:
            return None
        from airflow_skald.core.transform.differential_privacy import keys

        return keys.stream_key(run.secret(), run.token, keys.SEARCH)

    @classmethod
    def released_rows(cls, manifest: Mapping[str, Any]) -> tuple[int | None, str] | None:
        """The sampled records only: those the sample left out are never released (the
        masked rows are sampled ones)."""
        dp = manifest.get("differential_privacy")
        if isinstance(dp, dict) and isinstance(dp.get("records_sampled"), int):
            return dp["records_sampled"], "differential_privacy.records_sampled"
        return None

    @classmethod
    def report_section(cls, manifest: Mapping[str, Any]) -> ReportSection | None:
        from airflow_skald.core.transform.differential_privacy.report import (
            differential_privacy_section,
        )

        return differential_privacy_section(manifest)

    @classmethod
    def lattice_floor(cls, manifest: Mapping[str, Any]) -> str | None:
        from airflow_skald.core.transform.differential_privacy.report import lattice_floor

        return lattice_floor(manifest)

    @classmethod
    def checked_release(cls, ctx: Staged, manifest: dict) -> dict:
        """Phase 3: the run's check that every released row is in the keyed sample, stated."""
        if not ctx.decision.dp:
            return manifest
        from airflow_skald.core.transform.differential_privacy.sample_check import (
            with_sample_check,
        )

        return with_sample_check(manifest, ctx.written.in_sample)
