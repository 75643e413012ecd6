"""Phase 3 and its verification against the I/O floor, at 1M- and 250k-row chunks (issue 13,
items 4 and 5). `make bench` runs it after bench_core's figures; alone:

    python benchmarks/bench_passes.py [--work /tmp/skald-bench] [--rows 10000000] [--repeats 5]

For each chunk size (the paper's synthetic dataset, generated once with files of that many
rows) and each policy (k only; k plus distinct 3-diversity on health_condition, whose check
counts (class, value) pairs), one round times one after the other, files in the page cache:

- read: `pyarrow.parquet.read_table(file, columns=released columns)` over every input file
  (pyarrow's default threads), the floor;
- generalise: `write_parts` (read, generalise, write every part; two chunk threads);
- verify: `count_written` (read the written parts back and count their classes, as the run's
  verification does; never the in-memory tables).

Each figure is the best of its rounds; printed: generalise / read (target <= 3 at 250k rows)
and verify / generalise (target <= 0.5), with the range over the rounds of the same-round
ratio, and the load average (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_data import generate  # noqa: E402

CHUNK_SIZES = (1_000_000, 250_000)
L_DIVERSITY = [{"attribute": "health_condition", "l": 3, "variant": "distinct"}]


def _config(data: Path, k: int, criteria: bool):
    """The generated config, with an l-diversity criterion if asked (written beside it as
    JSON, which the YAML loader reads), and the paper's root if this version knows it (the
    search is not what is measured here)."""
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.settings.yaml_load import load_yaml_file

    path = data / "skald.yaml"
    if criteria:
        body = load_yaml_file(path)
        body["privacy"]["l_diversity"] = L_DIVERSITY
        path = data / "skald-l.json"
        path.write_text(json.dumps(body))
    overrides = {"k": k, "output_path": str(data.parent / "out-passes")}
    try:
        return load_config(path, {**overrides, "root": "paper"})
    except Exception:  # an older version without the setting
        return load_config(path, overrides)


def bench_release(data: Path, k: int, criteria: bool, repeats: int) -> dict:
    from airflow_skald.core.generalise.part import released_columns
    from airflow_skald.core.passes.pipeline import (
        count_histogram,
        count_written,
        list_chunks,
        plan_root,
        scan_domain,
        search_lattice,
        write_parts,
    )
    from airflow_skald.core.release.write.commit import discard, prepare_staging

    config = _config(data, k, criteria)
    chunks = list_chunks(config)
    files = sorted({c.file for c in chunks})
    plan = plan_root(config, scan_domain(config, chunks))
    decision = search_lattice(config, plan, count_histogram(config, plan, chunks))
    columns = released_columns(config, plan.stats.columns)
    staging = str(data.parent / "bench-passes-staging")
    rounds = []
    for _ in range(repeats):
        t = time.perf_counter()
        for f in files:
            pq.read_table(f, columns=columns)
        read = time.perf_counter() - t
        prepare_staging(staging)
        t = time.perf_counter()
        names = write_parts(config, plan, decision, chunks, staging)
        generalise = time.perf_counter() - t
        t = time.perf_counter()
        classes = count_written(config, staging, names)
        verify = time.perf_counter() - t
        discard(staging)
        rounds.append((read, generalise, verify))
    read, generalise, verify = (min(r[i] for r in rounds) for i in range(3))
    over_read = [g / r for r, g, _ in rounds]
    over_gen = [v / g for _, g, v in rounds]
    return {
        "rows": sum(c.n_rows for c in chunks),
        "chunks": len(chunks),
        "criteria": criteria,
        "classes_read_back": int(classes.sizes.size),
        "read_s": round(read, 3),
        "generalise_s": round(generalise, 3),
        "verify_s": round(verify, 3),
        "generalise_over_read": round(generalise / read, 2),
        "generalise_over_read_rounds": [round(min(over_read), 2), round(max(over_read), 2)],
        "verify_over_generalise": round(verify / generalise, 2),
        "verify_over_generalise_rounds": [round(min(over_gen), 2), round(max(over_gen), 2)],
        "load_1min": round(os.getloadavg()[0], 1),
    }


def run(work: Path, rows: int, k: int, repeats: int) -> list[dict]:
    out = []
    for chunk_rows in CHUNK_SIZES:
        data = work / f"paper-{rows // chunk_rows}x{chunk_rows}"
        generate(rows, chunk_rows, data)
        for criteria in (False, True):
            result = bench_release(data, k, criteria, repeats)
            result["chunk_rows"] = chunk_rows
            print(json.dumps(result), flush=True)
            out.append(result)
    return out


def summary(results: list[dict]) -> str:
    lines = ["phase 3 and verification (best of rounds; [range of the same-round ratio])"]
    for r in results:
        policy = "k + l-diversity" if r["criteria"] else "k only"
        lines.append(
            f"  {r['chunks']} x {r['chunk_rows']:,} rows, {policy:<15} "
            f"generalise / read {r['generalise_over_read']:5.2f} "
            f"[{r['generalise_over_read_rounds'][0]}-{r['generalise_over_read_rounds'][1]}] "
            f"(<= 3 at 250k)  verify / generalise {r['verify_over_generalise']:5.2f} "
            f"[{r['verify_over_generalise_rounds'][0]}-{r['verify_over_generalise_rounds'][1]}] "
            f"(<= 0.5)  load {r['load_1min']}"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--work", default="/tmp/skald-bench")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = run(work, args.rows, args.k, args.repeats)
    (work / "bench_passes.json").write_text(json.dumps(results, indent=2))
    print(summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
