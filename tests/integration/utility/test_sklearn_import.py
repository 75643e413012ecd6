"""scikit-learn is imported only when a run asks for the utility analysis (ADR 0035): its
import is ~1.1 s of the analysis's ~2.5-3 CPU-s on Adult, so `skald --help`, a run without the
analysis, `skald verify` and `skald audit` never pay it."""

from __future__ import annotations

import subprocess
import sys

_CHECK = """
import sys
from airflow_skald.cli import main
from airflow_skald.core.data.generate import generate_dataset

base = sys.argv[1]
try:
    main(["--help"])
except SystemExit:
    pass
config = generate_dataset(2000, 1000, seed=1, out_dir=base + "/data")
assert main(["run", str(config), "--k", "5", "--output", base + "/plain"]) == 0
assert main(["verify", base + "/plain"]) == 0
main(["audit", str(config)])
print("before", "sklearn" in sys.modules)
assert main(["run", str(config), "--k", "5", "--output", base + "/utility",
             "--utility-target", "health_condition", "--utility-models", "naive_bayes",
             "--utility-folds", "2"]) == 0
print("after", "sklearn" in sys.modules)
"""


def test_scikit_learn_is_imported_only_by_the_utility_analysis(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(("before", "after"))]
    assert lines == ["before False", "after True"], done.stdout[-3000:]
