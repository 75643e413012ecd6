"""The research subset is a registered transformation (ADR 0074): its section parsed into the
config's transformations (a keyed dataset's path against the config's folder), its entry of
the effective settings after ``qid_priority``, its manifest key where the schema always had
it, the file that key names read back as written, and what `skald audit` judges with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers_data import config_dict

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write.manifest_schema import schema_keys
from airflow_skald.core.transform import registry
from airflow_skald.core.transform.base import side_file_schema
from airflow_skald.core.transform.research_subset import ResearchSubset
from airflow_skald.core.transform.research_subset.audit import NOT_AUDITED, audited
from airflow_skald.core.transform.research_subset.counts import PopulationCounts, canonical


def test_the_section_is_the_transformations_and_its_entry_follows_qid_priority() -> None:
    assert "research_subset" in registry.config_sections()
    raw = config_dict("/tmp/in", "/tmp/out")
    assert config_from_dict(raw).research_subset is None
    config = config_from_dict({**raw, "research_subset": {"column": "in_study"}})
    assert config.transformation(ResearchSubset) == config.research_subset
    assert config.research_subset == ResearchSubset("in_study") and config.keyed_subset is None
    keys = list(config.settings())
    assert keys[keys.index("qid_priority") + 1] == "research_subset"
    assert config.settings()["research_subset"] == {"column": "in_study"}
    keyed = config_from_dict(
        {**raw, "research_subset": {"path": "keys.csv", "format": "csv", "key": "pid"}},
        base_dir=Path("/data/study"),
    )
    assert keyed.research_subset.input_columns == ("pid",)
    assert keyed.settings()["research_subset"] == {
        "path": "/data/study/keys.csv",
        "format": "csv",
        "key": ["pid"],
    }


def test_its_manifest_key_and_file_read_back() -> None:
    names = [name for name, _ in schema_keys()]
    assert names[names.index("sensitive_counts") + 1] == "population_counts"
    assert names[names.index("population_counts") + 1] == "recoding_steps"
    key = dict(registry.manifest_keys())["population_counts"]
    assert key.schema == side_file_schema("population_counts.json")
    labels = [("b", "1"), ("a", "2"), ("b", "1")]
    counted = canonical(labels, np.array([1, 2, 3]), np.array([4, 5, 6]))
    assert counted.subset.tolist() == [2, 4] and counted.population.tolist() == [5, 10]
    back = PopulationCounts.parse(counted.to_bytes(), "population_counts.json")
    assert back.labels_sha256 == counted.labels_sha256
    assert back.subset.tolist() == [2, 4] and back.population.tolist() == [5, 10]


def test_what_audit_judges_of_a_release_and_of_a_population_table() -> None:
    raw = {**config_dict("/tmp/in", "/tmp/out"), "research_subset": {"column": "in_study"}}
    raw["privacy"]["delta_presence"] = {"min": 0.05, "max": 0.6}
    config = config_from_dict(raw)
    released, not_checked = audited(config, release=True)
    assert released.research_subset is None and [m.config_key for m in released.privacy] == ["k"]
    assert [d["reason"] for d in not_checked] == [NOT_AUDITED]
    assert audited(config, release=False) == (config, [])
    del raw["privacy"]["k"]
    with pytest.raises(DataError, match="holds no population records"):
        audited(config_from_dict(raw), release=True)
    raw["privacy"]["l_diversity"] = [{"attribute": "disease", "l": 2}]
    with pytest.raises(DataError, match="over every record, not the subset's"):
        audited(config_from_dict(raw), release=False)
