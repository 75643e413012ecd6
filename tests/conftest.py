"""Shared fixtures; helpers live in skald_testdata.py (tests/airflow has a conftest too)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from skald_testdata import ADULT  # noqa: E402


@pytest.fixture(scope="session")
def adult_df() -> pd.DataFrame:
    if not ADULT.exists():
        pytest.fail(f"Adult dataset not found at {ADULT} (shared/ must sit beside the repo)")
    return pd.read_csv(ADULT / "adult.csv", sep=";")
