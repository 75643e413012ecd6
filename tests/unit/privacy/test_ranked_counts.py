"""Ranked value counts read in frequency order as text too (issue 18 item 7)."""

from __future__ import annotations

import json

from airflow_skald.core.privacy.l_diversity import ranked_counts


def test_text_order_is_frequency_order():
    counts = list(range(120, 0, -1))  # 120 values, most frequent first
    ranked = ranked_counts(counts)
    assert list(ranked) == sorted(ranked)  # "value #001" ... "value #120"
    assert list(json.loads(json.dumps(ranked, sort_keys=True)).values()) == counts
    assert list(ranked_counts([5, 3])) == ["value #01", "value #02"]
