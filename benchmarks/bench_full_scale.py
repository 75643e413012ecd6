"""Full scale: every quality objective against DM*, and the adaptive root against paper mode.

Issue 22 (speed): at 125 x 1M rows of the paper's data (k = 50, the generated skald.yaml),
every objective's whole `skald run --objective O` within 1.2x the DM* run's CPU. Issue 23
(item 3): the default `--root adaptive` ends at paper mode's root and node, and costs
<= 1.1x CPU and <= 1.2x peak RSS of `--root paper`.

Each run is a fresh process under `/usr/bin/time -f "%U %S %M"` (CPU = user + system; peak
RSS = %M). The cases are alternated within a round (the order rotates by one each round) so
that a change in the shared machine's load falls on all of them; the load average is recorded
before every run. Case `dm_star` is the DM* run with the default adaptive root (the reference
for both issues); `root_paper` is the same run with `--root paper`.

    skald generate --rows 125000000 --chunk-rows 1000000 --seed 1 --out /tmp/skald-full/data
    python benchmarks/bench_full_scale.py --chunks 125 --rounds 2
    python benchmarks/bench_full_scale.py --chunks 25 --rounds 2 --cases dm_star,root_paper
    python benchmarks/bench_full_scale.py --summarize   # tables from the saved runs only

With --chunks below the data folder's count, the first N chunks are linked into
`<work>/data<N>` and read from there. Runs are appended to `<results>/runs.jsonl` as they
finish (a partial session keeps what it measured); the tables go to `<results>/summary.json`
and `<results>/summary.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OBJECTIVES = ["dm_star", "dm_star_arx", "dm", "aecs", "loss", "nu_entropy", "precision", "height"]
CASES = OBJECTIVES + ["root_paper"]


def _input(data: Path, work: Path, chunks: int) -> Path:
    """The folder holding the first `chunks` chunks (the data folder itself when all)."""
    files = sorted(data.glob("chunk-*.parquet"))
    if len(files) < chunks:
        raise SystemExit(f"{data} has {len(files)} chunks, fewer than {chunks}")
    if len(files) == chunks:
        return data
    folder = work / f"data{chunks}"
    folder.mkdir(parents=True, exist_ok=True)
    for f in files[:chunks]:
        link = folder / f.name
        if not link.exists():
            link.symlink_to(f)
    return folder


def _config(data: Path, work: Path, chunks: int) -> Path:
    """The data's skald.yaml with an absolute input path (k = 50 etc. unchanged)."""
    body = yaml.safe_load((data / "skald.yaml").read_text())
    body["input"]["path"] = str(_input(data, work, chunks))
    body["output"]["path"] = str(work / f"out-{chunks}")
    path = work / f"cfg-{chunks}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def run_case(config: Path, work: Path, chunks: int, case: str) -> dict:
    out = work / f"out-{chunks}-{case}"
    objective = "dm_star" if case == "root_paper" else case
    root = "paper" if case == "root_paper" else "adaptive"
    cmd = [sys.executable, "-m", "airflow_skald.cli", "run", str(config), "--quiet"]
    cmd += ["--output", str(out), "--objective", objective, "--root", root, "--overwrite"]
    timing = work / "time.txt"
    load = os.getloadavg()
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-o", str(timing), "-f", "%U %S %M", *cmd],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{case}: skald run failed\n{done.stderr[-2000:]}")
    user, system, rss_kb = timing.read_text().split()[-3:]
    m = json.loads((out / "manifest.json").read_text())
    return {
        "chunks": chunks,
        "case": case,
        "objective": objective,
        "root": root,
        "cpu_s": round(float(user) + float(system), 2),
        "user_s": float(user),
        "sys_s": float(system),
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(int(rss_kb) / 1024, 1),
        "load_before": [round(x, 2) for x in load],
        "node": m["node_paper"],
        "root_node": m["root_node_paper"],
        "root_mode": m.get("root_mode"),
        "score": m["quality_models"]["scores"][objective],
        "dm_star": m["dm_star"],
        "n_suppressed": m["n_suppressed"],
        "evaluated": m["lattice"]["evaluated"],
        "lattice_nodes": m["lattice"]["nodes"],
        "cmd": " ".join(cmd[1:]).replace(str(sys.executable), "python"),
    }


def _range(xs: list[float], digits: int = 2) -> str:
    lo, hi = round(min(xs), digits), round(max(xs), digits)
    if digits == 0:
        lo, hi = int(lo), int(hi)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def summarize(runs: list[dict]) -> dict:
    """Per chunk count and case: ranges over rounds; ratios to dm_star within each round."""
    out: dict = {}
    for chunks in sorted({r["chunks"] for r in runs}, reverse=True):
        mine = [r for r in runs if r["chunks"] == chunks]
        rounds = sorted({r["round"] for r in mine})
        by = {(r["round"], r["case"]): r for r in mine}
        cases = [c for c in CASES if any(r["case"] == c for r in mine)]
        rows = {}
        for case in cases:
            rs = [r for r in mine if r["case"] == case]
            ratio_cpu = [
                by[(k, case)]["cpu_s"] / by[(k, "dm_star")]["cpu_s"]
                for k in rounds
                if (k, case) in by and (k, "dm_star") in by
            ]
            ratio_rss = [
                by[(k, case)]["peak_rss_mb"] / by[(k, "dm_star")]["peak_rss_mb"]
                for k in rounds
                if (k, case) in by and (k, "dm_star") in by
            ]
            rows[case] = {
                "runs": len(rs),
                "node": sorted({r["node"] for r in rs}),
                "root_node": sorted({r["root_node"] for r in rs}),
                "score": sorted({str(r["score"]) for r in rs}),
                "evaluated": sorted({r["evaluated"] for r in rs}),
                "cpu_s": [min(r["cpu_s"] for r in rs), max(r["cpu_s"] for r in rs)],
                "wall_s": [min(r["wall_s"] for r in rs), max(r["wall_s"] for r in rs)],
                "peak_rss_mb": [
                    min(r["peak_rss_mb"] for r in rs),
                    max(r["peak_rss_mb"] for r in rs),
                ],
                "cpu_vs_dm_star": [round(min(ratio_cpu), 3), round(max(ratio_cpu), 3)]
                if ratio_cpu
                else None,
                "rss_vs_dm_star": [round(min(ratio_rss), 3), round(max(ratio_rss), 3)]
                if ratio_rss
                else None,
                "load_before": [
                    min(r["load_before"][0] for r in rs),
                    max(r["load_before"][0] for r in rs),
                ],
            }
        out[str(chunks)] = {"rounds": len(rounds), "cases": rows}
    return out


