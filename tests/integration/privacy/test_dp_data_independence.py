"""A DP release publishes only what SafePub proves safe (docs/design.md §4e "Data independence", issue
40 items 1 and 5, ADR 0027): levels and labels from the configured hierarchies only, the
hierarchies' own lattice, no statistic of the input outside the sample, every released column
generalised with its record, the guarantee stated, the sample checked by the run that holds
the secret; a larger explicit k, a flag's objective and no objective at all each work."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_skald.core.config.run_config import config_from_dict, load_config
from airflow_skald.core.errors import ConfigError, VerificationError
from airflow_skald.core.passes import pipeline
from airflow_skald.core.passes.state import Run
from airflow_skald.core.run import runner
from tests.helpers_data import make_table, release_rows, run_inprocess, write_config
from tests.helpers_dp import dp_config_dict

SECRET = "dp-independence-secret-5b1e77c2"
ENV = "SKALD_TEST_DP_KEY"
PSEUDONYM_ENV = "SKALD_TEST_PSEUDONYM_KEY"
ROWS = 1500
#: a greppable outlier no digit string of the figures holds by chance
OUTLIER = 8675309


@pytest.fixture(autouse=True)
def secret(monkeypatch) -> None:
    monkeypatch.setenv(ENV, SECRET)
    monkeypatch.setenv(PSEUDONYM_ENV, "a-pseudonym-key-of-its-own-3d9e")


def _write(folder: Path, table: pa.Table) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "part.parquet")
    return folder


def _cfg(tmp: Path, **change) -> dict:
    cfg = dp_config_dict(tmp / "in", tmp / "out", ENV, search_steps=8)
    cfg["quality"] = {"objective": "precision"}
    cfg.update(change)
    return cfg


def _refused(tmp: Path, cfg: dict, capsys, words: str) -> None:
    _write(tmp / "in", make_table(ROWS, seed=3))
    code, _, err = run_inprocess(["run", str(write_config(tmp / "c.yaml", cfg))], capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], err
    assert not (tmp / "out").exists()


@pytest.mark.parametrize(
    ("qid", "words"),
    [
        ({"name": "zip", "type": "numerical", "min_width": 1, "encode": True}, "encode: true"),
        (
            {"name": "zip", "type": "numerical", "min_width": 1},
            "a numerical QID without cut points",
        ),
    ],
)
def test_levels_from_the_data_are_refused(tmp_path, capsys, qid, words) -> None:
    """Item 1: an encoded QID printed an unsampled outlier as `[1020-8675309]`: refused."""
    cfg = _cfg(tmp_path)
    cfg["quasi_identifiers"][2] = qid
    _refused(tmp_path, cfg, capsys, f"quasi-identifier 'zip': {words}")


def test_a_rule_level_the_data_fills_is_refused(tmp_path, capsys) -> None:
    """Item 1: ages 20-59 fill the group level [0-100) of these cuts: refused, not dropped."""
    cfg = _cfg(tmp_path)
    cfg["quasi_identifiers"][1] = {
        "name": "age",
        "type": "numerical",
        "min_width": 1,
        "bins": [0, 50, 100],
        "group": [2],
    }
    _refused(tmp_path, cfg, capsys, "quasi-identifier 'age'")


def test_the_lattice_is_the_hierarchies_one(tmp_path) -> None:
    """Item 2: level 0 is the floor whatever N_RAM (the adaptive root would stand above it),
    and a fixed node at level 0 is accepted."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    cfg = _cfg(tmp_path, memory={"histogram_bins": 40})
    m = runner.run(load_config(write_config(tmp_path / "c.yaml", cfg)), token="lat")
    assert m["root_node"] == {"city": 0, "age": 0, "zip": 0}
    # phase 1's figures of every input record (its distinct values) are not published
    assert not {"root_bins", "root_lattice", "root_bins_nonempty"} & set(m)
    assert "root_bins_nonempty" not in m["lattice"]
    assert "Lattice floor" in (tmp_path / "out" / "report.html").read_text()
    cfg["privacy"]["differential_privacy"]["node"] = {"city": 0, "age": 0, "zip": 1}
    cfg["output"]["path"] = str(tmp_path / "fixed")
    m = runner.run(load_config(write_config(tmp_path / "f.yaml", cfg)), token="lat2")
    assert m["node"] == {"city": 0, "age": 0, "zip": 1}


