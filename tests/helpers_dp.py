"""A valid differentially private config over `helpers_data`'s tables (docs/design.md §4e data
independence): every QID's levels from configured hierarchies and cut points, every released
column a QID (the sensitive attribute is not released)."""

from __future__ import annotations

from pathlib import Path

from helpers_data import config_dict

#: age and zip as intervals of configured cuts, with labels for values outside them
AGE = {"name": "age", "type": "numerical", "min_width": 1, "bins": [20, 30, 40, 50, 60]}
AGE |= {"group": [2], "below": "<20", "above": ">=60"}
ZIP = {"name": "zip", "type": "numerical", "min_width": 1, "bins": [1000, 1010, 1050, 1100, 1200]}
ZIP |= {"group": [2], "below": "<1000", "above": ">=1200"}


def dp_config_dict(data: Path | str, out: Path | str, env: str = "SKALD_TEST_DP_KEY", **dp) -> dict:
    """`config_dict` made a valid DP config: (ε, δ) = (2, 1e-5) and `dp` over it."""
    cfg = config_dict(data, out)
    cfg["quasi_identifiers"] = [cfg["quasi_identifiers"][0], dict(AGE), dict(ZIP)]
    cfg["sensitive_attributes"] = []
    cfg["direct_identifiers"] = [*cfg["direct_identifiers"], "disease"]
    cfg["privacy"] = {"differential_privacy": {"epsilon": 2.0, "delta": 1e-5, **dp}}
    cfg["dp_key"] = {"env": env}
    return cfg
