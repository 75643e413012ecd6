"""The paper's synthetic dataset generator (docs/design.md §8): determinism, shape, domains, config."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from airflow_skald.core.data.generate import (
    BLOOD_GROUP_HIERARCHY,
    COLUMNS,
    HEALTH_CONDITION_HIERARCHY,
    HEALTH_CONDITIONS,
    PROFESSION_HIERARCHY,
    chunk_table,
    example_criteria,
    generate_dataset,
    paper_config_dict,
    pin_code_pool,
)
from airflow_skald.core.data.random_streams import Sampler

BLOOD_GROUPS = {"A+", "A-", "B+", "B-", "AB+", "AB-", "O+", "O-"}


def _chunks(folder: Path, fmt: str = "parquet") -> list[Path]:
    return sorted(folder.glob(f"chunk-*.{fmt}"))


def _read(folder: Path) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p) for p in _chunks(folder)], ignore_index=True)


def _table(folder: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in _chunks(folder)])


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """100 000 rows: the size from which every PIN code is guaranteed to appear."""
    out = tmp_path_factory.mktemp("big") / "patients"
    generate_dataset(100_000, 40_000, 11, out)
    return _read(out)


def test_same_arguments_give_identical_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "data", tmp_path / "b" / "data"
    generate_dataset(3_000, 1_000, 5, a)
    generate_dataset(3_000, 1_000, 5, b)
    names = [p.name for p in sorted(a.iterdir())]
    assert names == [p.name for p in sorted(b.iterdir())]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_different_seed_gives_different_data(tmp_path: Path) -> None:
    generate_dataset(2_000, 1_000, 5, tmp_path / "s5")
    generate_dataset(2_000, 1_000, 6, tmp_path / "s6")
    for p5, p6 in zip(_chunks(tmp_path / "s5"), _chunks(tmp_path / "s6"), strict=True):
        assert p5.read_bytes() != p6.read_bytes()
    d5, d6 = _read(tmp_path / "s5"), _read(tmp_path / "s6")
    assert (d5["age"] != d6["age"]).mean() > 0.5


def test_rows_do_not_depend_on_chunking(tmp_path: Path) -> None:
    """A row depends only on (seed, row number): re-chunking or truncating changes no value."""
    generate_dataset(70_000, 70_000, 9, tmp_path / "one")
    generate_dataset(70_000, 9_999, 9, tmp_path / "many")
    generate_dataset(12_345, 4_000, 9, tmp_path / "prefix")
    whole = _table(tmp_path / "one")
    assert _table(tmp_path / "many").equals(whole)
    assert _table(tmp_path / "prefix").equals(whole.slice(0, 12_345))


@pytest.mark.parametrize(
    ("rows", "chunk_rows", "sizes"),
    [(2_500, 1_000, [1_000, 1_000, 500]), (1_000, 1_000, [1_000]), (7, 100, [7])],
)
def test_chunk_files_and_row_counts(
    tmp_path: Path, rows: int, chunk_rows: int, sizes: list[int]
) -> None:
    yaml_path = generate_dataset(rows, chunk_rows, 1, tmp_path / "d")
    assert yaml_path == (tmp_path / "d" / "skald.yaml").resolve()
    files = _chunks(tmp_path / "d")
    assert [p.name for p in files] == [f"chunk-{i:05d}.parquet" for i in range(len(sizes))]
    assert [pq.read_metadata(p).num_rows for p in files] == sizes
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == sorted(
        [p.name for p in files] + ["skald.yaml"]
    )  # no temporary files left behind


def test_stale_chunks_of_an_earlier_run_are_removed(tmp_path: Path) -> None:
    generate_dataset(5_000, 1_000, 1, tmp_path / "d")
    generate_dataset(2_000, 1_000, 1, tmp_path / "d", fmt="csv", overwrite=True)
    assert [p.name for p in sorted((tmp_path / "d").glob("chunk-*"))] == [
        "chunk-00000.csv",
        "chunk-00001.csv",
    ]


def test_schema_and_column_order(tmp_path: Path) -> None:
    generate_dataset(1_500, 1_000, 2, tmp_path / "d")
    expected = pa.schema(
        [
            ("patient_id", pa.string()),
            ("name", pa.string()),
            ("address", pa.string()),
            ("blood_group", pa.string()),
            ("profession", pa.string()),
            ("age", pa.int64()),
            ("bmi", pa.float64()),
            ("pin_code", pa.int64()),
            ("health_condition", pa.string()),
        ]
    )
    for path in _chunks(tmp_path / "d"):
        schema = pq.read_schema(path)
        assert schema.names == list(COLUMNS)
        assert schema.equals(expected), schema


def test_domains(big: pd.DataFrame) -> None:
    assert big["age"].min() == 19 and big["age"].max() == 85
    assert big["bmi"].min() == 12.0 and big["bmi"].max() == 36.0
    tenths = big["bmi"].to_numpy() * 10
    assert np.array_equal(big["bmi"].to_numpy(), np.round(tenths) / 10)  # one decimal, exactly
    assert set(big["blood_group"]) == BLOOD_GROUPS
    assert set(big["profession"]) == set(PROFESSION_HIERARCHY) and len(PROFESSION_HIERARCHY) == 16
    assert set(big["health_condition"]) == set(HEALTH_CONDITIONS)
    pins = big["pin_code"]
    assert pins.nunique() == 1347
    assert set(pins) == set(pin_code_pool().tolist())
    assert pins.between(100_000, 999_999).all()


def test_direct_identifiers_look_like_the_paper(big: pd.DataFrame) -> None:
    assert big["patient_id"].is_unique
    assert big["patient_id"].iloc[0].startswith("P0000001-")
    assert big["patient_id"].str.fullmatch(r"P\d{7}-\d{4}-[123]").all()
    # The middle part is the birth year-month, consistent with the age (reference year 2024).
    yy = big["patient_id"].str.slice(9, 11).astype(int)
    mm = big["patient_id"].str.slice(11, 13).astype(int)
    assert (yy == (2024 - big["age"]) % 100).all() and mm.between(1, 12).all()
    assert big["name"].str.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+").all()
    assert big["address"].str.fullmatch(r"(\d{3}|\d{1,2}/\d{3}), [A-Z][a-z]+ [A-Z][a-z]+").all()


def test_patient_ids_past_ten_million_stay_unique_and_ordered() -> None:
    ids = chunk_table(3, 9_999_998, 10_000_002)["patient_id"].to_pylist()
    assert [i.split("-")[0] for i in ids] == ["P9999999", "P10000000", "P10000001", "P10000002"]


@pytest.mark.parametrize("chunk_rows", [1_000, 333, 64])
def test_domain_ends_present_from_1000_rows(tmp_path: Path, chunk_rows: int) -> None:
    generate_dataset(1_000, chunk_rows, 123, tmp_path / "d")
    df = _read(tmp_path / "d")
    assert (df["age"].min(), df["age"].max()) == (19, 85)
    assert (df["bmi"].min(), df["bmi"].max()) == (12.0, 36.0)


def test_distributions_are_realistic_not_uniform(big: pd.DataFrame) -> None:
    pins = big["pin_code"].value_counts()
    assert pins.iloc[0] > 5 * pins.median()  # city codes far more frequent than the rest
    assert (big["pin_code"] < 561_000).mean() > 0.4  # concentrated in one city
    blood = big["blood_group"].value_counts(normalize=True)
    assert 0.28 < blood["O+"] < 0.36 and 0.28 < blood["B+"] < 0.36 and blood["AB-"] < 0.015
    prof = big["profession"].value_counts(normalize=True)
    assert prof.iloc[0] > 5 * prof.iloc[-1]
    ages = big["age"].value_counts()
    assert ages[30] > 5 * ages[80]  # fewer old adults
    assert 23.5 < big["bmi"].mean() < 25.5 and 3 < big["bmi"].std() < 5
    cond = big.groupby(big["age"] >= 60)["health_condition"].value_counts(normalize=True)
    assert cond[(True, "Dementia")] > 5 * cond[(False, "Dementia")]  # conditions follow age


def _share(df: pd.DataFrame, rows: pd.Series) -> pd.Series:
    """Share of each condition among the selected rows (0 for those that do not occur)."""
    share = df.loc[rows, "health_condition"].value_counts(normalize=True)
    return share.reindex(list(HEALTH_CONDITIONS), fill_value=0.0)


def test_health_condition_is_skewed_with_a_rare_tail(big: pd.DataFrame) -> None:
    share = big["health_condition"].value_counts(normalize=True)
    assert len(HEALTH_CONDITIONS) == 30 and set(share.index) == set(HEALTH_CONDITIONS)
    assert list(share.index[:3]) == ["No Chronic Condition", "Hypertension", "Diabetes"]
    assert 0.35 < share.iloc[0] < 0.5 and share.iloc[0] > 3 * share.iloc[1]  # one common value
    assert share.iloc[:5].sum() > 0.6  # a few conditions cover most patients...
    assert (share < 0.005).sum() >= 5 and share.min() < 0.001  # ...and some are rare
    # HEALTH_CONDITIONS lists them most frequent first (near-ties may swap in a sample).
    rank = pd.Series(range(len(share)), index=share.index)[list(HEALTH_CONDITIONS)]
    assert np.corrcoef(rank.to_numpy(), np.arange(len(rank)))[0, 1] > 0.97


def test_health_condition_follows_age_and_bmi(big: pd.DataFrame) -> None:
    mean_age = big.groupby("health_condition")["age"].mean()
    assert mean_age["Hypertension"] > mean_age["Asthma"] + 10
    assert mean_age["Dementia"] > mean_age["Diabetes"] > mean_age["Allergic Rhinitis"] + 10
    young, old = _share(big, big["age"] < 40), _share(big, big["age"] >= 60)
    for rising in ("Hypertension", "Diabetes", "Arthritis", "Cataract", "Dementia"):
        assert old[rising] > 3 * young[rising], rising
    for falling in ("No Chronic Condition", "Asthma", "Allergic Rhinitis", "Eczema", "Migraine"):
        assert young[falling] > 1.25 * old[falling], falling
    assert _share(big, big["age"] < 30)["No Chronic Condition"] > 0.55  # young: mostly healthy
    normal, obese = _share(big, big["bmi"].between(18.5, 24.9)), _share(big, big["bmi"] >= 30)
    assert obese["Diabetes"] > 2 * normal["Diabetes"]
    assert _share(big, big["bmi"] < 18.5)["Tuberculosis"] > 2 * normal["Tuberculosis"]


def test_l_diversity_bites_at_fine_nodes(big: pd.DataFrame) -> None:
    """Most classes of a fine generalisation hold at most 2 distinct conditions (distinct l = 3
    must suppress or generalise them), while a coarse one is diverse."""
    fine = big.groupby(["blood_group", "profession", "age", big["bmi"] // 1])
    assert (fine["health_condition"].nunique() <= 2).mean() > 0.7
    coarse = big.groupby([big["age"] // 10])["health_condition"].nunique()
    assert coarse.min() >= 15


def test_condition_is_chunk_invariant_across_block_boundaries() -> None:
    whole = chunk_table(4, 0, 140_000)
    cuts = [0, 1, 65_535, 65_537, 131_072, 140_000]
    parts = [chunk_table(4, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    assert pa.concat_tables(parts).equals(whole)


def test_other_columns_are_unchanged_by_the_condition_model() -> None:
    """Digest of every column but health_condition, pinned from before the condition model
    changed: the paper experiment's QID distributions (and expected nodes) stay the same."""
    h = hashlib.sha256()
    for start, stop in ((0, 3_000), (64_000, 67_000)):
        table = chunk_table(11, start, stop)
        for name in table.column_names:
            if name != "health_condition":
                h.update("\n".join(map(str, table[name].to_pylist())).encode())
    assert h.hexdigest() == "c8b21a9426c010667729ee87b3532bd2564699608b3047a73bceba568feed8a6"


