"""A staged release's side files (`transform.hooks_phases.SideFiles`): a file a transformation
keeps beside the parts so that `skald verify` re-checks the release from the release alone
(drop mode's ``sensitive_counts.json``, a research subset's ``population_counts.json``, local
recoding's ``recoding_steps.json``), written atomically into the staging folder and named in
the manifest about to be written with its SHA-256 (``{"file", "sha256"}``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_skald.core.release.write.commit import write_bytes_atomic
from airflow_skald.core.release.write.manifest_schema import Manifest

MANIFEST_WHERE = "the manifest about to be written"


@dataclass(frozen=True)
class StagedSideFiles:
    """The side files of the release staged in `staging`."""

    staging: str

    def keep(self, manifest: Mapping[str, Any], key: str, name: str, data: bytes) -> dict:
        """`data` written as `name` beside the parts; the manifest naming it under `key`,
        in the schema's order."""
        write_bytes_atomic(f"{self.staging.rstrip('/')}/{name}", data)
        entry = {"file": name, "sha256": hashlib.sha256(data).hexdigest()}
        return Manifest.parse({**manifest, key: entry}, MANIFEST_WHERE).to_dict()
