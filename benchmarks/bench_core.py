"""Core speed and memory benchmarks (issues 2 and 5). Prints every figure as a rate or ratio.

    python benchmarks/bench_core.py [--chunk-rows 1000000] [--chunks 5] [--work /tmp/skald-bench]

Measures, on the paper's synthetic dataset (5 QIDs, Parquet):
- each pass's time against merely reading the same columns with pyarrow (I/O floor ratio);
- histogram-pass throughput in rows/s;
- lattice-search time and nodes evaluated vs lattice size;
- peak RSS of `skald run` (a fresh process) with few vs many chunks of the same size;
- Adult with its 8 ARX hierarchies at level 0 (3.2e8 possible bins): time and peak RSS;
- phase 3 and its verification at 1M- and 250k-row chunks (`bench_passes.py`).
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
from adult_data import ADULT, ADULT_CSV, adult_body
from paper_data import generate

ROOT = Path(__file__).resolve().parents[1]


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
    record = json.loads((output / "run.json").read_text())  # timings and memory (not manifest)
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(record["peak_rss_bytes"] / 2**20, 1),
        "timings_s": record["timings_s"],
        "node_paper": manifest["node_paper"],
        "lattice": manifest["lattice"],
        "root_bins": manifest["root_bins"],
    }


def _timed(repeats: int, fn):
    """Best wall time of `repeats` calls, and the last call's result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _best(repeats: int, fn) -> float:
    return _timed(repeats, fn)[0]


def _encode(config, chunks):
    from airflow_skald.core.passes.pipeline import plan_root, scan_domain

    return plan_root(config, scan_domain(config, chunks))


