"""The histogram pass against a bare read of the same QID columns, both root modes (issue 13,
item 4: <= 1.5x, also with 250k-row chunks).

    python benchmarks/bench_histogram.py [--rows 5000000] [--chunk-rows 250000] [--rounds 3]
        [--data paper adult] [--work /tmp/skald-hist]

Two tables of `--rows` records in files of `--chunk-rows`: `paper`, the paper's data (`skald
generate --seed 1`; near-unique records at fine nodes, so the adaptive root's count table stays
near N_RAM bins and is merged with every chunk, ADR 0014), and `adult`, records resampled from
the real Adult table with ARX's 8 hierarchies (~18 thousand QID combinations: level 0 fits).
Per round, one after the other: the floor, `pyarrow.parquet.read_table(file, columns=QIDs)`
over every file (a bare read, pyarrow's defaults and threads, as in the target and `make
bench`); the same read with the string columns dictionary-encoded, as the pass reads them (a
stricter floor, printed beside it); and phase 2 (`count_histogram`, two chunk threads) with the
adaptive root and with `memory.root: paper`. Prints each round's times and ratios to the bare
read, then the best of each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from adult_data import adult_body, resample_adult

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.passes import pipeline


def prepare(kind: str, rows: int, chunk_rows: int, work: Path) -> Path:
    data = work / f"{kind}-{rows}x{chunk_rows}"
    if (data / "skald.yaml").exists():
        return data
    if kind == "paper":
        cmd = [sys.executable, "-m", "airflow_skald.cli", "generate", "--rows", str(rows)]
        cmd += ["--chunk-rows", str(chunk_rows), "--seed", "1", "--out", str(data), "--overwrite"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    else:
        resample_adult(rows, chunk_rows, data)
        body = adult_body({"path": str(data), "format": "parquet"}, work / "out-adult")
        (data / "skald.yaml").write_text(json.dumps({**body, "chunk_rows": chunk_rows}))
    return data


def measure(data: Path, rounds: int) -> None:
    body = yaml.safe_load((data / "skald.yaml").read_text())
    runs = {}
    for mode in ("adaptive", "paper"):
        body["memory"] = {**(body.get("memory") or {}), "root": mode}
        path = data / f"skald-{mode}.yaml"
        path.write_text(yaml.safe_dump(body))
        config = load_config(str(path))
        chunks = pipeline.list_chunks(config)
        plan = plan_root(config, pipeline.scan_domain(config, chunks))
        runs[mode] = (config, plan, chunks)
    files = sorted(data.glob("*.parquet"))
    qids = runs["paper"][0].qid_names
    schema = pq.read_schema(files[0])
    strings = [q for q in qids if pa.types.is_string(schema.field(q).type)]
    best: dict[str, float] = {}
    for r in range(rounds):
        t = time.perf_counter()
        for f in files:
            pq.read_table(f, columns=qids)
        times = {"read": time.perf_counter() - t}
        t = time.perf_counter()
        for f in files:
            pq.read_table(f, columns=qids, read_dictionary=strings)
        times["read_dict"] = time.perf_counter() - t
        roots = {}
        for mode, (config, plan, chunks) in runs.items():
            t = time.perf_counter()
            counts = pipeline.count_histogram(config, plan, chunks)
            times[mode] = time.perf_counter() - t
            roots[mode] = f"{counts.node} ({counts.n_bins:,} bins)"
        for k, v in times.items():
            best[k] = min(best.get(k, v), v)
        print(
            f"{data.name} round {r}: read {times['read']:.2f} s (dictionary "
            f"{times['read_dict']:.2f} s), adaptive {times['adaptive']:.2f} s "
            f"({times['adaptive'] / times['read']:.2f}x), paper {times['paper']:.2f} s "
            f"({times['paper'] / times['read']:.2f}x); roots: adaptive {roots['adaptive']}, "
            f"paper {roots['paper']}",
            flush=True,
        )
    ratios = {
        floor: f"adaptive {best['adaptive'] / best[floor]:.2f}, paper {best['paper'] / best[floor]:.2f}"
        for floor in ("read", "read_dict")
    }
    print(
        f"{data.name} best: read {best['read']:.2f} s, dictionary read {best['read_dict']:.2f} s; "
        f"histogram pass / bare read: {ratios['read']} (target <= 1.5); / dictionary read: "
        f"{ratios['read_dict']}",
        flush=True,
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--chunk-rows", type=int, default=250_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", nargs="+", choices=["paper", "adult"], default=["paper", "adult"])
    p.add_argument("--work", default="/tmp/skald-hist")
    args = p.parse_args()
    for kind in args.data:
        measure(prepare(kind, args.rows, args.chunk_rows, Path(args.work)), args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
