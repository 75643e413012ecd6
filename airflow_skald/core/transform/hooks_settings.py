"""A transformation's settings (ARX: its part of an ``ARXConfiguration``): asked while the
config is loaded and a run's settings applied, before any data is read (ADR 0060).

When each hook is called:

- ``config_sections`` / ``parse``: the YAML sections it owns, and its settings parsed from
  the config file once (None: not asked for), against the file's folder and its QIDs
  (`ParseContext`);
- ``setting_names`` / ``with_settings`` / ``setting``: its rows of the settings table (CLI
  flags, DAG params, operators' keywords), its settings after a run's, a row's value;
- ``check``: what it refuses of the rest of the config (after the run's settings);
- ``settings_entry`` / ``settings_entries``: its part of the effective settings (the config
  hash), placed after the key ``settings_after`` names (or at several places);
- ``columns``: input columns it reads and releases transformed (never passed through, never
  dropped as a plain direct identifier); ``secrets``: the secret references it reads
  (resolved by the Airflow operators, checked apart from the other keys before any work).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from airflow_skald.core.settings.secret import SecretRef


@dataclass(frozen=True)
class ParseContext:
    """What a transformation's settings are parsed against: the config file's folder
    (relative files) and the quasi-identifiers as the config parsed them (`QidSpec`s, every
    one, in config order)."""

    base_dir: Path | None = None
    qids: tuple[Any, ...] = ()


class SettingsHooks:
    """A transformation's settings: parsed, overridden, checked and described (see the
    module's docstring for when each hook is called); every default adds nothing."""

    #: top-level YAML sections it owns (added to the config's known sections)
    config_sections: ClassVar[tuple[str, ...]] = ()
    #: its rows of the settings table (`with_settings` reads them from a run's settings)
    setting_names: ClassVar[tuple[str, ...]] = ()
    #: the effective settings' key its `settings_entry` follows ("": after the run's own)
    settings_after: ClassVar[str] = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> SettingsHooks | None:
        """Its settings from the whole config mapping (None: not asked for); ConfigError,
        one line naming the setting, when they are wrong."""
        return None

    @classmethod
    def with_settings(
        cls, current: SettingsHooks | None, values: Mapping[str, Any]
    ) -> SettingsHooks | None:
        """Its settings (`current`: the file's, None: not asked for) after a run's settings
        `values` (the settings table's, parsed): `current` when none of its rows is given."""
        return current

    def setting(self, name: str) -> Any:
        """The value of its settings table's row `name` (one of `setting_names`)."""
        raise KeyError(name)

    def check(self, config: Any) -> None:
        """ConfigError, one line, for what it does not run with in `config` (a `SkaldConfig`
        after the run's settings)."""

    def settings_entry(self) -> dict[str, Any]:
        return {}

    def settings_entries(self) -> dict[str, dict[str, Any]]:
        """Its entries of the effective settings by the place they follow (a shared key, as
        `settings_after`): default `settings_entry` after `settings_after`."""
        return {self.settings_after: self.settings_entry()}

    def columns(self) -> tuple[str, ...]:
        return ()

    def secrets(self) -> tuple[SecretRef, ...]:
        return ()
