"""The settings table's rows of suppression (docs/design.md §4; ADR 0075): how many records may
be suppressed (``privacy.suppression_limit``) and what the release does with them
(``suppressed_records``). Read by the config, the CLI's flags, the DAG params and the
operators below `core.transform`; the transformation `core.transform.suppression` maps each
row to its field (`table.SETTINGS` places them in its order)."""

from __future__ import annotations

from fractions import Fraction

from airflow_skald.core.settings.setting import ZERO_TO_ONE, choice_setting, decimal_setting

#: privacy.suppression_limit (ARX's ``ARXConfiguration.setSuppressionLimit``)
SUPPRESSION_LIMIT = decimal_setting(
    "suppression_limit",
    ("privacy", "suppression_limit"),
    ZERO_TO_ONE,
    "Fraction of all records that may be suppressed (0..1, e.g. 0.01 = 1 %); "
    "empty = the config file's.",
    default=Fraction(0),
)

#: suppressed_records: mask (ARX's outliers, every QID '*') or drop
SUPPRESSED_RECORDS = choice_setting(
    "suppressed_records",
    ("suppressed_records",),
    ("mask", "drop"),
    "mask: keep suppressed rows with every QID '*'; drop: leave them out.",
    default="mask",
)
