"""Local recoding (docs/design.md §4f; ARX 3.9's ``ARXResult.optimizeIterativeFast`` and
``optimizeIterative``, ``PrivacyCriterion.isLocalRecodingSupported``; ADR 0048, 0049, 0066,
0072): the records the global node suppresses are anonymised again, on their own, at nodes
of their own, step by step.

The package owns the feature's settings (`LocalRecoding`, the typed value of
``transformation.local_recoding`` that `SkaldConfig.transformations` holds), what it does
(`steps`: the steps over the root histogram; `keys`: the root bins' keys at a node), its
manifest key and schema (`manifest`), its settings as described (`described`), the check of
a recoded release (`verify`: the run's, step by step, and `skald verify`'s from the steps the
release keeps, `recorded`) and its report section (`report`). Read through the registry's
hooks: the config's parse and overrides, its checks, DP's refusal, the manifest's schema,
`skald verify`'s policy and re-check (`judged_policy`, `recheck`), `skald audit`'s models
(`audited_models`), the file a table release copies beside its rows (`kept_files`), the
report's section.

Kept where they are, a floor above this one (ADR 0072, 0076): the settings table's rows
(`settings/transformation.py`, which the CLI, the DAG params and the operators read below
the config), the search over the steps (`search/recoded*.py`, which runs the lattice search),
the manifest's writing from the decision (`release/write/manifest.py`). Phase 3's part
(the registry's `checked_release`, `verified_policy`, `after_verify`): the models' figures
over every released class, each step checked under its own models and
``recoding_steps.json`` written (`written`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.class_local import class_local
from airflow_skald.core.settings.table import BY_NAME, read_file_setting
from airflow_skald.core.text import decimal_text
from airflow_skald.core.transform.base import (
    BeyondNode,
    ManifestKey,
    ParseContext,
    ReportSection,
    Transformation,
)
from airflow_skald.core.transform.local_recoding.described import RecodingSettings
from airflow_skald.core.transform.local_recoding.manifest import RECODING_STEPS, SCHEMA
from airflow_skald.core.transform.local_recoding.report import beyond_node, recoding_section

if TYPE_CHECKING:
    from airflow_skald.core.privacy import PrivacyPolicy
    from airflow_skald.core.transform.counted import JudgedRelease, Recheck
    from airflow_skald.core.transform.hooks_phases import ChunkPart, Staged

#: the models ARX allows with local recoding (``PrivacyCriterion.isLocalRecodingSupported``)
SUPPORTED = ("k", "l", "t", "b_likeness", "d_disclosure", "average_risk", "k_map")
#: the adaptive mode's adaption factor when the config gives none (ARX's GUI default)
ADAPTION_DEFAULT = Fraction(1, 20)
#: the settings table's rows (`settings/transformation.py`) and the field each one sets
SETTINGS = {
    "local_recoding": "records",
    "local_recoding_gs": "gs_factor",
    "local_recoding_steps": "max_steps",
    "local_recoding_mode": "mode",
    "local_recoding_adaption": "adaption_factor",
}


@dataclass(frozen=True)
class LocalRecoding(Transformation):
    """`transformation.local_recoding` of the config, validated. ``fast`` (ARX's
    ``optimizeIterativeFast``): records in (0, 1]; ``adaptive`` (ARX's ``optimizeIterative``,
    docs/adr/0048): no records, each step under the run's suppression limit, the gs factor
    raised by `adaption_factor` after a search that released nothing."""

    records: Fraction | None
    gs_factor: Fraction | None = None
    max_steps: int | None = None
    mode: str = "fast"
    adaption_factor: Fraction | None = None

    name: ClassVar[str] = "local_recoding"
    report_after: ClassVar[str] = "nodes"
    setting_names: ClassVar[tuple[str, ...]] = tuple(SETTINGS)
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {
        "local_recoding": ManifestKey(
            SCHEMA,
            "an object of steps and figures",
            "local recoding (docs/design.md §4f): settings, the figures before and after, "
            "and each step's node, records searched and released, and score",
            before="at_risk_classes",
        )
    }
    kept_files: ClassVar[Mapping[str, str]] = {"recoding_steps": RECODING_STEPS}

    # ------------------------------------------------------------------- the settings
    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> LocalRecoding | None:
        """The file's `transformation.local_recoding` (its keys and records were checked
        with the file's sections)."""
        return cls._of({name: read_file_setting(raw, BY_NAME[name]) for name in SETTINGS})

    @classmethod
    def with_settings(
        cls, current: Transformation | None, values: Mapping[str, Any]
    ) -> LocalRecoding | None:
        """The file's settings after a run's (CLI flags, DAG params): each given one
        replaces the file's."""
        if not any(name in values for name in SETTINGS):
            return current  # type: ignore[return-value]
        given = {name: getattr(current, f) if current else None for name, f in SETTINGS.items()}
        return cls._of({**given, **{n: values[n] for n in SETTINGS if n in values}})

    def setting(self, name: str) -> Any:
        return getattr(self, SETTINGS[name])

    @classmethod
    def _of(cls, values: Mapping[str, Any]) -> LocalRecoding | None:
        """Off (None) without records in the fast mode; the steps' settings alone refused."""
        fields = {f: values[name] for name, f in SETTINGS.items()}
        fields["mode"] = fields["mode"] or "fast"
        if fields["records"] is None and fields["mode"] == "fast":
            if any(fields[f] is not None for f in ("gs_factor", "max_steps", "adaption_factor")):
                raise ConfigError(
                    "local_recoding_gs, local_recoding_steps and local_recoding_adaption need "
                    "local_recoding (records, or mode adaptive)"
                )
            return None
        return cls(**fields)

    def settings_entry(self) -> dict[str, Any]:
        return {"transformation": {"local_recoding": self.describe()}}

    def describe(self) -> dict:
        return self.described().to_dict()

    def described(self) -> RecodingSettings:
        """The settings in decimal text (the settings' entry, the manifest's)."""
        gs = None if self.gs_factor is None else decimal_text(self.gs_factor)
        if not self.adaptive:
            return RecodingSettings(self.mode, gs, self.max_steps, decimal_text(self.records))
        return RecodingSettings(
            self.mode, gs, self.max_steps, adaption_factor=decimal_text(self.adaption)
        )

    # ------------------------------------------------------------------- the checks
    def check(self, config: Any) -> None:
        """`records` belongs to the fast mode, `adaption_factor` to the adaptive one; not
        with microaggregation; only the models ARX recodes locally (a research subset refuses
        it: `ResearchSubset.check`)."""
        if self.adaptive and self.records is not None:
            raise ConfigError(
                "transformation.local_recoding.records does not apply with mode adaptive (each "
                "step runs under the run's suppression limit, as ARX's optimizeIterative)"
            )
        if not self.adaptive and self.adaption_factor is not None:
            raise ConfigError("transformation.local_recoding.adaption_factor needs mode adaptive")
        if config.microaggregations:  # a step's records would need their own class aggregates
            raise ConfigError(
                "transformation.local_recoding and microaggregation cannot be combined yet "
                "(the aggregates are per class of the global node)"
            )
        check_models(config.privacy)

    def arx_dp_refusal(self) -> str | None:
        return "local recoding"

    # ------------------------------------------------------------------- the release
    @classmethod
    def report_section(cls, manifest: Mapping[str, Any]) -> ReportSection | None:
        return recoding_section(manifest)

    @classmethod
    def beyond_node(cls, manifest: Mapping[str, Any]) -> BeyondNode | None:
        return beyond_node(manifest)

    @classmethod
    def judged_policy(
        cls, manifest: Mapping[str, Any] | None, policy: PrivacyPolicy, skipped: list[dict]
    ) -> tuple[PrivacyPolicy, list[dict]]:
        from airflow_skald.core.transform.local_recoding.verify import judged_policy

        return judged_policy(manifest, policy, skipped)

    @classmethod
    def recheck(cls, release: JudgedRelease) -> Recheck | None:
        from airflow_skald.core.transform.local_recoding.verify import recheck

        return recheck(release)

    @classmethod
    def audited_models(
        cls, manifest: Mapping[str, Any] | None, models: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], list[dict]]:
        from airflow_skald.core.transform.local_recoding.verify import audited_models

        return audited_models(manifest, models)

    # ------------------------------------------------------------------- phase 3
    @classmethod
    def checked_release(cls, ctx: Staged, manifest: dict) -> dict:
        """The models' figures over every released class (the steps' included)."""
        if not ctx.decision.steps:
            return manifest
        from airflow_skald.core.transform.local_recoding.verify import recoded_figures

        sensitive, n_qids = ctx.plan.stats.sensitive, len(ctx.config.qid_names)
        return recoded_figures(manifest, ctx.classes, ctx.policy, sensitive, n_qids)

    @classmethod
    def verified_policy(cls, ctx: Staged, policy: PrivacyPolicy) -> PrivacyPolicy:
        """The shared check judges the release's classes under the class-local models only
        (each step is checked under its own: `after_verify`)."""
        return class_local(policy) if ctx.decision.steps else policy

    @classmethod
    def after_verify(cls, ctx: Staged, manifest: dict) -> dict:
        """Each step's classes under its own models, then ``recoding_steps.json`` kept."""
        if not ctx.decision.steps:
            return manifest
        from airflow_skald.core.transform.local_recoding.verify import verify_steps
        from airflow_skald.core.transform.local_recoding.written import kept

        plan = ctx.plan
        args = (ctx.policy, plan.stats.sensitive, ctx.decision, plan.stats.n_rows)
        verify_steps(ctx.classes, plan.dims, *args)
        return kept(ctx, manifest)

    # ------------------------------------------------------------------- the per-chunk baseline
    @classmethod
    def part_policy(cls, ctx: ChunkPart, policy: PrivacyPolicy) -> PrivacyPolicy:
        """A chunk's part judged alone under the class-local models (as `verified_policy`)."""
        return class_local(policy) if ctx.decision.steps else policy

    @classmethod
    def checked_part(cls, ctx: ChunkPart) -> None:
        """Each step of the chunk's search under its own models, against the chunk's own
        distributions and records."""
        if not ctx.decision.steps:
            return
        from airflow_skald.core.transform.local_recoding.verify import verify_steps

        args = (ctx.policy, ctx.sensitive, ctx.decision, ctx.n_records)
        verify_steps(ctx.classes, ctx.dims, *args)

    # ------------------------------------------------------------------- the steps' values
    @property
    def adaptive(self) -> bool:
        return self.mode == "adaptive"

    @property
    def adaption(self) -> Fraction:
        """The adaptive mode's adaption factor (ARX's GUI default 0.05 when not given)."""
        return ADAPTION_DEFAULT if self.adaption_factor is None else self.adaption_factor

    def at_least(self, n_records: int) -> Fraction:
        """The records every step must release: records * N (a fraction of all records)."""
        return self.records * n_records

    def step_limit(self, n_records: int, remaining: int, run_limit: Fraction) -> Fraction:
        """The suppression limit of a step over `remaining` records: 1 - records * N / R,
        clamped to [0, 1] (exact); adaptive: the run's (`run_limit`, as ARX's ``optimize``
        keeps the configuration's)."""
        if self.adaptive:
            return run_limit
        limit = 1 - self.at_least(n_records) / remaining
        return min(Fraction(1), max(Fraction(0), limit))


def check_models(models: Sequence[Any]) -> None:
    """Only the models ARX recodes locally; the first other one refused in one line."""
    for m in models:
        if m.name not in SUPPORTED:
            raise ConfigError(
                f"transformation.local_recoding does not apply with privacy.{m.config_key} "
                "(ARX allows it with k, l, t, b-likeness, d-disclosure, average risk and "
                "estimated k-map only)"
            )
