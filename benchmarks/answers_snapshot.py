"""The product's answers on a fixed set of runs, to show a speed change left them alone
(issue 23): chosen node, root, figures and the SHA-256 of every part file.

    python benchmarks/answers_snapshot.py --out after.json [--commit REV] [--work DIR]
    python benchmarks/answers_snapshot.py --out before.json --commit 87fb4ae
    python benchmarks/answers_snapshot.py --compare before.json after.json

Runs (each `skald run` in a fresh process): Adult with ARX's hierarchies (k = 5 and 10,
entropy l = 3, equal t = 0.2), the paper's table (1M rows in 5 chunks, k = 50, `--root
adaptive` and `--root paper`), the CUP- and FARS-shaped tables (k = 5, 0 and 5 %) and the
clinical table built from rules. `--commit` runs the package as it was at that commit
(`git archive`, PYTHONPATH), with the same data and configs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from arx_tables import write_table
from bench_criteria import _old_source
from paper_data import generate

ANSWER = ("node", "root_node", "dm_star", "n_suppressed", "n_equivalence_classes", "precision")


def _runs(work: Path) -> dict[str, tuple[Path, list[str]]]:
    """Case -> (config, extra flags); data written once per work folder."""
    runs: dict[str, tuple[Path, list[str]]] = {}
    for case, table, k, limit, criterion in (
        ("adult-k5-0", "adult", 5, 0.0, None),
        ("adult-k10-5", "adult", 10, 0.05, None),
        ("adult-l3-5", "adult", 5, 0.05, "l3"),
        ("adult-t0.2-5", "adult", 5, 0.05, "t0.2"),
        ("cup-5", "cup", 5, 0.05, None),
        ("fars-0", "fars", 5, 0.0, None),
        ("fars-5", "fars", 5, 0.05, None),
    ):
        folder = work / table
        if table == "adult":
            body = write_table(table, folder, k=k, limit=limit, criterion=criterion)
        elif (folder / "body.yaml").exists():
            body = yaml.safe_load((folder / "body.yaml").read_text())
        else:
            body = write_table(table, folder)
            (folder / "body.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
        body["privacy"].update(k=k, suppression_limit=limit)
        path = work / f"{case}.yaml"
        path.write_text(yaml.safe_dump(body, sort_keys=False))
        runs[case] = (path, [])
    paper = work / "paper-5x200000"
    generate(1_000_000, 200_000, paper)
    for root in ("adaptive", "paper"):
        runs[f"paper-{root}"] = (paper / "skald.yaml", ["--k", "50", "--root", root])
    clinical = work / "clinical-100000"
    if not (clinical / "skald.yaml").exists():
        cmd = [sys.executable, "-m", "airflow_skald.cli", "generate", "--rows", "100000"]
        cmd += ["--chunk-rows", "50000", "--seed", "1", "--schema", "clinical"]
        subprocess.run(cmd + ["--out", str(clinical)], check=True, stdout=subprocess.DEVNULL)
    runs["clinical"] = (clinical / "skald.yaml", [])
    return runs


def snapshot(work: Path, commit: str | None) -> dict:
    env = dict(os.environ)
    if commit:
        env["PYTHONPATH"] = str(_old_source(commit, work))
    out = {}
    for case, (config, flags) in _runs(work).items():
        release = work / "out" / case
        cmd = [sys.executable, "-m", "airflow_skald.cli", "run", str(config), "--quiet"]
        cmd += ["--output", str(release), "--overwrite", *flags]
        subprocess.run(cmd, check=True, env=env, cwd="/", stdout=subprocess.DEVNULL)
        manifest = json.loads((release / "manifest.json").read_text())
        parts = sorted(release.glob("part-*"))
        out[case] = {key: manifest.get(key) for key in ANSWER} | {
            "evaluated": manifest["lattice"]["evaluated"],
            "parts_sha256": [hashlib.sha256(p.read_bytes()).hexdigest() for p in parts],
        }
        print(case, json.dumps(out[case]), flush=True)
    return out


def compare(before: dict, after: dict) -> int:
    """Cases whose answers or part bytes differ (lattice nodes evaluated may differ)."""
    bad = 0
    for case in sorted(before.keys() | after.keys()):
        a, b = before.get(case), after.get(case)
        if a is None or b is None:
            print(f"{case}: only in {'after' if a is None else 'before'}")
            continue
        diff = [k for k in (*ANSWER, "parts_sha256") if a.get(k) != b.get(k)]
        note = f"evaluated {a['evaluated']} -> {b['evaluated']}"
        print(
            f"{case}: {'DIFFERENT ' + ', '.join(diff) if diff else 'same answer, same bytes'}; {note}"
        )
        bad += bool(diff)
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--commit")
    parser.add_argument("--work", type=Path, default=Path("/tmp/skald-answers"))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        return compare(*(json.loads(p.read_text()) for p in args.compare))
    if args.out is None:
        parser.error("--out or --compare is needed")
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(snapshot(args.work, args.commit), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
