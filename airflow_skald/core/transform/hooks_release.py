"""A transformation's part of the written release as the manifest states it and `skald
verify` checks it (in ARX, what a criterion's ``isAnonymous`` reads of the output's
``DataHandleOutput``), from the manifest and the release alone: verify runs without a config
(ADR 0060, 0076); and what `skald audit` judges of a table as it is with it.

When each hook is called:

- ``manifest_keys`` (the manifest's schema, `release.write.manifest_schema`): its keys (JSON
  Schema and words: `ManifestKey`), spliced into the schema's order;
- ``manifest_section`` / ``manifest_section_at`` (phase 3, the manifest written from the
  decision; ``_at``: with phase 1's statistics): its keys' values;
- ``check_release`` (`skald verify`, before the classes are counted): its check of its part
  of the written release, from the manifest alone;
- ``counted_columns`` / ``check_classes`` (`skald verify`, the classes counted): the columns
  it has verify count beside the classes, and its check of them; ``released_rows``: the
  rows its release holds as the manifest records them (verify's row count); ``kept_counts``:
  the per-class counts its release keeps beside the parts (a side file), read and checked, which
  verify judges the classes with (`transform.counted.KeptCounts`);
- ``judged_policy`` / ``recheck`` (`skald verify` without a run): the manifest's policy as far
  as the release's classes together judge it, and its own re-check of the rest
  (`transform.counted`);
- ``kept_files`` (a table release, before its rows read back are verified as `skald verify`
  verifies a folder): the files its release keeps beside the parts, by the manifest key that
  names each, copied beside the rows when the manifest names them;
- `skald audit` (`release.check.audit`), in this order: ``audited_config`` (before the
  models' own exclusions, on the config as given), ``audited_models`` (after them, with the
  release's manifest: the models its classes together can be judged by),
  ``audited_columns`` (the input's columns audit checks in every file) and
  ``audited_classes`` (the classes counted, before they are judged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from airflow_skald.core.data.location import DataLocation
    from airflow_skald.core.privacy import ClassTable, PrivacyPolicy
    from airflow_skald.core.transform.counted import (
        CountedRelease,
        JudgedRelease,
        KeptCounts,
        Recheck,
    )
    from airflow_skald.core.transform.encoded import EncodedPlan


@dataclass(frozen=True)
class ManifestKey:
    """One manifest key a transformation writes: its JSON Schema, what it must be (for the
    one-line message of `skald verify`) and what it means (docs/manifest.schema.json)."""

    schema: Mapping[str, Any]
    expects: str
    doc: str
    before: str = "output_format"  # the schema's key it is written before
    meta: Mapping[str, Any] = field(default_factory=dict)


def side_file_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a manifest key naming a side file of the release (`name`, e.g.
    ``population_counts.json``) and its SHA-256."""
    return {
        "type": "object",
        "required": ["file", "sha256"],
        "properties": {
            "file": {"const": name},
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        },
        "additionalProperties": False,
    }


class ReleaseHooks:
    """Its manifest keys and their values, and `skald verify`'s checks of its part of the
    release (see the module's docstring for when each hook is called); every default adds
    nothing and checks nothing."""

    #: its manifest keys, in schema order
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {}
    #: the files its release keeps beside the parts, by the manifest key that names each
    kept_files: ClassVar[Mapping[str, str]] = {}

    def manifest_section(self) -> dict[str, Any]:
        return {}

    def manifest_section_at(self, plan: EncodedPlan) -> dict[str, Any]:
        """Its manifest keys' values when they read phase 1's statistics (`plan`); default
        `manifest_section`."""
        return self.manifest_section()

    @classmethod
    def check_release(
        cls, manifest: Mapping[str, Any], location: DataLocation, parts: Sequence[str]
    ) -> None:
        """VerificationError, one line, when its part of the release is wrong."""

    @classmethod
    def counted_columns(cls, manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Columns of a release `skald verify` counts beside the QIDs and attributes."""
        return ()

    @classmethod
    def check_classes(cls, release: CountedRelease) -> None:
        """VerificationError, one line, when its counted columns are wrong."""

    @classmethod
    def released_rows(cls, manifest: Mapping[str, Any]) -> tuple[int | None, str] | None:
        """The rows its release holds, as the manifest records them, and the manifest's
        field that says so (`skald verify`'s row count; a count None: not checked); None: not
        its to say (the first transformation's answer counts; none: ``n_records``)."""
        return None

    @classmethod
    def kept_counts(cls, path: str, manifest: Mapping[str, Any] | None) -> KeptCounts | None:
        """The per-class counts release `path` keeps beside its parts for `skald verify`, read
        and checked now (DataError / VerificationError, one line); None: it keeps none."""
        return None

    @classmethod
    def judged_policy(
        cls, manifest: Mapping[str, Any] | None, policy: PrivacyPolicy, skipped: list[dict]
    ) -> tuple[PrivacyPolicy, list[dict]]:
        """The manifest's `policy` as far as the release's classes together judge it, and the
        criteria not re-checked (`skipped`, with the reason)."""
        return policy, skipped

    @classmethod
    def recheck(cls, release: JudgedRelease) -> Recheck | None:
        """Its re-check of what `judged_policy` left out, read from the release (its side
        files checked now); None: nothing of its own."""
        return None

    # ------------------------------------------------------------------- skald audit
    @classmethod
    def audited_config(cls, config: Any, release: bool) -> tuple[Any, list[dict]]:
        """`skald audit`, first: `config` (a `SkaldConfig`) as a table as it is can be audited
        with this transformation (`release`: the table is a release's folder), and the models
        it leaves out, each with the reason (DataError, one line: nothing can be audited)."""
        return config, []

    @classmethod
    def audited_models(
        cls, manifest: Mapping[str, Any] | None, models: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], list[dict]]:
        """`skald audit`, after the models' own exclusions: the `models` a release with this
        `manifest` (None: a dataset) is judged by as its classes together are, and the
        others, each with the reason."""
        return models, []

    def audited_columns(self, attributes: Sequence[str]) -> tuple[str, ...]:
        """`skald audit`, the config's configured transformation: the input's columns audit
        reads for the counted `attributes` (checked present in every file): the attributes
        stored in the input and the columns it reads beside them."""
        return tuple(attributes)

    @classmethod
    def audited_classes(
        cls, policy: PrivacyPolicy, star: ClassTable, table: ClassTable
    ) -> tuple[ClassTable, ClassTable]:
        """`skald audit`, the classes counted (`star`: the all-"*" records' class, `table`:
        the others): the classes as `policy` judges them."""
        return star, table
