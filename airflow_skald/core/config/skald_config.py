"""`SkaldConfig`, the validated run configuration (docs/design.md §2): what a run reads, its per-run
overrides (CLI flags, DAG params) and its effective settings, which the manifest lists and
`fingerprint` hashes. Built from a YAML file by `run_config.load_config`."""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from airflow_skald.core.config.qids import QidSpec
from airflow_skald.core.data.database.source import DatabaseSource, staged_path
from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.data.location import DataLocation, absolute_path
from airflow_skald.core.data.subset_keys import KeyedSubset
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import PrivacyModel
from airflow_skald.core.privacy.registry import (
    THRESHOLDS,
    archived_settings_of,
    settings_of,
    with_threshold,
)
from airflow_skald.core.privacy.risk.analysis import RiskSettings
from airflow_skald.core.settings.cost_benefit import CostBenefit
from airflow_skald.core.settings.execution import ExecutionSettings
from airflow_skald.core.settings.microaggregation import QidMicroaggregation
from airflow_skald.core.settings.privacy_rows import RISK_ROWS
from airflow_skald.core.settings.quality import QUALITY_ROWS, QualitySettings
from airflow_skald.core.settings.quality import check as check_quality
from airflow_skald.core.settings.secret import SecretRef
from airflow_skald.core.settings.table import BY_NAME, parse_overrides
from airflow_skald.core.settings.utility import UtilitySettings
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.base import Transformation
from airflow_skald.core.transform.differential_privacy.rules import apply_dp_rules
from airflow_skald.core.transform.research_subset import ResearchSubset
from airflow_skald.core.transform.suppression import Suppression
from airflow_skald.core.utility import config as utility_config

T = TypeVar("T", bound=Transformation)

#: the settings table's rows that set a key of a nested section: name -> section
NESTED = {r.name: "quality" for r in QUALITY_ROWS} | {r.name: "risk" for r in RISK_ROWS}