@pytest.mark.parametrize("shape", [(8,), (5, 30)])
def test_sampler_is_exact_inverse_cdf(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    weights = rng.pareto(1.0, shape) + 1e-4  # skewed, with tiny weights sharing guide cells
    sampler = Sampler(weights, cells=1 << 6)
    cdf = sampler.cdf.reshape(-1, shape[-1])
    for seg, row in enumerate(cdf):
        u = np.r_[0.0, row[:-1], np.nextafter(row, 0.0), rng.random(2_000)]
        u = u[u < 1.0]
        want = np.searchsorted(row, u, side="right")
        got = sampler(u) if len(shape) == 1 else sampler(u, np.full(u.size, seg))
        assert np.array_equal(got, want)


def test_condition_hierarchy_covers_every_condition() -> None:
    assert list(HEALTH_CONDITION_HIERARCHY) == list(HEALTH_CONDITIONS)
    assert all(len(levels) == 1 for levels in HEALTH_CONDITION_HIERARCHY.values())
    assert len(set(HEALTH_CONDITION_HIERARCHY["Hypertension"])) == 1


def test_yaml_lists_an_l_diversity_example(tmp_path: Path) -> None:
    assert example_criteria() == {
        "l_diversity": [{"attribute": "health_condition", "l": 3, "variant": "distinct"}]
    }
    text = generate_dataset(100, 50, 1, tmp_path / "d").read_text(encoding="utf-8")
    config = yaml.safe_load(text)
    assert "l_diversity" not in config["privacy"]  # today's keys only; the example is a comment
    example = text[text.index("# privacy:") :]
    uncommented = yaml.safe_load("\n".join(line[2:] for line in example.splitlines()))
    assert uncommented == {"privacy": {**config["privacy"], **example_criteria()}}
    assert example_criteria()["l_diversity"][0]["attribute"] in config["sensitive_attributes"]


def test_csv_format_holds_the_same_rows(tmp_path: Path) -> None:
    yaml_path = generate_dataset(2_500, 1_000, 4, tmp_path / "csv", fmt="csv")
    generate_dataset(2_500, 1_000, 4, tmp_path / "pq")
    files = _chunks(tmp_path / "csv", "csv")
    assert [p.name for p in files] == ["chunk-00000.csv", "chunk-00001.csv", "chunk-00002.csv"]
    header = files[0].read_text(encoding="utf-8").splitlines()[0]
    assert header.replace('"', "").split(",") == list(COLUMNS)
    from_csv = pd.concat([pd.read_csv(p, sep=",") for p in files], ignore_index=True)
    pd.testing.assert_frame_equal(from_csv, _read(tmp_path / "pq"), check_dtype=False)
    assert from_csv["bmi"].dtype == np.float64 and from_csv["age"].dtype == np.int64
    config = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    assert config["input"] == {"path": ".", "format": "csv", "delimiter": ","}


def test_yaml_is_the_paper_config(tmp_path: Path) -> None:
    yaml_path = generate_dataset(1_200, 500, 8, tmp_path / "patients")
    config = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    assert list(config) == [
        "input",
        "output",
        "chunk_rows",
        "direct_identifiers",
        "sensitive_attributes",
        "quasi_identifiers",
        "privacy",
        "memory",
        "qid_priority",
        "suppressed_records",
    ]
    assert config["input"] == {"path": ".", "format": "parquet"}
    assert config["output"] == {"path": "../patients-anonymised", "format": "parquet"}
    assert config["chunk_rows"] == 500
    assert config["direct_identifiers"] == ["patient_id", "name", "address"]
    assert config["sensitive_attributes"] == ["health_condition"]
    assert config["privacy"] == {"k": 50, "suppression_limit": 0.01}
    assert config["memory"] == {"histogram_bins": None}
    assert config["qid_priority"] == ["age", "bmi", "pin_code", "blood_group", "profession"]
    assert config["suppressed_records"] == "mask"
    qids = {q["name"]: q for q in config["quasi_identifiers"]}
    assert list(qids) == ["blood_group", "profession", "age", "bmi", "pin_code"]
    assert qids["age"] == {"name": "age", "type": "numerical", "min_width": 1}
    assert qids["bmi"]["min_width"] == 0.1 and qids["bmi"]["widths"] == [0.1, 1, 2, 4, 8]
    assert qids["pin_code"] == {
        "name": "pin_code",
        "type": "numerical",
        "min_width": 1,
        "encode": True,
    }
    assert qids["blood_group"]["hierarchy"] == {
        "A+": ["A"],
        "A-": ["A"],
        "B+": ["B"],
        "B-": ["B"],
        "AB+": ["AB"],
        "AB-": ["AB"],
        "O+": ["O"],
        "O-": ["O"],
    }
    # The output folder sits beside the data folder, so a run never writes into its input.
    output = (yaml_path.parent / config["output"]["path"]).resolve()
    assert output == (tmp_path / "patients-anonymised").resolve()


def test_profession_hierarchy_is_functional_4_by_4_in_2_sectors() -> None:
    config = paper_config_dict("in", "out", 10, "parquet")
    hierarchy = config["quasi_identifiers"][1]["hierarchy"]
    assert hierarchy == PROFESSION_HIERARCHY and len(hierarchy) == 16
    domains: dict[str, set[str]] = {}
    sector_of: dict[str, str] = {}
    for profession, (domain, sector) in hierarchy.items():
        domains.setdefault(domain, set()).add(profession)
        assert sector_of.setdefault(domain, sector) == sector  # one parent per domain
    assert {d: len(p) for d, p in domains.items()} == {
        "Healthcare": 4,
        "Education": 4,
        "Creative": 4,
        "Engineering": 4,
    }
    assert sector_of == {
        "Healthcare": "Service",
        "Education": "Service",
        "Creative": "Non-Service",
        "Engineering": "Non-Service",
    }
    assert BLOOD_GROUP_HIERARCHY.keys() == BLOOD_GROUPS


def test_paper_config_dict_round_trips_through_yaml() -> None:
    config = paper_config_dict(Path("/data/in"), "s3://bucket/out", 1_000_000, "csv")
    assert yaml.safe_load(yaml.safe_dump(config, sort_keys=False)) == config
    assert config["input"] == {"path": "/data/in", "format": "csv", "delimiter": ","}
    assert config["output"] == {"path": "s3://bucket/out", "format": "parquet"}
    with pytest.raises(ValueError, match="fmt"):
        paper_config_dict("in", "out", 10, "json")


def test_pin_code_pool_is_fixed() -> None:
    pool = pin_code_pool()
    assert pool.size == 1347 and np.array_equal(pool, np.unique(pool))
    assert np.array_equal(pool, pin_code_pool())
    assert pool.min() >= 560_001 and pool.max() < 600_000
    assert re.fullmatch(r"\d{6}", str(pool[0]))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rows": 0},
        {"rows": -5},
        {"chunk_rows": 0},
        {"seed": -1},
        {"fmt": "json"},
        {"rows": 10.5},
        {"rows": True},
        {"chunk_rows": "5"},
    ],
)
def test_bad_arguments_are_rejected(tmp_path: Path, kwargs: dict) -> None:
    args = {"rows": 10, "chunk_rows": 5, "seed": 0, "out_dir": tmp_path / "d", "fmt": "parquet"}
    with pytest.raises(ValueError):
        generate_dataset(**{**args, **kwargs})


def test_numpy_integers_are_accepted(tmp_path: Path) -> None:
    generate_dataset(np.int64(30), np.int32(10), np.uint8(1), tmp_path / "d")
    assert [pq.read_metadata(p).num_rows for p in _chunks(tmp_path / "d")] == [10, 10, 10]
