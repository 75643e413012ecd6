"""The files a release keeps beside its parts are listed by the transformations that keep
them (`ReleaseHooks.kept_files`, issue 42): a table release asks the registry which of them
its manifest names and copies those beside the rows it reads back."""

from __future__ import annotations

from airflow_skald.core.transform import registry

ENTRY = {"file": "x", "sha256": "0" * 64}


def test_the_registry_lists_the_side_files_the_manifest_names() -> None:
    manifest = {"recoding_steps": ENTRY, "population_counts": ENTRY, "sensitive_counts": ENTRY}
    assert registry.kept_files(manifest) == (
        "sensitive_counts.json",  # suppression's drop mode
        "population_counts.json",  # a research subset
        "recoding_steps.json",  # local recoding
    )
    assert registry.kept_files({"population_counts": ENTRY}) == ("population_counts.json",)
    assert registry.kept_files({"n_records": 3}) == ()
