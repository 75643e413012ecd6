"""ARX 3.9.2's answers recorded in the repository, for the tests that compare the product with
ARX: tests/data/arx_answers/NAME.json holds ARX's JSON (timings and paths left out), the
checksums of the output columns a test compares, and the exact command that produced them.

    answer = arx_answer("NAME", [*adult_input_args(qids), "--k", "5", ...])

returns the recorded answer; the test asserts the product's answer equals it. Where ARX is
found beside the repository (``../shared/arx/arx``, the folder `make bench-arx` uses, and
``java`` on PATH), ARX is also run live with the same arguments and its answer must equal the
recorded one. Without ARX the recorded answer alone is compared: no test is skipped for it.

To record (or re-record) an answer, run the test with ARX beside the repository and
``SKALD_RECORD_ARX=1``: the live answer is written instead of compared. A test whose ARX
arguments differ from the recorded ones fails until its answer is recorded again.

Arguments may name ``{adult}`` (tests/data/adult: ARX's hierarchies), ``{adult_csv}`` (Adult's
table, decompressed from tests/data/adult/adult.csv.gz) and ``{tmp}`` (a fresh temporary
folder, e.g. for ``--output {tmp}/arx.csv``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from adult_files import ADULT, ROOT, adult_csv

#: ARX 3.9.2's command line beside the repository (as `make bench-arx` finds it)
ARX = ROOT.parent / "shared" / "arx" / "arx"
ANSWERS = ROOT / "tests" / "data" / "arx_answers"
RECORD = "SKALD_RECORD_ARX"
#: ARX's figures that differ from run to run (times, memory) or from machine to machine (paths)
_VOLATILE_SUFFIXES = ("_s", "_ms", "_bytes")
_VOLATILE = {"input", "json", "output"}
#: the JVM of a live check: ARX's default heap, one GC thread and the quick compiler only. A
#: check runs ARX for a few seconds, where the parallel GC and the optimising compiler cost
#: about as much CPU as the search (82 -> 48 CPU-s over the recorded answers); the answer is
#: the same, and a user's own JAVA_OPTS wins
_JAVA_OPTS = "-Xmx4g -XX:+UseSerialGC -XX:TieredStopAtLevel=1"


#: the project's own harness of ARX's profitability models (benchmarks/arx_profitability: the
#: same jars, ADR 0046), for `arx_answer(..., command=PROFITABILITY)`
PROFITABILITY = ROOT / "benchmarks" / "arx_profitability" / "arx-profitability"
#: the project's own harness of ARX's adaptive local recoding, ``optimizeIterative``
#: (benchmarks/arx_iterative: the same jars, ADR 0048), for `arx_answer(..., command=ITERATIVE)`
ITERATIVE = ROOT / "benchmarks" / "arx_iterative" / "arx-iterative"


def arx_live() -> bool:
    """ARX can run here: its command beside the repository and a Java runtime."""
    return ARX.is_file() and shutil.which("java") is not None


def adult_input_args(qids: Iterable[str]) -> list[str]:
    """ARX's arguments for Adult with ARX's hierarchies of `qids` (in node order)."""
    args = ["--input", "{adult_csv}", "--sep", ";"]
    for q in qids:
        args += ["--qid", f"{q}={{adult}}/adult_hierarchy_{q}.csv"]
    return args


def column_sha256(values: Iterable[str]) -> str:
    """SHA-256 of a column's values, one line ``value\\n`` each, in record order."""
    return hashlib.sha256("".join(f"{v}\n" for v in values).encode()).hexdigest()


def arx_answer(
    name: str,
    args: Sequence[str],
    *,
    output_columns: Sequence[str] = (),
    volatile: Collection[str] = (),
    places: dict[str, str] | None = None,
    command: Path = ARX,
) -> dict[str, Any]:
    """ARX's recorded answer to `args` (see the module's text), checked against a live run of
    ARX where it is found. `output_columns`: columns of ARX's ``--output`` CSV recorded by
    their checksum (``answer["output_sha256"][column]``, see `column_sha256`). `volatile`:
    more keys (at any depth) left out of the answer, e.g. figures of a time-limited solver.
    `places`: more placeholders of the arguments, e.g. ``{"{table}": folder}`` for a table a
    test generates (recorded as the placeholder). `command`: ARX's command line (default
    ``../shared/arx/arx``; `PROFITABILITY`: the project's harness calling the same jars)."""
    path = ANSWERS / f"{name}.json"
    if os.environ.get(RECORD) == "1":
        if not arx_live():
            raise AssertionError(f"{RECORD}=1 needs ARX at {ARX} and java on PATH")
        answer = _run_live(args, output_columns, volatile, places, command)
        _write(path, args, answer, places, command)
        return answer
    if not path.is_file():
        raise AssertionError(
            f"{path} is missing: record it with ARX beside the repository and {RECORD}=1"
        )
    recorded = json.loads(path.read_text())
    assert recorded["args"] == list(args), (
        f"{path.name}: the test's ARX arguments changed; record again"
    )
    if arx_live():
        live = _run_live(args, output_columns, volatile, places, command)
        assert live == recorded["answer"], f"ARX 3.9.2 run live differs from {path.name}"
    return recorded["answer"]


