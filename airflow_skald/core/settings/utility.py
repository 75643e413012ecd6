"""The `utility:` section's settings (rows of the settings table, parsed there; docs/design.md §5): a leaf
module, so the settings table and the config read it without importing the analysis
(`core.utility`)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_skald.core.settings.setting import (
    Setting,
    integer_setting,
    to_names,
    to_pairs,
)

#: the classifiers the analysis trains (ARX's `ARXClassificationConfiguration` defaults)
MODELS = ("logistic_regression", "naive_bayes", "random_forest")

#: the sample's and the folds' seed: the figures are the same for the same input and settings
SEED = 0x5EED


@dataclass(frozen=True)
class UtilitySettings:
    """`target`: the column the classifiers predict (None: statistics only); `features`: the
    columns they learn from (None: the QIDs); `pairs`: QID pairs whose contingency is shown."""

    target: str | None = None
    models: tuple[str, ...] = MODELS
    folds: int = 10
    max_records: int = 100_000
    features: tuple[str, ...] | None = None
    pairs: tuple[tuple[str, str], ...] = ()

    def feature_names(self, qids: list[str]) -> list[str]:
        """The classifiers' features: those configured, else the QIDs; never the target."""
        names = list(self.features) if self.features is not None else list(qids)
        return [n for n in names if n != self.target]

    def columns(self, qids: list[str]) -> list[str]:
        """The input columns the sample holds: QIDs, features and the target, in this order."""
        wanted = [*qids, *self.feature_names(qids)]
        if self.target:
            wanted.append(self.target)
        for a, b in self.pairs:
            wanted += [a, b]
        return list(dict.fromkeys(wanted))

    def describe(self) -> dict:
        """The settings as the manifest's config lists them."""
        return {
            "target": self.target,
            "models": list(self.models),
            "folds": self.folds,
            "max_records": self.max_records,
            "features": None if self.features is None else list(self.features),
            "contingency": [list(p) for p in self.pairs],
        }


#: the settings table's rows of `utility:` (`table.SETTINGS` lists them in its order)
UTILITY_ROWS: tuple[Setting, ...] = (
    Setting(
        "utility_target",
        ("utility", "target"),
        {"type": "string", "minLength": 1},
        "a column name",
        "Utility analysis: the column classifiers predict, trained on the release and on the "
        "original (docs/design.md §5); empty = the file's (none: no classifiers).",
    ),
    Setting(
        "utility_models",
        ("utility", "models"),
        {"type": "array", "minItems": 1, "items": {"enum": list(MODELS)}},
        "a list of " + ", ".join(MODELS),
        "Utility analysis: the classifiers (comma-separated); empty = the file's (default all: "
        + ", ".join(MODELS)
        + ").",
        coerce=to_names,
        default=list(MODELS),
    ),
    integer_setting(
        "utility_folds",
        ("utility", "folds"),
        2,
        "Utility analysis: cross-validation folds; empty = the file's (default 10).",
        default=10,
    ),
    integer_setting(
        "utility_max_records",
        ("utility", "max_records"),
        1,
        "Utility analysis: records in its sample; empty = the file's (default 100000).",
        default=100_000,
    ),
    Setting(
        "utility_features",
        ("utility", "features"),
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        "a list of column names",
        "Utility analysis: the columns classifiers learn from (comma-separated); empty = the "
        "file's (default: the QIDs).",
        coerce=to_names,
    ),
    Setting(
        "utility_contingency",
        ("utility", "contingency"),
        {
            "type": "array",
            "items": {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {"type": "string", "minLength": 1},
            },
        },
        "a list of QID pairs",
        "Utility analysis: QID pairs whose contingency the report shows (a:b,c:d); empty = "
        "the file's.",
        coerce=to_pairs,
        default=[],
    ),
)
