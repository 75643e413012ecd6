"""Suppression is a transformation every config holds (ADR 0075): its settings from the file
(or the rows' defaults) and a run's, its two entries of the effective settings where they
always stood, its manifest keys where the schema always had them, and what verify reads back."""

from __future__ import annotations

from fractions import Fraction

from helpers_data import config_dict

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.release.write.manifest_schema import schema_keys
from airflow_skald.core.transform import registry
from airflow_skald.core.transform.suppression import Suppression


def test_every_config_suppresses_and_a_run_sets_it() -> None:
    raw = config_dict("/tmp/in", "/tmp/out")
    del raw["privacy"]["suppression_limit"]
    config = config_from_dict(raw)
    assert config.transformation(Suppression) == config.suppression == Suppression()
    assert (config.suppression.limit, config.suppression.records) == (Fraction(0), "mask")
    run = config.with_overrides({"suppression_limit": "0.2", "suppressed_records": "drop"})
    assert run.suppression == Suppression(Fraction(1, 5), "drop") and run.suppression.drop
    assert (run.setting("suppression_limit"), run.setting("suppressed_records")) == (
        Fraction(1, 5),
        "drop",
    )
    keys = list(run.settings())  # the limit after the models', the mode after qid_priority
    assert keys[keys.index("chunk_rows") - 1] == "suppression_limit"
    assert keys[keys.index("qid_priority") + 1] == "suppressed_records"
    assert run.settings()["suppression_limit"] == "1/5"
    masked = run.with_transformation(run.suppression.masked())
    assert (
        masked.suppression.records == "mask"
        and masked.transformations[1:] == (run.transformations[1:])
    )


def test_manifest_keys_in_their_place_and_read_back() -> None:
    names = [name for name, _ in schema_keys()]
    assert names[names.index("k") + 1 : names.index("k") + 3] == ["suppression_limit", "privacy"]
    assert names[names.index("chunks") + 1] == "suppressed_records"
    assert dict(registry.manifest_keys())["suppressed_records"].schema == {"enum": ["mask", "drop"]}
    manifest = {"suppression_limit": 0.1, "privacy": {"suppression_limit": "1/10"}}
    assert Suppression.manifest_limit(manifest) == Fraction(1, 10)
    assert Suppression.manifest_limit({}) is None
    assert not Suppression.manifest_drops(manifest) and not Suppression.manifest_drops(None)
    assert Suppression.manifest_drops({"suppressed_records": "drop"})
