"""report.html's charts: well-formed SVG holding exactly the bars given, labels escaped, round
value ticks."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from airflow_skald.core.release.report.charts import bar_chart, nice_ticks

NS = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("top", "ticks"),
    [(0, [0.0, 1.0]), (7, [0, 2, 4, 6, 8]), (100, [0, 50, 100]), (0.37, [0, 0.1, 0.2, 0.3, 0.4])],
)
def test_nice_ticks_cover_the_top_in_round_steps(top, ticks) -> None:
    got = nice_ticks(top)
    assert got == pytest.approx(ticks) and got[-1] >= top


@pytest.mark.parametrize("horizontal", [False, True])
def test_one_bar_per_value_heights_in_proportion(horizontal: bool) -> None:
    svg = bar_chart(
        ["a<b", "c&d", "e"], [10, 5, 0], title="T <x>", value_label="n", horizontal=horizontal
    )
    root = ET.fromstring(svg)  # well-formed: every label was escaped
    bars = root.findall(f"{NS}rect")
    assert len(bars) == 3
    size = "width" if horizontal else "height"
    sizes = [float(b.get(size)) for b in bars]
    assert sizes[0] == pytest.approx(2 * sizes[1]) and sizes[2] == 0
    texts = "".join(root.itertext())
    assert "a<b" in texts and "c&d" in texts and "T <x>" in texts


def test_empty_chart_is_still_an_svg() -> None:
    root = ET.fromstring(bar_chart([], [], title="none", value_label="n"))
    assert root.tag == f"{NS}svg" and not root.findall(f"{NS}rect")
