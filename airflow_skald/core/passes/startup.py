"""Start-up costs of a run's process (issue 23, ADR 0018): pyarrow's pandas shim primed
without pandas, one OpenBLAS thread. Applied on importing `airflow_skald.core.run` or
`airflow_skald.core.passes` (what the engines read), which the CLI's `main` does first and a
task does when it runs; never by merely importing the core: a
DAG processor or scheduler that parses the operators is left as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types


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


class _AfterPyarrow(importlib.abc.MetaPathFinder):
    """Runs `_arrow_without_pandas` right after pyarrow's own import, whoever imports it first
    (one shot: the finder leaves `sys.meta_path` at that import)."""

    def find_spec(
        self, name: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "pyarrow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def load_then_prime(module: types.ModuleType) -> None:
            load(module)  # in sys.modules already: the priming's `import pyarrow` finds it
            _arrow_without_pandas()

        spec.loader.exec_module = load_then_prime  # type: ignore[method-assign]
        return spec


def _single_threaded_blas() -> None:
    """One OpenBLAS thread unless the environment says otherwise (and numpy is not loaded
    yet): the core multiplies no float matrices (its dot products are integer ones, which BLAS
    does not run), while starting OpenBLAS's thread pool costs ~0.1 s of CPU at numpy's import
    on 2 cores (issue 23). Worker processes inherit it."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def prepare() -> None:
    """Tune this process for a run (idempotent). Before numpy and pyarrow are imported it
    takes both costs away; later, whatever can still be done."""
    _single_threaded_blas()
    if "pyarrow" in sys.modules:
        _arrow_without_pandas()
    elif not any(isinstance(f, _AfterPyarrow) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPyarrow())
