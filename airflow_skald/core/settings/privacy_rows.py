"""The settings table's rows of the privacy models and the risk analysis (docs/design.md §4, §4c;
ADR 0010): k and the suppression limit, each criterion's threshold (path None: read by each
criterion's loader with its row), profitability's costs and benefits, differential privacy's
parameters and the risk analysis' thresholds. `table.SETTINGS` lists them in its order.
"""

from __future__ import annotations

from fractions import Fraction

from airflow_skald.core.settings.setting import (
    ABOVE_ZERO,
    AT_LEAST_ZERO,
    OPEN_SHARE,
    SHARE,
    Setting,
    choice_setting,
    decimal_setting,
    integer_setting,
    to_names,
)
from airflow_skald.core.settings.suppression import SUPPRESSION_LIMIT

#: privacy.k and privacy.suppression_limit
PRIVACY_ROWS: tuple[Setting, ...] = (
    integer_setting(
        "k",
        ("privacy", "k"),
        2,
        "k of k-anonymity (an integer >= 2); empty = the config file's privacy.k.",
    ),
    SUPPRESSION_LIMIT,  # suppression's (settings/suppression.py)
)

#: the criteria's thresholds, profitability and differential privacy (path None)
CRITERION_ROWS: tuple[Setting, ...] = (
    # the criteria's thresholds (path None): read by each criterion's loader with its row
    # privacy.l_diversity[i].l
    integer_setting(
        "l", None, 2, "l of the one configured l-diversity criterion; empty = the config file's."
    ),
    # privacy.t_closeness[i].t
    decimal_setting(
        "t",
        None,
        SHARE,
        "t of the one configured t-closeness criterion; empty = the config file's.",
    ),
    # privacy.l_diversity[i].c (recursive (c,l)-diversity)
    decimal_setting(
        "c",
        None,
        ABOVE_ZERO,
        "c of the one configured recursive (c,l)-diversity criterion; empty = the file's.",
        cli=False,
        param=False,
    ),
    # privacy.l_diversity[i].estimator (entropy l-diversity; ADR 0043)
    choice_setting(
        "entropy_estimator",
        None,
        ("shannon", "grassberger"),
        "How the one configured entropy l-diversity criterion estimates entropy: shannon "
        "(ARX's default) or grassberger (ARX's EntropyEstimator.GRASSBERGER); empty = the file's.",
        cli=False,
        param=False,
    ),
    # privacy.t_closeness[i].order (ordered distance; ADR 0044)
    Setting(
        "t_order",
        None,
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "null"]}},
        "numbers, text or a list of values",
        "How the one configured ordered-distance t-closeness criterion orders its values: "
        "numbers (default), text (ARX's DataType.STRING: Java's String.compareTo, an empty "
        "cell first) or the values listed in order (ARX's DataType.createOrderedString); "
        "empty = the file's.",
        coerce=to_names,
        cli=False,
        param=False,
    ),
    # privacy.average_risk.max (docs/design.md §4c)
    decimal_setting(
        "average_risk",
        None,
        SHARE,
        "Largest average re-identification risk of the configured average-risk model; "
        "empty = the config file's.",
    ),
    # privacy.sample_uniqueness.max
    decimal_setting(
        "sample_uniqueness",
        None,
        SHARE,
        "Largest share of sample-unique records (sample-uniqueness model); empty = the file's.",
    ),
    # privacy.population_uniqueness.max
    decimal_setting(
        "population_uniqueness",
        None,
        SHARE,
        "Largest estimated share of population-unique records (population-uniqueness model); "
        "empty = the file's.",
    ),
    # privacy.k_map.k
    integer_setting(
        "k_map", None, 2, "k of the configured k-map model; empty = the config file's."
    ),
    # privacy.b_likeness[i].beta
    decimal_setting(
        "b_likeness",
        None,
        ABOVE_ZERO,
        "beta of the one configured b-likeness criterion; empty = the config file's.",
    ),
    # privacy.d_disclosure[i].delta
    decimal_setting(
        "d_disclosure",
        None,
        ABOVE_ZERO,
        "delta of the one configured d-disclosure criterion; empty = the config file's.",
    ),
    # privacy.profitability.publisher_benefit, ... (ARX's cost/benefit configuration, ADR 0046)
    decimal_setting(
        "publisher_benefit",
        None,
        AT_LEAST_ZERO,
        "Profitability: the publisher's benefit per record released (ARX's default 1200); "
        "empty = the config file's.",
    ),
    decimal_setting(
        "publisher_loss",
        None,
        AT_LEAST_ZERO,
        "Profitability: the publisher's loss per successful re-identification (ARX's default "
        "300); empty = the config file's.",
    ),
    decimal_setting(
        "adversary_gain",
        None,
        AT_LEAST_ZERO,
        "Profitability: the adversary's gain per successful re-identification (ARX's default "
        "300); empty = the config file's.",
    ),
    decimal_setting(
        "adversary_cost",
        None,
        AT_LEAST_ZERO,
        "Profitability: the adversary's cost per attack (ARX's default 4); empty = the config "
        "file's.",
    ),
    # privacy.differential_privacy.epsilon, .delta, .search_budget, .search_steps
    decimal_setting(
        "dp_epsilon",
        None,
        ABOVE_ZERO,
        "epsilon of (epsilon, delta)-differential privacy; empty = the config file's.",
    ),
    decimal_setting(
        "dp_delta",
        None,
        OPEN_SHARE,
        "delta of (epsilon, delta)-differential privacy; empty = the config file's.",
    ),
    decimal_setting(
        "dp_search_budget",
        None,
        ABOVE_ZERO,
        "The part of epsilon differential privacy spends on choosing the node (ARX's DP search "
        "budget, default 0.1); empty = the config file's.",
    ),
    integer_setting(
        "dp_search_steps",
        None,
        0,
        "Pivot draws of differential privacy's search (expansions; default 100); empty = the "
        "config file's.",
    ),
)

#: risk: (the risk analysis of the release)
RISK_ROWS: tuple[Setting, ...] = (
    decimal_setting(
        "risk_threshold",
        ("risk", "threshold"),
        SHARE,
        "Risk analysis: a record is at risk when its prosecutor risk exceeds this; "
        "empty = the file's (default 0.2).",
        default=Fraction(1, 5),
    ),
    decimal_setting(
        "risk_sampling_fraction",
        ("risk", "sampling_fraction"),
        SHARE,
        "Risk analysis: the input's share of the population (population uniques); empty = "
        "the file's (default: the input is the population).",
    ),
    integer_setting(
        "risk_population",
        ("risk", "population"),
        1,
        "Risk analysis: the population's size, in place of a sampling fraction; empty = the file's.",
    ),
)
