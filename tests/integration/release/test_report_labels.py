"""What report.html's labels say, read as a person reads the page: the HTML is parsed (stdlib
html.parser) into headings, tables of cell texts and notes, and the tests assert on that text.

An auditor's review found labels that claimed more than the figures beside them: at-risk classes
without the criterion that ranked them, "nodes passing" for the nodes KNOWN to pass, risk shares
that did not say they count the kept records only, a wall time with hundredths read from
whole-second timestamps, and a class-size bin "4-7" under k = 5. Each test renders a report
(from a hand-written manifest, or a release the pipeline wrote) and reads the visible text.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers_data import chart_labels

from airflow_skald.core.release.report import render_report

# --- reading the page ----------------------------------------------------------------------


class Page(HTMLParser):
    """The page's visible text: its tables (each under the last heading before it, as rows of
    cell texts, header row included) and its paragraphs."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.heading = ""
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.paragraphs: list[str] = []
        self._text: list[str] | None = None
        self._row: list[str] | None = None
        self._in_heading = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("h1", "h2", "h3"):
            self._in_heading, self._text = True, []
        elif tag == "table":
            self.tables.append((self.heading, []))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th", "p"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        text = " ".join("".join(self._text or []).split())
        if tag in ("h1", "h2", "h3"):
            self.heading, self._in_heading, self._text = text, False, None
        elif tag in ("td", "th") and self._row is not None:
            self._row.append(text)
            self._text = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1][1].append(self._row)
            self._row = None
        elif tag == "p":
            self.paragraphs.append(text)
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def table(self, heading: str) -> list[list[str]]:
        """The rows (header included) of the first table under `heading`."""
        return next(rows for h, rows in self.tables if h == heading)

    def labelled(self, heading: str) -> dict[str, str]:
        """A two-column table under `heading` as {label: value}."""
        return {row[0]: row[1] for row in self.table(heading) if len(row) >= 2}

    @property
    def text(self) -> str:
        cells = [c for _, rows in self.tables for row in rows for c in row]
        return "\n".join([*cells, *self.paragraphs])


MODELS = [
    {"model": "k-anonymity", "k": 5, "min_class_size": 6},
    {"model": "distinct-l-diversity", "attribute": "disease", "l": 3, "min_distinct": 3},
    {"model": "entropy-l-diversity", "attribute": "disease", "l": 2, "min_entropy_l": 2.0},
    {"model": "recursive-cl-diversity", "attribute": "disease", "c": "3", "l": 2},
    {"model": "t-closeness", "attribute": "income", "t": "0.2", "distance": "equal"},
]


def manifest(**changes) -> dict:
    m = {
        "k": 5,
        "suppression_limit": 0.01,
        "n_records": 10_000,
        "n_suppressed": 40,
        "max_suppressed": 100,
        "privacy_models": MODELS,
        "lattice": {"nodes": 108, "evaluated": 22, "passing": 60, "pruned": 30},
        "risk": {"prosecutor_risk_max": 1 / 6, "prosecutor_risk_avg": 0.02, "share_below_2k": 0.1},
        "class_size_histogram": {"4-7": 3, "8-15": 40, "16-31": 200},
        "verified": True,
    }
    m.update(changes)
    return m


def at_risk(model: str, attribute: str, size: int, figure: float, first: int) -> dict:
    return {
        "model": model,
        "attribute": attribute,
        "size": size,
        "figure": figure,
        "distribution": {"value #1": first, "value #2": size - first},
    }


# --- 1. classes at risk: the criterion and its figure, grouped per criterion, worst first ----


