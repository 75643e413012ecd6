"""Core speed and memory benchmarks (issues 2 and 5). Prints every figure as a rate or ratio.

    python benchmarks/bench_core.py [--chunk-rows 1000000] [--chunks 5] [--work /tmp/skald-bench]

Measures, on the paper's synthetic dataset (5 QIDs, Parquet):
- each pass's time against merely reading the same columns with pyarrow (I/O floor ratio);
- histogram-pass throughput in rows/s;
- lattice-search time and nodes evaluated vs lattice size;
- peak RSS of `skald run` (a fresh process) with few vs many chunks of the same size;
- Adult with its 8 ARX hierarchies at level 0 (3.2e8 possible bins): time and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult"


def _read_floor(files: list[Path], columns: list[str] | None) -> float:
    t = time.perf_counter()
    for f in files:
        pq.read_table(f, columns=columns)
    return time.perf_counter() - t


def _run_peak(config: Path, output: Path, extra: list[str]) -> dict:
    """`skald run` in a fresh process; peak RSS from the manifest (getrusage)."""
    cmd = [
        sys.executable,
        "-m",
        "airflow_skald.cli",
        "run",
        str(config),
        "--output",
        str(output),
        "--quiet",
        *extra,
    ]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    manifest = json.loads((output / "manifest.json").read_text())
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(manifest["peak_rss_bytes"] / 2**20, 1),
        "timings_s": manifest["timings_s"],
        "node_paper": manifest["node_paper"],
        "lattice": manifest["lattice"],
        "root_bins": manifest["root_bins"],
    }


def _generate(rows: int, chunk_rows: int, out: Path) -> None:
    """Generate in a child process, so this process stays small: Linux children inherit the
    parent's peak RSS (ru_maxrss survives fork+exec), which would inflate every measurement."""
    if not (out / "skald.yaml").exists():
        cmd = [
            sys.executable,
            "-m",
            "airflow_skald.cli",
            "generate",
            "--rows",
            str(rows),
            "--chunk-rows",
            str(chunk_rows),
            "--seed",
            "1",
            "--out",
            str(out),
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def bench_passes(data: Path, k: int) -> dict:
    from airflow_skald.core.config import load_config
    from airflow_skald.core.generalise import released_columns
    from airflow_skald.core.pipeline import (
        count_histogram,
        list_chunks,
        plan_root,
        scan_domain,
        search_lattice,
        write_parts,
    )
    from airflow_skald.core.release import discard, prepare_staging

    config = load_config(data / "skald.yaml", {"k": k, "output_path": str(data.parent / "out")})
    chunks = list_chunks(config)
    files = sorted({Path(c.file) for c in chunks})
    rows = sum(c.n_rows for c in chunks)
    read_qids = min(_read_floor(files, config.qid_names) for _ in range(2))
    t = time.perf_counter()
    stats = scan_domain(config, chunks)
    plan = plan_root(config, stats)
    encode = time.perf_counter() - t
    t = time.perf_counter()
    hist = count_histogram(config, plan, chunks)
    histogram = time.perf_counter() - t
    t = time.perf_counter()
    decision = search_lattice(config, plan, hist)
    search = time.perf_counter() - t
    staging = str(data.parent / "bench-staging")
    prepare_staging(staging)
    t = time.perf_counter()
    write_parts(config, plan, decision, chunks, staging)
    generalise = time.perf_counter() - t
    discard(staging)
    read_released = min(
        _read_floor(files, released_columns(config, plan.stats.columns)) for _ in range(2)
    )
    return {
        "rows": rows,
        "chunks": len(chunks),
        "read_qid_columns_s": round(read_qids, 3),
        "encode_s": round(encode, 3),
        "histogram_s": round(histogram, 3),
        "histogram_rows_per_s": round(rows / histogram),
        "encode_over_read": round(encode / read_qids, 2),
        "histogram_over_read": round(histogram / read_qids, 2),
        "root_bins_possible": plan.root_bins,
        "root_bins_nonempty": hist.n_bins,
        "search_s": round(search, 3),
        "search_over_histogram": round(search / histogram, 2),
        "lattice": decision.lattice,
        "node_paper": decision.node_paper,
        "read_released_columns_s": round(read_released, 3),
        "generalise_s": round(generalise, 3),
        "generalise_over_read": round(generalise / read_released, 2),
        "generalise_rows_per_s": round(rows / generalise),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--chunk-rows", type=int, default=1_000_000)
    p.add_argument("--chunks", type=int, default=5)
    p.add_argument("--many", type=int, default=100, help="chunk count for the flat-memory check")
    p.add_argument("--mem-chunk-rows", type=int, default=100_000)
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--work", default="/tmp/skald-bench")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {"cores": os.cpu_count()}
    # Memory first, while this process is small (see _generate).
    memory = {}
    for n in (5, args.many):
        d = work / f"mem-{n}x{args.mem_chunk_rows}"
        _generate(n * args.mem_chunk_rows, args.mem_chunk_rows, d)
        memory[n] = _run_peak(d / "skald.yaml", work / f"out-mem-{n}", ["--k", str(args.k)])
    memory["ratio_many_over_few"] = round(
        memory[args.many]["peak_rss_mb"] / memory[5]["peak_rss_mb"], 3
    )
    report["memory"] = memory
    print(json.dumps({"memory": memory}, indent=2), flush=True)

    if ADULT.exists():
        cfg = work / "adult.yaml"
        qids = [
            "age",
            "education",
            "marital-status",
            "native-country",
            "occupation",
            "race",
            "sex",
            "workclass",
        ]
        body = {
            "input": {"path": str(ADULT / "adult.csv"), "format": "csv", "delimiter": ";"},
            "output": {"path": str(work / "out-adult")},
            "sensitive_attributes": ["salary-class"],
            "quasi_identifiers": [
                {
                    "name": q,
                    "type": "categorical",
                    "hierarchy_file": str(ADULT / f"adult_hierarchy_{q}.csv"),
                }
                for q in qids
            ],
            "privacy": {"k": 5, "suppression_limit": 0.05},
            "memory": {"histogram_bins": 10**9},
        }
        cfg.write_text(json.dumps(body))
        report["adult_level0"] = _run_peak(cfg, work / "out-adult", [])
        print(json.dumps({"adult_level0": report["adult_level0"]}, indent=2), flush=True)

    data = work / f"paper-{args.chunks}x{args.chunk_rows}"
    _generate(args.chunks * args.chunk_rows, args.chunk_rows, data)
    report["passes"] = bench_passes(data, args.k)
    print(json.dumps({"passes": report["passes"]}, indent=2), flush=True)
    (work / "bench_core.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