def test_no_statistic_of_the_input(tmp_path) -> None:
    """Item 3: the utility analysis and the distributions before generalisation are left out,
    with the sentence saying why."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    cfg = _cfg(tmp_path, utility={"target": "city", "folds": 2, "models": ["naive_bayes"]})
    m = runner.run(load_config(write_config(tmp_path / "c.yaml", cfg)), token="stat")
    assert set(m["utility"]) == {"settings", "left_out"}
    assert "score" not in m["differential_privacy"]  # the search's exact score of the sample
    for q in m["quality_models"]["qids"]:
        assert "before" not in q["distribution"] and "after" in q["distribution"]
    report = (tmp_path / "out" / "report.html").read_text()
    assert "Left out under differential privacy" in report
    # a built hierarchy lists every input record's level-0 value: its hash is not published
    for q in m["quasi_identifiers"]:
        assert "hierarchy_sha256" not in q or q["name"] == "city"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda c: c.update(
                sensitive_attributes=["disease"], direct_identifiers=["pid", "name", "address"]
            ),
            "sensitive attribute 'disease'",
        ),
        (lambda c: c.update(direct_identifiers=["pid", "name", "address"]), "column 'disease'"),
        (
            lambda c: c.update(direct_identifiers=["pid", {"name": "pseudonymise"}, "address"]),
            "pseudonym",
        ),
    ],
)
def test_a_column_released_as_it_is_is_refused(tmp_path, capsys, change, words) -> None:
    """Item 4: a sensitive attribute, a passed-through column or a pseudonym would give a
    sampled record away: refused in one line, nothing written."""
    cfg = _cfg(tmp_path, pseudonym_key={"env": PSEUDONYM_ENV})
    change(cfg)
    _refused(tmp_path, cfg, capsys, words)


@pytest.mark.parametrize(
    "model",
    [
        {"l_diversity": [{"attribute": "disease", "l": 2, "variant": "distinct"}]},
        {"t_closeness": [{"attribute": "disease", "t": 0.5, "distance": "equal"}]},
        {"average_risk": {"max": 0.5}},
        {"sample_uniqueness": {"max": 0.5}},
    ],
)
def test_models_beyond_k_are_refused(tmp_path, model) -> None:
    cfg = _cfg(tmp_path)
    cfg["privacy"].update(model)
    cfg["sensitive_attributes"] = ["disease"]
    cfg["direct_identifiers"] = ["pid", "name", "address"]
    with pytest.raises(ConfigError, match="cannot be combined with privacy") as err:
        config_from_dict(cfg)
    assert "\n" not in str(err.value) and "SafePub" in str(err.value)


def test_report_states_what_the_guarantee_covers(tmp_path) -> None:
    """Item 5: what is covered (SafePub's output) and what is not, in the report."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    runner.run(load_config(write_config(tmp_path / "c.yaml", _cfg(tmp_path))), token="rep")
    report = (tmp_path / "out" / "report.html").read_text()
    assert "What the guarantee covers." in report and "What it does not cover." in report
    assert "adding or removing any one person" in report and "they add up" in report


def test_the_run_checks_its_own_sample(tmp_path, monkeypatch, capsys) -> None:
    """Item 6: the manifest says who checked the sample and over how many rows; a release
    holding a record the sample left out fails the run's own check."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    config = load_config(write_config(tmp_path / "c.yaml", _cfg(tmp_path)))
    m = runner.run(config, token="chk")
    check = m["differential_privacy"]["sample_check"]
    assert check["checked_by"] == "the run" and "keyed sample" in check["checked"]
    assert check["rows"] == len(release_rows(tmp_path / "out")) == m["verified"] * check["rows"]
    # skald verify cannot re-check the sample (no secret) and says who did
    code, stdout, _ = run_inprocess(["verify", str(tmp_path / "out")], capsys)
    (entry,) = json.loads(stdout)["not_rechecked"]
    assert code == 4 and "differential_privacy.sample_check" in entry["reason"]
    real = pipeline.write_parts

    def every_record(*args, **kw):  # a writer that forgets the sample
        return real(*args[:7], None, **kw)

    monkeypatch.setattr(pipeline, "write_parts", every_record)
    other = config.with_overrides({"output_path": str(tmp_path / "bad")})
    with pytest.raises(VerificationError, match="keyed sample"):
        runner.run(other, token="chk2")
    assert not (tmp_path / "bad" / "manifest.json").exists()


def test_a_larger_explicit_k_is_the_policy_k(tmp_path) -> None:
    """Item 5: DP with k above SafePub's is judged with that k (it failed the run's own check,
    risk.share_below_2k)."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    cfg = _cfg(tmp_path)
    cfg["privacy"]["k"] = 150
    m = runner.run(load_config(write_config(tmp_path / "c.yaml", cfg)), token="bigk")
    assert m["k"] == 150 and m["differential_privacy"]["k"] < 150
    sizes = Counter(
        tuple(r[q] for q in ("city", "age", "zip")) for r in release_rows(tmp_path / "out")
    )
    assert not sizes or min(sizes.values()) >= 150