@dataclass(frozen=True)
class SkaldConfig:
    """A validated configuration. Paths are absolute or fsspec URLs."""

    input: DataLocation
    output: DataLocation
    quasi_identifiers: tuple[QidSpec, ...]
    privacy: tuple[PrivacyModel, ...]
    # the settings table's rows (their defaults live there: settings/table.py)
    chunk_rows: int
    histogram_bins: int | None
    root: str
    # the objective and its settings (docs/design.md §4d `quality:`); its cost_benefit and
    # attacker are the configured profitability model's (`__post_init__`)
    quality: QualitySettings = field(default_factory=QualitySettings)
    # the risk analysis (docs/design.md §4c: risk.threshold, risk.sampling_fraction, risk.population)
    risk: RiskSettings = field(default_factory=RiskSettings)
    utility: UtilitySettings | None = (
        None  # the utility analysis (docs/design.md §5), off when None
    )
    direct_identifiers: tuple[str, ...] = ()  # dropped
    # the transformations the config asks for, each its typed settings (core.transform);
    # suppression always (`suppression`)
    transformations: tuple[Transformation, ...] = ()
    sensitive_attributes: tuple[str, ...] = ()
    qid_priority: tuple[str, ...] = ()
    database: DatabaseSource | None = (
        None  # a table or query staged into `input` (docs/design.md §2a)
    )
    output_table: TableTarget | None = None  # a table as the release; `output`: its folder
    # where a DP run reads its secret (never the secret; not in the settings nor the hash)
    dp_key: SecretRef | None = field(default=None, compare=False)
    overwrite: bool = field(default=False, compare=False)  # a run option, not in the hash
    # where the passes run (docs/design.md §2b): not in the hash (every engine makes the same
    # release) nor the archive (a connection may hold a password)
    execution_settings: ExecutionSettings = field(default_factory=ExecutionSettings, compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        """publisher_payout's game is the configured profitability model's (ADR 0046): its
        cost/benefit and attacker follow the models (a replaced `privacy` too)."""
        game = [m.game for m in self.privacy if m.game is not None]
        cost, attacker = (game[0].cost, game[0].attacker) if game else (CostBenefit(), "prosecutor")
        if (self.quality.cost_benefit, self.quality.attacker) != (cost, attacker):
            quality = replace(self.quality, cost_benefit=cost, attacker=attacker)
            object.__setattr__(self, "quality", quality)

    @property
    def input_table(self) -> str | None:
        """The database table read (None: files, or a query)."""
        return self.database.table if self.database else None

    @property
    def execution(self) -> str:
        """The engine that runs the passes (`execution.engine`, docs/design.md §2b)."""
        return self.execution_settings.engine

    @property
    def execution_connection(self) -> str | None:
        """The engine's connection (`execution.connection`; None: none given)."""
        return self.execution_settings.connection

    def transformation(self, cls: type[T]) -> T | None:
        """The configured transformation of class `cls` (its settings), or None."""
        return next((t for t in self.transformations if isinstance(t, cls)), None)

    def with_transformation(self, transformation: Transformation) -> SkaldConfig:
        """The config with `transformation` in place of the configured one of its class."""
        cls = type(transformation)
        kept = tuple(transformation if type(t) is cls else t for t in self.transformations)
        if self.transformation(cls) is None:
            kept = (*kept, transformation)
        return replace(self, transformations=kept)

    @property
    def suppression(self) -> Suppression:
        """Suppression's settings: the limit (`limit`) and what phase 3 does with the
        suppressed records (`records`, `drop`); every config has them."""
        return self.transformation(Suppression) or Suppression()

    @property
    def transformed_columns(self) -> tuple[str, ...]:
        """Input columns the transformations read and release transformed."""
        return transform_registry.columns_of(self.transformations)

    @property
    def qid_names(self) -> list[str]:
        return [q.name for q in self.quasi_identifiers]

    @property
    def criteria_attributes(self) -> tuple[str, ...]:
        """Sensitive attributes that privacy criteria name (their distributions are counted)."""
        return tuple(dict.fromkeys(m.attribute for m in self.privacy if m.attribute))

    @property
    def microaggregations(self) -> dict[str, QidMicroaggregation]:
        """Every microaggregated QID (in the lattice or not) and its function (docs/design.md
        §4f), as the transformations say."""
        return transform_registry.aggregated_of(self.transformations)

    @property
    def microaggregated(self) -> tuple[QidSpec, ...]:
        """QIDs microaggregated with `cluster: false`: out of the lattice, released as the
        aggregate over the classes of the other QIDs (the clustered ones stay in
        `quasi_identifiers`, their spec's `microaggregation` set)."""
        return transform_registry.out_of_lattice_of(self.transformations)

    @property
    def research_subset(self) -> ResearchSubset | None:
        """The research subset (docs/design.md §4e), a transformation: where the phases and
        the engines read its flag column (`column`) and the input columns it reads."""
        return self.transformation(ResearchSubset)

    @property
    def keyed_subset(self) -> KeyedSubset | None:
        """A research subset given by a dataset of keys (its flag is derived when read)."""
        return self.research_subset.keyed if self.research_subset else None

    @property
    def counted_attributes(self) -> tuple[str, ...]:
        """What phases 1 and 2 count per class besides sizes: the criteria's attributes, the
        research subset's column (its flags, docs/design.md §4e), which is never released, and the
        microaggregated QIDs (docs/design.md §4f)."""
        subset = (self.research_subset.column,) if self.research_subset else ()
        return tuple(dict.fromkeys([*self.criteria_attributes, *subset, *self.microaggregations]))

    @property
    def data_independent(self) -> bool:
        """A model's guarantee covers what the config fixes alone, nothing read from the data
        (`PrivacyModel.data_independent`: differential privacy's)."""
        return any(m.data_independent for m in self.privacy)

    @property
    def randomised(self) -> bool:
        """A model's release is one random draw of this run's (`PrivacyModel.randomised`:
        differential privacy's keyed sample): no other run's release is taken for it."""
        return any(m.randomised for m in self.privacy)

    @property
    def min_class_size(self) -> int:
        """The smallest class the models let through: the largest minimal class size over all
        models (as `PrivacyPolicy.min_class_size`; the manifest's `k`). Not k-anonymity's k:
        a DP, k-map or no-attack profitability model may ask for larger classes."""
        return max((m.min_class_size for m in self.privacy), default=1)

    def priority_order(self) -> list[int]:
        """QID indices in tie-break order: qid_priority first, then the rest in config order."""
        names = self.qid_names
        listed = [names.index(n) for n in self.qid_priority]
        return listed + [i for i in range(len(names)) if i not in listed]

    def with_overrides(
        self,
        overrides: dict[str, Any] | None,
        base_dir: Path | None = None,
        limit_given: bool = False,
    ) -> SkaldConfig:
        """Apply CLI flags / DAG params (empty values keep the file's) and validate them.
        A relative input_path/output_path resolves against `base_dir` (DAG params: the
        config file's folder, as the file's own paths), else the working directory (CLI)."""
        values = parse_overrides(overrides or {})
        transformed = transform_registry.setting_names()
        fields: dict[str, Any] = {}
        for key, value in values.items():
            if key == "input_path":
                fields["input"] = replace(self.input, path=absolute_path(value, base_dir))
                fields["database"] = None  # files in place of the table
            elif key == "output_table":
                if self.output_table is None:
                    raise ConfigError("output_table: the config's output is not a database table")
                fields["output_table"] = target = replace(self.output_table, table=value)
                if not target.folder_given and "output" not in fields:  # the folder follows it
                    folder = posixpath.join(posixpath.dirname(self.output.path), target.qualified)
                    fields["output"] = replace(self.output, path=folder)
            elif key == "input_table":
                if self.database is None:
                    raise ConfigError("input_table: the config's input is not a database table")
                fields["database"] = replace(self.database, table=value, sql=None)
            elif key == "output_path":
                fields["output"] = replace(self.output, path=absolute_path(value, base_dir))
                if self.database is not None and "input" not in fields:  # staged beside it
                    fields["input"] = replace(self.input, path=staged_path(fields["output"].path))
            elif key in ("execution", "execution_connection"):
                fields["execution_settings"] = _execution(self.execution_settings, values)
            elif key in THRESHOLDS:
                fields["privacy"] = with_threshold(fields.get("privacy", self.privacy), key, value)
            elif key in transformed or key in utility_config.KEYS or key in NESTED:
                continue  # the transformations', the utility's and the sections': below
            else:
                fields[key] = value
        fields.update(self._nested(values))
        utility = utility_config.with_overrides(
            self.utility,
            values,
            self.qid_names,
            self.direct_identifiers,
        )
        if utility is not self.utility:
            fields["utility"] = utility
        out = self
        if fields or transformed & set(values):
            out = replace(self, **fields)
            check_quality(out.quality, out.qid_names)
            with_transformed = transform_registry.with_settings(out.transformations, values)
            out = replace(out, transformations=with_transformed)
            check_transformation(out)
        # differential privacy's rules judge the settings after every flag (limit_given: the
        # file set the suppression limit)
        return apply_dp_rules(out, limit_given or "suppression_limit" in values)

    def _nested(self, values: dict[str, Any]) -> dict[str, Any]:
        """`quality` and `risk` after the run's settings: each row's name goes to its key in
        the section (the settings table's path: ``objective`` -> ``quality.objective``)."""
        given: dict[str, dict[str, Any]] = {}  # section -> {its key: value}
        for key, value in values.items():
            if key in NESTED:
                given.setdefault(NESTED[key], {})[BY_NAME[key].path[-1]] = value
        if "objective" in given.get("quality", {}):  # named by the run: not the default one
            given["quality"]["objective_default"] = False
        return {name: replace(getattr(self, name), **keys) for name, keys in given.items()}

    def setting(self, name: str) -> Any:
        """The value of the settings table's row `name` (a nested section's by its path:
        ``risk_threshold`` is ``risk.threshold``; a transformation's from it, None when the
        config does not ask for it)."""
        if name in NESTED:
            return getattr(getattr(self, NESTED[name]), BY_NAME[name].path[-1])
        if name in transform_registry.setting_names():  # a transformation's row
            return transform_registry.setting_of(self.transformations, name)
        return getattr(self, name)

    def effective(self) -> dict:
        """The effective settings in full (hierarchies as tables), for the run's archive."""
        body = json.loads(json.dumps(self.settings()))  # a deep copy
        for spec, qid in zip(self.quasi_identifiers, body["qids"], strict=True):
            if spec.hierarchy is not None:
                qid["hierarchy"] = spec.hierarchy.table.tolist()
        body.update(archived_settings_of(self.privacy))  # a t-closeness hierarchy's table
        body["overwrite"] = self.overwrite
        body["source"] = self.source
        return body

    def fingerprint(self) -> str:
        """SHA-256 of the effective settings (`json.dumps(settings(), sort_keys=True)`), so an
        auditor can tell two runs' configs apart and recompute it from the manifest."""
        return hashlib.sha256(json.dumps(self.settings(), sort_keys=True).encode()).hexdigest()

    def settings(self) -> dict[str, Any]:
        """The effective settings, JSON-safe (hierarchies by their hash): what the manifest
        lists and `fingerprint` hashes."""
        return {
            "input": self.database.describe() if self.database else asdict(self.input),
            "output": asdict(self.output),
            **({"output_table": self.output_table.describe()} if self.output_table else {}),
            "qids": [q.describe() for q in self.quasi_identifiers],
            **transform_registry.settings_of(self.transformations, after="qids"),
            **settings_of(self.privacy),
            **transform_registry.settings_of(self.transformations, after="privacy"),
            "chunk_rows": self.chunk_rows,
            "direct_identifiers": list(self.direct_identifiers),
            "sensitive_attributes": list(self.sensitive_attributes),
            "histogram_bins": self.histogram_bins,
            "qid_priority": list(self.qid_priority),
            **transform_registry.settings_of(self.transformations, after="qid_priority"),
            **transform_registry.settings_of(self.transformations, after="research_subset"),
            "root": self.root,
            **({"quality": self.quality.describe()} if self.quality.objective != "dm_star" else {}),
            **self.risk.listed(),
            **transform_registry.settings_of(self.transformations),
            **({"utility": self.utility.describe()} if self.utility else {}),
        }


def _execution(given: ExecutionSettings, values: dict[str, Any]) -> ExecutionSettings:
    """`execution` after the run's settings: another engine than the file's keeps the file's
    connection only if the run names none (a connection is the engine's)."""
    engine = values.get("execution", given.engine)
    kept = given.connection if engine == given.engine else None
    return ExecutionSettings(engine, values.get("execution_connection", kept))


def check_transformation(config: SkaldConfig) -> None:
    """What each configured transformation refuses of the rest of the config (its `check`)."""
    transform_registry.check(config.transformations, config)