def assert_arx_release(
    manifest: dict[str, Any], arx: dict[str, Any], statistics: str = "arx_class_statistics"
) -> None:
    """The product's node, suppressed records and classes are ARX's (`arx`: its answer;
    `statistics`: its class statistics to compare, e.g. ``arx_class_statistics_subset``)."""
    stats = arx[statistics]
    assert manifest["node"] == arx["node"]
    assert manifest["n_suppressed"] == stats["suppressed_records"]
    assert manifest["n_equivalence_classes"] == stats["equivalence_classes"]


def dp_grid() -> list[dict[str, Any]]:
    """ARX's k and β of (ε, δ)-DP on a grid of points, each in both modes (`fixed`: all of ε;
    `searched`: ε less the search budget), as benchmarks/dp_arx_fixture.py recorded them (ARX
    needs up to 30 minutes a point: the tests read them recorded only)."""
    return json.loads((ANSWERS / "dp-parameters-grid.json").read_text())["points"]


def dp_grid_point(epsilon: float, delta: float, mode: str) -> dict[str, Any]:
    """The grid's point at (`epsilon`, `delta`) in `mode` (`fixed` or `searched`)."""
    (point,) = [
        p for p in dp_grid() if (p["epsilon"], p["delta"], p["mode"]) == (epsilon, delta, mode)
    ]
    return point


def _run_live(
    args: Sequence[str],
    output_columns: Sequence[str],
    volatile: Collection[str],
    places: dict[str, str] | None = None,
    command: Path = ARX,
) -> dict:
    with tempfile.TemporaryDirectory(prefix="skald-arx-") as tmp:
        where = {"{adult}": str(ADULT), "{adult_csv}": str(adult_csv()), "{tmp}": tmp}
        where.update(places or {})
        concrete = [_substitute(a, where) for a in args]
        env = {**os.environ, "JAVA_OPTS": os.environ.get("JAVA_OPTS", _JAVA_OPTS)}
        done = subprocess.run([str(command), *concrete], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [done.stdout.strip()])[-1]
            raise AssertionError(f"ARX exited with {done.returncode}: {last}")
        answer = _stable(json.loads(done.stdout), {*_VOLATILE, *volatile})
        if output_columns:
            answer["output_sha256"] = _output_checksums(concrete, output_columns)
    return answer


def _substitute(arg: str, where: dict[str, str]) -> str:
    for key, value in where.items():
        arg = arg.replace(key, value)
    return arg


def _stable(value: Any, volatile: Collection[str]) -> Any:
    """ARX's JSON without the keys that change between runs or machines."""
    if isinstance(value, dict):
        return {
            k: _stable(v, volatile)
            for k, v in value.items()
            if k not in volatile and not k.endswith(_VOLATILE_SUFFIXES)
        }
    if isinstance(value, list):
        return [_stable(v, volatile) for v in value]
    return value


def _output_checksums(args: list[str], columns: Sequence[str]) -> dict[str, str]:
    """Checksums of `columns` of the CSV ARX wrote at ``--output`` (separator ``--out-sep``,
    else ``--sep``: ARX's default)."""
    output = Path(args[args.index("--output") + 1])
    sep = (
        args[args.index("--out-sep") + 1] if "--out-sep" in args else args[args.index("--sep") + 1]
    )
    header, *rows = output.read_text().splitlines()
    names = header.split(sep)
    cells = [row.split(sep) for row in rows]
    return {c: column_sha256(r[names.index(c)] for r in cells) for c in columns}


def _write(
    path: Path,
    args: Sequence[str],
    answer: dict,
    places: dict[str, str] | None = None,
    command: Path = ARX,
) -> None:
    program = "../shared/arx/arx" if command == ARX else str(command.relative_to(ROOT))
    record = {
        "arx_version": answer.get("arx_version"),
        "command": shlex.join([program, *args]),
        "placeholders": {
            "{adult}": "tests/data/adult",
            "{adult_csv}": "tests/data/adult/adult.csv.gz, decompressed",
            "{tmp}": "a fresh temporary folder",
            **{key: "a folder the test writes (its table, hierarchies)" for key in places or {}},
        },
        "recorded_by": f"tests/arx_answers.py ({RECORD}=1), ARX 3.9.2 at ../shared/arx/arx",
        "args": list(args),
        "answer": answer,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