def test_flags_override_the_file_before_dp_judges(tmp_path, capsys) -> None:
    """Item 5: `--objective precision` over a file's dm_star (no DP score) is what the DP
    search scores by."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    cfg = _cfg(tmp_path, quality={"objective": "dm_star"})
    path = write_config(tmp_path / "c.yaml", cfg)
    code, _, err = run_inprocess(["run", str(path), "--objective", "precision", "-q"], capsys)
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["differential_privacy"]["objective"] == "precision"


def test_no_objective_named_scores_by_arx_default(tmp_path) -> None:
    """Item 5: a DP run without an objective scores by loss (ARX's default) and says so (its
    one QID's hierarchy listed in full: Loss's weights are the configuration's)."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    cfg = _cfg(tmp_path)
    cfg.pop("quality")
    cfg["quasi_identifiers"] = cfg["quasi_identifiers"][:1]
    cfg["direct_identifiers"] = [*cfg["direct_identifiers"], "age", "zip"]
    cfg["qid_priority"] = ["city"]
    m = runner.run(load_config(write_config(tmp_path / "c.yaml", cfg)), token="noobj")
    dp = m["differential_privacy"]
    assert dp["objective"] == "loss" and "ARX's default" in dp["objective_chosen"]


@pytest.mark.parametrize(
    ("quality", "words"),
    [
        ({"objective": "loss"}, "the loss objective weighs its labels by the values found"),
        (None, "no quality.objective was named and differential_privacy's default, loss,"),
    ],
)
def test_loss_over_a_rule_built_qid_is_refused(tmp_path, capsys, quality, words) -> None:
    """Loss weighs age's bins by the ages found in the whole input (the rule builds its
    hierarchy over them), so the search would score by records the sample left out: refused
    in one line naming the QID and what to do instead, named objective or default."""
    cfg = _cfg(tmp_path, quality=quality)
    if quality is None:
        cfg.pop("quality")
    _refused(tmp_path, cfg, capsys, f"quasi-identifier 'age': {words}")
    with pytest.raises(ConfigError, match="precision, dm or aecs") as err:
        config_from_dict(cfg)
    assert ("name quality.objective" in str(err.value)) == (quality is None)


@pytest.mark.parametrize("objective", ["precision", "dm", "aecs"])
def test_other_objectives_over_rule_built_qids_run(tmp_path, objective) -> None:
    """The alternatives the refusal names run with the same QIDs; a DP manifest and report
    publish no Loss weighed by the input (age's and zip's, hence the aggregate), with the
    sentence why; city's (its hierarchy listed in full) stays."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    cfg = _cfg(tmp_path, quality={"objective": objective})
    m = runner.run(load_config(write_config(tmp_path / "c.yaml", cfg)), token=objective)
    assert m["differential_privacy"]["objective"] == objective
    _assert_no_loss_of_the_input(m, tmp_path / "out")


def test_a_fixed_node_under_loss_publishes_no_loss_of_the_input(tmp_path) -> None:
    """A fixed node searches nothing: loss (named or by default) is accepted, and the
    manifest and report leave out the Loss figures the input's values weigh."""
    _write(tmp_path / "in", make_table(ROWS, seed=3))
    for quality in ({"objective": "loss"}, None):
        cfg = _cfg(tmp_path, quality=quality)
        if quality is None:
            cfg.pop("quality")
        cfg["privacy"]["differential_privacy"]["node"] = {"city": 1, "age": 1, "zip": 1}
        out = tmp_path / f"out-{quality is None}"
        cfg["output"]["path"] = str(out)
        m = runner.run(load_config(write_config(tmp_path / "c.yaml", cfg)), token="fixed")
        assert m["node"] == {"city": 1, "age": 1, "zip": 1}
        _assert_no_loss_of_the_input(m, out)


def _assert_no_loss_of_the_input(m: dict, out: Path) -> None:
    q = m["quality_models"]
    assert "loss" not in q["scores"] and {"dm", "precision", "aecs"} <= set(q["scores"])
    by_name = {r["name"]: r for r in q["qids"]}
    assert "loss" in by_name["city"]
    assert "loss" not in by_name["age"] and "loss" not in by_name["zip"]
    assert "whole input" in q["left_out"]
    assert "Loss is left out" in (out / "report.html").read_text()


def sample_of(config, token: str) -> list[bool]:
    """The run's own sample (through the run, whatever derives its key)."""
    run = Run(config, token=token)
    runner.layout(run)
    sample = run.row_sample()
    return [bool(x) for c in run.chunks() for x in sample.keeps(c, c.n_rows)]


def _with_dates(table: pa.Table, planted: dict[int, str]) -> pa.Table:
    """`table` with a text date column `seen` over three years; `planted` rows hold their own
    text (a finer time, a zone)."""
    days = [f"20{20 + i % 3}-{1 + i % 12:02d}-{1 + i % 28:02d}" for i in range(table.num_rows)]
    return table.append_column("seen", pa.array([planted.get(i, d) for i, d in enumerate(days)]))


def test_no_figure_of_phase_1_over_unsampled_records(tmp_path, caplog) -> None:
    """Nothing phase 1 measured over every input record is published (docs/design.md §4e): an
    age and a date with a time and a zone, planted in rows the sample leaves out, changed the
    manifest's root_bins (the product of the level-0 domains), root_lattice (nodes complying
    with N_RAM over them), a date QID's values_cut_to_first_level and
    time_zones_normalised_to_utc, the report's 'possible bins' and the log line saying them."""
    cfg = _cfg(tmp_path, suppressed_records="drop")
    cfg["privacy"]["differential_privacy"]["node"] = {"city": 1, "age": 1, "zip": 1, "seen": 2}
    cfg["quasi_identifiers"].append(
        {"name": "seen", "type": "date", "levels": ["day", "month", "year"]}
    )
    table = make_table(ROWS, seed=3)
    _write(tmp_path / "in", _with_dates(table, {}))
    token = "phase1"
    unsampled = [i for i, kept in enumerate(sample_of(config_from_dict(cfg), token)) if not kept]
    seen = {}
    for planted in (False, True):
        if planted:
            ages = table.column("age").to_pylist()
            for i in unsampled[:3]:
                ages[i] = 100 + i  # level-0 values no other record has
            table = table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages))
        dates = {i: "2021-05-05T13:37:00+05:00" for i in unsampled[:3]} if planted else {}
        _write(tmp_path / "in", _with_dates(table, dates))
        caplog.clear()
        with caplog.at_level("INFO"):
            m = runner.run(config_from_dict(cfg), token=token)
        report = (tmp_path / "out" / "report.html").read_text()
        assert "root_bins" not in m and "root_lattice" not in m
        (q,) = [q for q in m["quasi_identifiers"] if q["name"] == "seen"]
        assert "values_cut_to_first_level" not in q and "time_zones_normalised_to_utc" not in q
        assert "possible bins" not in report and "possible bins" not in caplog.text
        seen[planted] = (m["node"], m["differential_privacy"]["records_released"], report)
    assert seen[True][:2] == seen[False][:2]
