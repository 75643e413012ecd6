"""Error types that map to the CLI's exit codes and to failed Airflow tasks.

`SkaldInputError` is the user's problem (bad config, bad data): one line, exit code 2.
`VerificationError` means a written release is not k-anonymous: exit code 1.
Messages never quote personal data: they name the column, file and row, and at most a
categorical label missing from its hierarchy (a configuration problem the user must see).
"""

from __future__ import annotations


class SkaldError(Exception):
    """Base class for every error the product raises on purpose."""


class SkaldInputError(SkaldError):
    """Bad configuration or input data; the run stops before anything is published."""


class ConfigError(SkaldInputError):
    """The YAML configuration (or an override) is invalid."""


class DataError(SkaldInputError):
    """The input data does not match the configuration (missing column, null, unknown value...)."""


class VerificationError(SkaldError):
    """A written release failed the independent k-anonymity check."""