def markdown(summary: dict, runs: list[dict]) -> str:
    lines = ["# Full scale: objectives and root modes", ""]
    for chunks, s in summary.items():
        rows = s["cases"]
        lines += [
            f"## {chunks} chunks x 1M rows, k = 50 ({s['rounds']} round(s); ranges over them)",
            "",
            "| case | runs | node | score | evaluated | CPU s | vs DM* CPU (per round) | "
            "min / DM* min | peak RSS MB | load (1 min) |",
            "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for case, r in rows.items():
            ratio = r["cpu_vs_dm_star"]
            mins = r["cpu_s"][0] / rows["dm_star"]["cpu_s"][0] if "dm_star" in rows else None
            lines.append(
                f"| {case} | {r['runs']} | {' / '.join(r['node'])} | {' / '.join(r['score'])} | "
                f"{'/'.join(str(e) for e in r['evaluated'])} | {_range(r['cpu_s'], 1)} | "
                f"{_range(ratio) if ratio else ''} | {round(mins, 2) if mins else ''} | "
                f"{_range(r['peak_rss_mb'], 0)} | "
                f"{_range(r['load_before'], 1)} |"
            )
        if "root_paper" in rows and "dm_star" in rows:
            a, p = rows["dm_star"], rows["root_paper"]
            lines += [
                "",
                "| root mode | root node | node | CPU s | peak RSS MB |",
                "|---|---|---|---:|---:|",
                f"| adaptive (default) | {' / '.join(a['root_node'])} | {' / '.join(a['node'])} "
                f"| {_range(a['cpu_s'], 1)} | {_range(a['peak_rss_mb'], 0)} |",
                f"| paper | {' / '.join(p['root_node'])} | {' / '.join(p['node'])} "
                f"| {_range(p['cpu_s'], 1)} | {_range(p['peak_rss_mb'], 0)} |",
                "",
                "adaptive / paper per round: CPU "
                + _range([1 / x for x in p["cpu_vs_dm_star"]])
                + ", peak RSS "
                + _range([1 / x for x in p["rss_vs_dm_star"]])
                + " (targets <= 1.1 and <= 1.2); min / min: CPU "
                + str(round(a["cpu_s"][0] / p["cpu_s"][0], 2))
                + ", peak RSS "
                + str(round(a["peak_rss_mb"][0] / p["peak_rss_mb"][0], 2))
                + ".",
            ]
        lines.append("")
    lines += ["## Runs", "", "| chunks | round | case | CPU s | wall s | RSS MB | load |"]
    lines += ["|---:|---:|---|---:|---:|---:|---|"]
    for r in runs:
        lines.append(
            f"| {r['chunks']} | {r['round']} | {r['case']} | {r['cpu_s']} | {r['wall_s']} | "
            f"{r['peak_rss_mb']} | {' '.join(str(x) for x in r['load_before'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=125)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated of {CASES}")
    p.add_argument("--data", type=Path, default=Path("/tmp/skald-full/data"))
    p.add_argument("--work", type=Path, default=Path("/tmp/skald-full"))
    p.add_argument("--results", type=Path, default=ROOT / "results" / "full-scale")
    p.add_argument("--summarize", action="store_true", help="only rebuild the tables")
    p.add_argument("--warmup", action="store_true", help="one untimed DM* run first (page cache)")
    args = p.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if set(cases) - set(CASES):
        p.error(f"unknown cases {sorted(set(cases) - set(CASES))}; known: {', '.join(CASES)}")
    args.results.mkdir(parents=True, exist_ok=True)
    log = args.results / "runs.jsonl"
    if not args.summarize:
        config = _config(args.data, args.work, args.chunks)
        previous = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        if args.warmup:
            run_case(config, args.work, args.chunks, "dm_star")
        first = 1 + max((r["round"] for r in previous if r["chunks"] == args.chunks), default=0)
        for k in range(args.rounds):
            order = cases[k % len(cases) :] + cases[: k % len(cases)]
            for case in order:
                row = {"round": first + k, **run_case(config, args.work, args.chunks, case)}
                print(json.dumps(row), flush=True)
                with log.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    runs = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    summary = summarize(runs)
    (args.results / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (args.results / "summary.md").write_text(markdown(summary, runs))
    print(markdown(summary, runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