def test_at_risk_rows_name_their_criterion_and_figure_grouped_worst_first():
    same = ("disease", 8, 5)  # one class, at risk under two criteria
    classes = [  # the order of a manifest with several criteria, shuffled
        at_risk("entropy-l-diversity", "disease", 9, 2.75, 4),
        at_risk("t-closeness", "income", 7, 0.125, 4),
        at_risk("distinct-l-diversity", *same[:2], 3.0, same[2]),
        at_risk("recursive-cl-diversity", "disease", 12, 2.9999, 8),
        at_risk("entropy-l-diversity", *same[:2], 2.0, same[2]),
        at_risk("t-closeness", "income", 6, 0.19999, 5),
        at_risk("distinct-l-diversity", "disease", 10, 4.0, 4),
        at_risk("recursive-cl-diversity", "disease", 11, 1.5, 6),
    ]
    page = Page(render_report(manifest(at_risk_classes=classes)))
    head, *rows = page.table("Classes at risk")
    assert head[:3] == ["criterion", "figure", "class size"]
    table = [row[:3] for row in rows]
    assert table == [
        ["distinct l-diversity of 'disease' (l = 3)", "distinct values = 3", "8"],
        ["distinct l-diversity of 'disease' (l = 3)", "distinct values = 4", "10"],
        ["entropy l-diversity of 'disease' (l = 2)", "entropy l = 2", "8"],
        ["entropy l-diversity of 'disease' (l = 2)", "entropy l = 2.75", "9"],
        # 2.9999 to 4 digits would read "3", i.e. c itself: the bound a class must stay below
        [
            "recursive (c,l)-diversity of 'disease' (c = 3, l = 2)",
            "n₁ / (n_l + … + n_m) = 2.9999",
            "12",
        ],
        [
            "recursive (c,l)-diversity of 'disease' (c = 3, l = 2)",
            "n₁ / (n_l + … + n_m) = 1.5",
            "11",
        ],
        ["t-closeness of 'income' (t = 0.2, equal distance)", "distance = 0.19999", "6"],
        ["t-closeness of 'income' (t = 0.2, equal distance)", "distance = 0.125", "7"],
    ]
    # the class at risk twice is visibly so under two criteria, not a duplicate row
    twice = [row for row in rows if row[2] == "8"]
    assert len(twice) == 2 and twice[0][3:] == twice[1][3:] and twice[0][0] != twice[1][0]
    assert not any(re.search(r"\d\.0\b", row[1]) for row in rows)  # integers without ".0"
    assert any("grouped by criterion, worst first" in p for p in page.paragraphs)


@pytest.fixture(scope="module")
def two_criteria_release(tmp_path_factory) -> Path:
    """A release the pipeline wrote under k, entropy and distinct l-diversity and t-closeness,
    with suppressed classes (limit 10 %)."""
    from helpers_data import config_dict, write_config, write_dataset

    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.run.runner import run

    tmp = tmp_path_factory.mktemp("labels")
    write_dataset(tmp / "in", n_files=3, rows=200)
    cfg = config_dict(tmp / "in", tmp / "out", k=5, suppression_limit=0.1)
    cfg["privacy"]["l_diversity"] = [
        {"attribute": "disease", "l": 2, "variant": "entropy"},
        {"attribute": "disease", "l": 2, "variant": "distinct"},
    ]
    cfg["privacy"]["t_closeness"] = [{"attribute": "disease", "t": 0.4, "distance": "equal"}]
    run(load_config(write_config(tmp / "skald.yaml", cfg)))
    return tmp / "out"


def read_release(out: Path) -> tuple[dict, dict, Page]:
    m = json.loads((out / "manifest.json").read_text())
    record = json.loads((out / "run.json").read_text())
    return m, record, Page((out / "report.html").read_text(encoding="utf-8"))


def test_at_risk_table_of_a_release_with_several_criteria(two_criteria_release):
    m, _, page = read_release(two_criteria_release)
    classes = m["at_risk_classes"]
    assert {c["model"] for c in classes} >= {"entropy-l-diversity", "distinct-l-diversity"}
    _, *rows = page.table("Classes at risk")
    assert len(rows) == len(classes)
    names = {
        "entropy-l-diversity": ("entropy l-diversity of 'disease' (l = 2)", "entropy l"),
        "distinct-l-diversity": ("distinct l-diversity of 'disease' (l = 2)", "distinct values"),
        "t-closeness": ("t-closeness of 'disease' (t = 0.4, equal distance)", "distance"),
    }
    # grouped in the manifest's order of the models, each group contiguous
    order = [names[d["model"]][0] for d in m["privacy_models"] if d["model"] in names]
    groups = [
        criterion for i, (criterion, *_) in enumerate(rows) if i == 0 or rows[i - 1][0] != criterion
    ]
    assert groups == [g for g in order if any(r[0] == g for r in rows)]
    for model, (criterion, figure_name) in names.items():
        mine = [c for c in classes if c["model"] == model]
        shown = [r for r in rows if r[0] == criterion]
        assert len(shown) == len(mine)
        figures = [float(r[1].split(" = ")[1]) for r in shown]
        worst_first = sorted(figures, reverse=model == "t-closeness")
        assert figures == worst_first, (model, figures)
        for r in shown:
            assert r[1].startswith(figure_name + " = ") and not r[1].endswith(".0")
        # the figures are the manifest's, to 4 significant digits (integers whole)
        expected = sorted(c["figure"] for c in mine)
        assert sorted(figures) == pytest.approx(expected, rel=1e-3)


