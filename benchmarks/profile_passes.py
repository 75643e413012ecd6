"""Where a pass spends its time: pyinstrument over the histogram and generalise passes.

    python benchmarks/profile_passes.py [--data /tmp/skald-bench/paper-10x1000000] [--tree]

Runs on the data `make bench` generated (or any skald.yaml folder), with one chunk thread so the
whole pass is on the profiled thread, and prints each pass's time split into reading, computing
codes/labels, and counting or writing, as shares of the pass. `--tree` also prints
pyinstrument's call tree. `make profile` runs it (after `make bench` made the data).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Frames whose time is attributed to each step (the first matching frame on a stack wins).
STEPS = {
    "histogram": {
        "read": ("read_chunk",),
        "codes": ("key_part",),
        "counting": ("add_keys",),
    },
    "generalise": {
        "read": ("read_chunk",),
        "codes and labels": ("generalise_table",),
        "write": ("write_part_atomic",),
    },
}


def _split(frame, steps: dict[str, tuple[str, ...]], out: dict[str, float]) -> None:
    for step, names in steps.items():
        if frame.function in names:
            out[step] = out.get(step, 0.0) + frame.time
            return
    for child in frame.children:
        _split(child, steps, out)


def profile(name: str, fn, tree: bool) -> dict[str, float]:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    fn()
    profiler.stop()
    root = profiler.last_session.root_frame()
    shares: dict[str, float] = {}
    _split(root, STEPS[name], shares)
    total = root.time
    shares["other"] = total - sum(shares.values())
    print(f"{name} pass: {total:.3f} s")
    for step, t in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {step:<18} {t:7.3f} s  {100 * t / total:5.1f} %")
    if tree:
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    return shares


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/tmp/skald-bench/paper-10x1000000")
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--tree", action="store_true")
    args = p.parse_args()
    data = Path(args.data)
    if not (data / "skald.yaml").exists():
        print(f"no skald.yaml in {data}: run `make bench` first", file=sys.stderr)
        return 2

    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.data import chunk_threads
    from airflow_skald.core.passes.pipeline import (
        count_histogram,
        list_chunks,
        plan_root,
        scan_domain,
        search_lattice,
        write_parts,
    )
    from airflow_skald.core.release.write.commit import discard, prepare_staging

    chunk_threads.CHUNK_THREADS = 1  # every step on the profiled (main) thread's call stack
    config = load_config(data / "skald.yaml", {"k": args.k, "output_path": str(data / "out")})
    chunks = list_chunks(config)
    plan = plan_root(config, scan_domain(config, chunks))
    hist = count_histogram(config, plan, chunks)  # warm-up: lookup tables, page cache
    decision = search_lattice(config, plan, hist)
    profile("histogram", lambda: count_histogram(config, plan, chunks), args.tree)
    staging = str(data.parent / "profile-staging")
    prepare_staging(staging)
    try:
        profile(
            "generalise", lambda: write_parts(config, plan, decision, chunks, staging), args.tree
        )
    finally:
        discard(staging)
    return 0


if __name__ == "__main__":
    sys.exit(main())
