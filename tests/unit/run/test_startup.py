"""A run's start-up (airflow_skald/core/run/startup.py): importing the core changes nothing;
importing `core.run` (a task that runs) keeps pyarrow from importing pandas on its own once
pyarrow is imported, pandas still works wherever it is asked for, and BLAS runs one thread
unless the environment says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

_CHECK = """
import sys
import airflow_skald.core
assert "pyarrow" not in sys.modules and "numpy" not in sys.modules, "the core's import is heavy"
assert "_AfterPyarrow" not in str(sys.meta_path), "importing the core tuned the process"
import airflow_skald.core.run
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from airflow_skald.core.data.hierarchies import Hierarchy
h = Hierarchy.from_csv_text("q", "a;x\\nb;x\\n", delimiter=";")
assert pc.equal(pa.array(["a", ""]), "").to_numpy(zero_copy_only=False).tolist() == [False, True]
assert pa.array(np.arange(3)).to_numpy().tolist() == [0, 1, 2]
assert "pandas" not in sys.modules, "pyarrow imported pandas"
frame = pa.table({"x": [1, 2]}).to_pandas()  # asked for: imported then
assert "pandas" in sys.modules and frame["x"].tolist() == [1, 2]
assert pa.array(frame["x"]).type == pa.int64()
assert pa.Table.from_pandas(frame).num_rows == 2
print("ok")
"""


def test_pyarrow_imports_pandas_only_when_asked():
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_one_blas_thread_unless_the_environment_says_otherwise():
    code = "import os, airflow_skald.core.run; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "1", out.stderr
    env["OPENBLAS_NUM_THREADS"] = "3"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "3", out.stderr
