"""Pure-Python SKALD core: no Airflow import anywhere below this package."""

from __future__ import annotations

import importlib.abc
import os
import sys


class _PandasWithheld(importlib.abc.MetaPathFinder):
    """Answers "no such module" for pandas while pyarrow's pandas shim first looks for it."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas withheld from pyarrow's shim", name=name)
        return None


def _arrow_without_pandas() -> None:
    """Let pyarrow's pandas shim record pandas as absent, unless pandas is already loaded.

    pyarrow imports pandas (0.4-0.7 s of a 1-3 s run) the first time it converts any Python
    value or asks whether an object is array-like, even when no pandas object is in sight. The
    core never hands pyarrow a pandas object. The shim's first, non-raising look is answered
    "not installed"; a call that needs pandas (`to_pandas`, `Table.from_pandas`, a Series given
    to `pa.array`) still imports it then, as it always does on that path (issue 23).
    """
    if "pandas" in sys.modules:
        return
    finder = _PandasWithheld()
    sys.meta_path.insert(0, finder)
    try:
        import pyarrow

        pyarrow.array([])  # the shim's first look: is_array_like, raise_=False
    finally:
        sys.meta_path.remove(finder)


def _single_threaded_blas() -> None:
    """One OpenBLAS thread unless the environment says otherwise (and numpy is not loaded
    yet): the core multiplies no float matrices (its dot products are integer ones, which BLAS
    does not run), while starting OpenBLAS's thread pool costs ~0.1 s of CPU at numpy's import
    on 2 cores (issue 23). Worker processes inherit it."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


_single_threaded_blas()
_arrow_without_pandas()
