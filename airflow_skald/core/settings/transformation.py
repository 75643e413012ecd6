"""The settings table's rows of `transformation.local_recoding:` (docs/design.md §4f): a leaf
module, so the table (and through it the CLI's flags, the DAG params and the operators'
keywords, below the config) lists them without importing the transformations. The values
they set are parsed, checked and held by `core.transform.local_recoding.LocalRecoding`
(ADR 0072)."""

from __future__ import annotations

from airflow_skald.core.settings.setting import (
    SHARE,
    ZERO_TO_ONE,
    Setting,
    choice_setting,
    decimal_setting,
    integer_setting,
)

#: `transformation.local_recoding.mode`: ARX's optimizeIterativeFast and optimizeIterative
MODES = ("fast", "adaptive")


#: the settings table's rows of `transformation.local_recoding:` (`table.SETTINGS` lists them)
LOCAL_RECODING_ROWS: tuple[Setting, ...] = (
    decimal_setting(
        "local_recoding",
        ("transformation", "local_recoding", "records"),
        SHARE,
        "Local recoding (docs/design.md §4f): the share of ALL records each step must release (e.g. "
        "0.01); empty = the file's (off when the file has no transformation.local_recoding).",
    ),
    decimal_setting(
        "local_recoding_gs",
        ("transformation", "local_recoding", "gs_factor"),
        ZERO_TO_ONE,
        "Local recoding: the gs factor of the steps (0..1); empty = the objective's.",
    ),
    integer_setting(
        "local_recoding_steps",
        ("transformation", "local_recoding", "max_steps"),
        1,
        "Local recoding: the most searches (each step is one; adaptive: a search that released "
        "nothing counts too, ARX's maxIterations); empty = unlimited.",
    ),
    choice_setting(
        "local_recoding_mode",
        ("transformation", "local_recoding", "mode"),
        MODES,
        "Local recoding: fast (ARX's optimizeIterativeFast: each step releases at least "
        "`records` of all records) or adaptive (ARX's optimizeIterative: each step under the "
        "run's suppression limit, its gs factor raised by the adaption factor after a search "
        "that released nothing); empty = the file's (default fast).",
    ),
    decimal_setting(
        "local_recoding_adaption",
        ("transformation", "local_recoding", "adaption_factor"),
        ZERO_TO_ONE,
        "Local recoding, adaptive: added to the steps' gs factor after a search that released "
        "nothing (0..1; 0: stop there); empty = the file's (default 0.05, ARX's).",
    ),
)