def bench_passes(data: Path, k: int, repeats: int = 5) -> dict:
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.data import chunk_threads
    from airflow_skald.core.generalise.part import released_columns
    from airflow_skald.core.passes.pipeline import (
        count_histogram,
        list_chunks,
        search_lattice,
        write_parts,
    )
    from airflow_skald.core.release.write.commit import discard, prepare_staging

    config = load_config(data / "skald.yaml", {"k": k, "output_path": str(data.parent / "out")})
    chunks = list_chunks(config)
    files = sorted({Path(c.file) for c in chunks})
    rows = sum(c.n_rows for c in chunks)
    staging = str(data.parent / "bench-staging")
    threads = chunk_threads.chunk_threads()

    def generalise_once():
        prepare_staging(staging)
        write_parts(config, plan, decision, chunks, staging)
        discard(staging)

    # Each figure is the best of `repeats` rounds; a round times the reading floors and the
    # passes one after the other (files in the page cache for both), so the ratios compare
    # timings taken side by side, not minutes apart on a machine whose speed drifts.
    plan = _encode(config, chunks)
    hist = count_histogram(config, plan, chunks)
    search, decision = _timed(repeats, lambda: search_lattice(config, plan, hist))
    columns = released_columns(config, plan.stats.columns)
    best = dict.fromkeys(["read_qids", "encode", "histogram", "read_released", "generalise"])
    for _ in range(repeats):
        for name, fn in (
            ("read_qids", lambda: _read_floor(files, config.qid_names)),
            ("encode", lambda: _encode(config, chunks)),
            ("histogram", lambda: count_histogram(config, plan, chunks)),
            ("read_released", lambda: _read_floor(files, columns)),
            ("generalise", generalise_once),
        ):
            t = _best(1, fn)
            best[name] = t if best[name] is None else min(best[name], t)
    read_qids, encode, histogram = best["read_qids"], best["encode"], best["histogram"]
    read_released, generalise = best["read_released"], best["generalise"]
    # The same pass pinned to one core (pyarrow's and our threads included): the per-core rate.
    cpus = os.sched_getaffinity(0)
    chunk_threads.CHUNK_THREADS = 1
    os.sched_setaffinity(0, {min(cpus)})
    try:
        one_core = _best(repeats, lambda: count_histogram(config, plan, chunks))
    finally:
        os.sched_setaffinity(0, cpus)
        chunk_threads.CHUNK_THREADS = None
    per_chunk = histogram / len(chunks)
    return {
        "rows": rows,
        "chunks": len(chunks),
        "read_qid_columns_s": round(read_qids, 3),
        "encode_s": round(encode, 3),
        "histogram_s": round(histogram, 3),
        "histogram_rows_per_s": round(rows / histogram),
        "chunk_threads": threads,
        "histogram_one_core_s": round(one_core, 3),
        "histogram_one_core_rows_per_s": round(rows / one_core),
        "encode_over_read": round(encode / read_qids, 2),
        "histogram_over_read": round(histogram / read_qids, 2),
        "root_bins_possible": plan.root_bins,
        "root_bins_nonempty": hist.n_bins,
        "search_s": round(search, 3),
        "search_over_histogram": round(search / histogram, 2),
        "search_in_histogram_chunks": round(search / per_chunk, 1),
        "lattice": decision.to_dict()["lattice"],
        "node_paper": decision.node_paper,
        "read_released_columns_s": round(read_released, 3),
        "generalise_s": round(generalise, 3),
        "generalise_over_read": round(generalise / read_released, 2),
        "generalise_rows_per_s": round(rows / generalise),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--chunk-rows", type=int, default=1_000_000)
    p.add_argument("--chunks", type=int, default=10)
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
        generate(n * args.mem_chunk_rows, args.mem_chunk_rows, d)
        memory[n] = _run_peak(d / "skald.yaml", work / f"out-mem-{n}", ["--k", str(args.k)])
    memory["ratio_many_over_few"] = round(
        memory[args.many]["peak_rss_mb"] / memory[5]["peak_rss_mb"], 3
    )
    for n in (5, args.many):  # the bound: one chunk (all columns) + the root histogram + 400 MB
        first = sorted((work / f"mem-{n}x{args.mem_chunk_rows}").glob("*.parquet"))[0]
        chunk_mb = pq.read_table(first).nbytes / 2**20
        hist_mb = memory[n]["root_bins"] * 8 / 2**20
        memory[n]["bound_mb"] = round(chunk_mb + hist_mb + 400, 1)
        memory[n]["within_bound"] = memory[n]["peak_rss_mb"] <= memory[n]["bound_mb"]
    report["memory"] = memory
    print(json.dumps({"memory": memory}, indent=2), flush=True)

    if ADULT.exists():
        cfg = work / "adult.yaml"
        source = {"path": str(ADULT_CSV), "format": "csv", "delimiter": ";"}
        body = {**adult_body(source, work / "out-adult"), "memory": {"histogram_bins": 10**9}}
        cfg.write_text(json.dumps(body))
        report["adult_level0"] = _run_peak(cfg, work / "out-adult", [])
        print(json.dumps({"adult_level0": report["adult_level0"]}, indent=2), flush=True)

    data = work / f"paper-{args.chunks}x{args.chunk_rows}"
    generate(args.chunks * args.chunk_rows, args.chunk_rows, data)
    report["passes"] = bench_passes(data, args.k)
    print(json.dumps({"passes": report["passes"]}, indent=2), flush=True)
    # Phase 3 and verification at 1M- and 250k-row chunks (issue 13, items 4 and 5).
    import bench_passes as release

    report["release"] = release.run(work, args.chunks * args.chunk_rows, args.k, 5)
    (work / "bench_core.json").write_text(json.dumps(report, indent=2))
    print(summary(report, args.many))
    print(release.summary(report["release"]))
    return 0


def summary(report: dict, many: int) -> str:
    """Every figure of issue 5 as a ratio or a rate, next to its target."""
    p, m = report["passes"], report["memory"]
    lat = p["lattice"]
    lines = [
        f"cores: {report['cores']}  (passes: {p['chunks']} x {p['rows'] // p['chunks']:,} rows, "
        "one process, best of 5)",
        f"1. histogram pass / reading the QID columns   {p['histogram_over_read']:6.2f}  (<= 1.5)",
        f"   generalise pass / reading released columns {p['generalise_over_read']:6.2f}  (<= 3)",
        f"   encode pass / reading the QID columns      {p['encode_over_read']:6.2f}",
        f"2. histogram pass: {p['histogram_one_core_rows_per_s'] / 1e6:.1f}M rows/s on one core "
        f"(>= 10M), {p['histogram_rows_per_s'] / 1e6:.1f}M rows/s with {p['chunk_threads']} "
        "chunk threads",
        f"3. search: {p['search_s']:.2f} s on a root of {p['root_bins_possible']:,} possible bins "
        f"({p['root_bins_nonempty']:,} non-empty), {lat['evaluated']} of {lat['nodes']} nodes "
        f"evaluated; = histogram time of {p['search_in_histogram_chunks']} chunks "
        f"(search / this {p['chunks']}-chunk pass: {p['search_over_histogram']})",
        f"4. peak RSS {many} vs 5 chunks: {m[many]['peak_rss_mb']} / {m[5]['peak_rss_mb']} MB "
        f"= {m['ratio_many_over_few']} (<= 1.1); within chunk + histogram + 400 MB: "
        f"{m[5]['within_bound'] and m[many]['within_bound']}",
    ]
    if "adult_level0" in report:
        a = report["adult_level0"]
        lines.append(
            f"   Adult at level 0: {a['wall_s']} s, {a['peak_rss_mb']} MB, "
            f"{a['lattice']['evaluated']} of {a['lattice']['nodes']} nodes evaluated"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