# --- 2. lattice: the nodes KNOWN to pass, not all passing nodes -----------------------------


def test_lattice_counts_nodes_known_to_pass_not_all_passing():
    page = Page(render_report(manifest()))
    lattice = page.labelled("Lattice search")
    label = next(key for key in lattice if "pass" in key)
    assert label == (
        "nodes known to pass k-anonymity, distinct-l-diversity, entropy-l-diversity, "
        "recursive-cl-diversity, t-closeness within the suppression limit "
        "(evaluated, or implied by a monotone criterion)"
    )
    assert lattice[label] == "60" and lattice["nodes evaluated (class sizes computed)"] == "22"
    assert lattice["nodes never classified (a lower bound of the loss ruled them out)"] == "30"
    assert "nodes passing" not in page.text and "all passing nodes" not in page.text.replace(
        "not all the passing nodes", ""
    )
    assert any("not all the passing nodes of the lattice" in p for p in page.paragraphs)
    k_only = Page(render_report(manifest(privacy_models=[MODELS[0]])))
    assert any(
        key.startswith("nodes known to pass k within the suppression limit (evaluated, or implied")
        for key in k_only.labelled("Lattice search")
    )


def test_lattice_label_of_a_real_release(two_criteria_release):
    m, _, page = read_release(two_criteria_release)
    lattice = page.labelled("Lattice search")
    known = [value for key, value in lattice.items() if key.startswith("nodes known to pass")]
    assert known == [f"{m['lattice']['passing']:,}"]
    assert not [key for key in lattice if key.startswith("nodes passing")]


# --- 3. risk: computed over the kept records, and the labels say so -------------------------


def test_risk_labels_say_they_count_the_kept_records():
    page = Page(render_report(manifest()))
    risk = page.labelled("Suppression and re-identification risk")
    kept = "of the kept (not suppressed) records"
    assert risk[f"prosecutor risk {kept}, max (1 / smallest kept class)"] == "0.1667"
    assert risk[f"prosecutor risk {kept}, average (kept classes / kept records)"] == "0.02"
    assert risk[f"share {kept} in classes smaller than 2k = 10"] == "10 %"
    for label in risk:
        if "risk" in label or "2k" in label:
            assert kept in label, label
    assert any("computed over the kept (not suppressed) records only" in p for p in page.paragraphs)
    card = re.search(r'<div class="card"><b>0\.1667</b>([^<]*)</div>', render_report(manifest()))
    assert card and card.group(1) == "max prosecutor risk (kept records)"


def test_risk_labels_of_a_real_release_with_suppression(two_criteria_release):
    m, _, page = read_release(two_criteria_release)
    assert m["n_suppressed"] > 0  # the risk figures leave these records out
    risk = page.labelled("Suppression and re-identification risk")
    share = next(v for k, v in risk.items() if k.startswith("share of the kept (not suppressed)"))
    assert share == f"{100 * m['risk']['share_below_2k']:.3g} %"
    average = next(v for k, v in risk.items() if "average (kept classes / kept records)" in k)
    assert float(average) == pytest.approx(m["risk"]["prosecutor_risk_avg"], rel=1e-3)


# --- 4. wall time: from the precise timings, never more precise than its source -------------


def run_table(m: dict, record: dict) -> dict[str, str]:
    return Page(render_report(m, record)).labelled("Run")


