"""What an auditor recomputes from a manifest alone (auditor review, session 16): the config
hash from the listed settings, the input fingerprint from the listed files, every hierarchy's
hash from its rows, the hierarchical t-closeness criterion's hierarchy, decimal widths."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from helpers_data import (
    CITY_HIERARCHY,
    config_dict,
    write_config,
    write_dataset,
)

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.data.io import file_version
from airflow_skald.core.run.runner import run

DISEASE_HIERARCHY = {"flu": ["infection"], "asthma": ["chronic"], "gout": ["chronic"]}
DISEASE_HIERARCHY["none"] = ["healthy"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_an_auditor_recomputes_the_hashes_from_the_manifest(tmp_path: Path, monkeypatch) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    files = write_dataset(inp, n_files=2, rows=60)
    body = config_dict(inp, out, k=2, suppression_limit=0.5, chunk_rows=25)
    body["quasi_identifiers"][1]["min_width"] = 0.5  # a decimal width
    body["privacy"]["t_closeness"] = [
        {
            "attribute": "disease",
            "t": 0.9,
            "distance": "hierarchical",
            "hierarchy": DISEASE_HIERARCHY,
        }
    ]
    manifest = run(load_config(write_config(tmp_path / "skald.yaml", body)))

    settings = manifest["settings"]
    assert _sha(json.dumps(settings, sort_keys=True)) == manifest["config_sha256"]
    assert settings["input"] == {"path": str(inp), "format": "parquet", "delimiter": ","}
    assert settings["chunk_rows"] == 25 and settings["qid_priority"] == ["age", "city", "zip"]
    assert settings["output"]["path"] == str(out)

    # the input: each file with its rows and version; the chunks cut from them hash to the
    # fingerprint (chunk ids in file order, `chunk_rows` rows each, the rest last)
    listed = manifest["input_files"]
    assert [f["file"] for f in listed] == [str(f) for f in sorted(files)]
    assert [f["rows"] for f in listed] == [60, 60]
    assert [f["version"] for f in listed] == [file_version(str(f)) for f in sorted(files)]
    chunks = []
    for f in listed:
        for start in range(0, f["rows"], settings["chunk_rows"]):
            n = min(settings["chunk_rows"], f["rows"] - start)
            chunks.append(
                {
                    "chunk_id": len(chunks),
                    "file": f["file"],
                    "row_start": start,
                    "n_rows": n,
                    "version": f["version"],
                }
            )
    assert len(chunks) == manifest["chunks"] == 6
    assert _sha(json.dumps(chunks, sort_keys=True)) == manifest["input_fingerprint"]

    # hierarchies by the hash of their rows (value, labels up to the top "*"), everywhere
    city_rows = [[v, *labels, "*"] for v, labels in CITY_HIERARCHY.items()]
    city = next(q for q in manifest["quasi_identifiers"] if q["name"] == "city")
    assert city["hierarchy_sha256"] == _sha(json.dumps(city_rows))
    disease_rows = [[v, *labels, "*"] for v, labels in DISEASE_HIERARCHY.items()]
    t_model = [m for m in manifest["privacy"]["models"] if m["model"] == "t-closeness"]
    assert t_model == [
        {
            "model": "t-closeness",
            "attribute": "disease",
            "distance": "hierarchical",
            "t": "0.9",
            "hierarchy_sha256": _sha(json.dumps(disease_rows)),
        }
    ]
    reached = [m for m in manifest["privacy_models"] if m["model"] == "t-closeness"]
    assert reached[0]["hierarchy_sha256"] == t_model[0]["hierarchy_sha256"]
    age = next(q for q in manifest["quasi_identifiers"] if q["name"] == "age")
    assert age["min_width"] == "0.5"


SCHEMA = Path(__file__).resolve().parents[3] / "docs" / "manifest.schema.json"


def test_written_manifests_validate_against_the_published_schema(tmp_path: Path, monkeypatch):
    """An auditor's own JSON Schema validator accepts what the product writes: the global run
    with l-diversity and t-closeness (at-risk classes listed), CSV output, and the per-chunk
    baseline's manifest."""
    import jsonschema

    from airflow_skald.core.run.baseline import run_per_chunk

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    inp = tmp_path / "in"
    write_dataset(inp, n_files=2, rows=60)
    body = config_dict(inp, tmp_path / "out", k=2, suppression_limit=0.5, chunk_rows=25)
    body["privacy"]["l_diversity"] = [{"attribute": "disease", "l": 2}]
    body["privacy"]["t_closeness"] = [{"attribute": "disease", "t": 0.9}]
    body["output"]["format"] = "csv"
    config = load_config(write_config(tmp_path / "skald.yaml", body))
    written = [run(config)]
    base = load_config(
        write_config(tmp_path / "base.yaml", {**body, "output": {"path": str(tmp_path / "b")}})
    )
    written.append(run_per_chunk(base))
    for manifest in written:
        jsonschema.validate(manifest, schema)
        on_disk = json.loads(
            (Path(manifest["settings"]["output"]["path"]) / "manifest.json").read_text()
        )
        assert on_disk == manifest
    assert "at_risk_classes" in written[0] and written[1]["mode"] == "per_chunk"