def test_wall_time_from_the_measured_phases_not_the_whole_second_timestamps():
    record = {
        "run_token": "tok",
        "started_at": "2026-11-26T06:00:07+00:00",
        "finished_at": "2026-11-26T06:00:08+00:00",
        "timings_s": {"encode": 0.268, "histogram": 0.013, "search": 0.262, "generalise": 0.347},
    }
    page = Page(render_report(manifest(), record))
    run = page.labelled("Run")
    assert run["wall time (measured: the phases' total)"] == "0.89 s"
    assert "1.00 s" not in page.text
    assert page.labelled("Time and memory")["total"] == "0.89 s"


def test_wall_time_from_whole_seconds_is_shown_in_whole_seconds():
    record = {
        "started_at": "2026-11-26T06:00:00+00:00",
        "finished_at": "2026-11-26T06:01:30+00:00",
        "timings_s": {"encode": 1.25, "search": 0.75},  # 2 s of 90: time outside the phases
    }
    run = run_table(manifest(), record)
    assert run["wall time (finished − started, to the whole second)"] == "90 s"
    no_timings = run_table(manifest(), {k: v for k, v in record.items() if k != "timings_s"})
    assert no_timings["wall time (finished − started, to the whole second)"] == "90 s"
    # the per-chunk baseline sums its phases over the chunks: not a wall time
    per_chunk = {**record, "timings_s": {"search": 89.5}}
    assert (
        run_table(manifest(mode="per_chunk"), per_chunk)[
            "wall time (finished − started, to the whole second)"
        ]
        == "90 s"
    )


def test_wall_time_from_precise_timestamps_keeps_their_precision():
    millis = {
        "started_at": "2026-11-26T06:00:00.250+00:00",
        "finished_at": "2026-11-26T06:00:01.500+00:00",
        "timings_s": {"encode": 0.5},
    }
    assert run_table(manifest(), millis)["wall time (finished − started)"] == "1.25 s"
    tenths = {"started_at": "2026-11-26T06:00:00.2", "finished_at": "2026-11-26T06:00:00.9"}
    assert run_table(manifest(), tenths)["wall time (finished − started)"] == "0.7 s"
    unfinished = run_table(manifest(), {**millis, "finished_at": ""})
    assert not [key for key in unfinished if key.startswith("wall time")]


def test_wall_time_of_a_real_run(two_criteria_release):
    _, record, page = read_release(two_criteria_release)
    run = page.labelled("Run")
    (label,) = [key for key in run if key.startswith("wall time")]
    value = run[label]
    total = sum(record["timings_s"].values())
    if label == "wall time (measured: the phases' total)":
        assert value == f"{total:.2f} s"
    else:  # run.json's timestamps are whole seconds: no hundredths may be shown
        assert label == "wall time (finished − started, to the whole second)"
        assert re.fullmatch(r"\d+ s", value), value


# --- 5. class-size bins: labelled from k, the manifest untouched ----------------------------


def test_first_class_size_bin_is_labelled_from_k():
    m = manifest()
    page = Page(render_report(m))
    sizes = next(rows for h, rows in page.tables if rows and rows[0] == ["class size", "classes"])
    assert sizes[1:] == [["5-7", "3"], ["8-15", "40"], ["16-31", "200"]]
    assert m["class_size_histogram"] == {"4-7": 3, "8-15": 40, "16-31": 200}  # unchanged
    # a bin starting at k, or a k at a bin's lower end, keeps its label
    at_k = Page(render_report(manifest(k=8)))
    sizes = next(rows for h, rows in at_k.tables if rows and rows[0] == ["class size", "classes"])
    assert [row[0] for row in sizes[1:]] == ["4-7", "8-15", "16-31"]


def test_class_size_chart_labels_of_a_real_release(two_criteria_release):
    m, record, _ = read_release(two_criteria_release)
    k, hist = m["k"], m["class_size_histogram"]
    assert any(int(b.split("-")[0]) < k for b in hist)  # the manifest's bin straddles k ...
    drawn = chart_labels(render_report(m, record), f"Class-size distribution (k = {k})")
    lows = [int(label.split("-")[0]) for label in drawn]
    assert min(lows) == k  # ... the chart's first bin starts at k
    manifest_order = [b for b, _ in sorted(hist.items(), key=lambda i: int(i[0].split("-")[0]))]
    for label, bin_ in zip(drawn, manifest_order, strict=True):
        assert label.split("-")[1] == bin_.split("-")[1]  # same upper ends, same bins
