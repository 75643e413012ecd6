"""Lattice-search benchmark (issue 13, item 2): an 8-QID table shaped like ARX's benchmark data.

    python benchmarks/bench_search.py [--rows 100000] [--seed 1] [--repeats 3] [--work DIR]
                                      [--no-exhaustive] [--no-adult]

The table is generated deterministically from the seed: 8 categorical QIDs (age, race, month,
day, sex, hispanic, state, injury) with hierarchies of 2-7 levels, a 176,400-node lattice,
~100,000 rows drawn from skewed, correlated distributions (Zipf-like marginals, a latent
"region" that ties state, race and hispanic together), so the level-0 histogram has tens of
thousands of non-empty bins of very uneven sizes. The RAM bound is set so the root is level 0.

Measured, each over `--repeats` rounds (min-max reported; the machine is noisy, so CPU time
(user + system) is reported beside wall time, and the load average at start and end):
- `skald run` end to end in a fresh process (k = 5, suppression 0 and 5 %), with the run's
  phase timings and nodes evaluated / lattice size;
- in one process, side by side on the same histogram: the product's search (`search_lattice`)
  and a plain exhaustive search (every node of the lattice judged and scored as the search
  does, each rolled up from its parent in a depth-first walk, no pruning); both must return
  the same node;
- phase 1's root choice (`plan_root`) alone;
- Adult with its 8 ARX hierarchies at level 0: `search_lattice` alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from airflow_skald.core.config.policy import build_policy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the Adult files and hierarchies, as the tests use them

from skald_testdata import ADULT_CSV, adult_qid_config  # noqa: E402

# name: (distinct values, fan-outs of the intermediate levels). Levels = len(fan-outs) + 2
# (the value, the groups, the top "*"): 7, 4, 5, 5, 2, 3, 6, 7 -> 176,400 lattice nodes.
QIDS: dict[str, tuple[int, list[int]]] = {
    "age": (100, [5, 2, 2, 2, 2]),
    "race": (20, [3, 3]),
    "month": (13, [2, 2, 2]),
    "day": (32, [2, 2, 4]),
    "sex": (3, []),
    "hispanic": (15, [5]),
    "state": (56, [2, 2, 2, 3]),
    "injury": (40, [2, 2, 2, 2, 2]),
}


def hierarchy(name: str, n_values: int, fanouts: list[int]) -> dict[str, list[str]]:
    """value -> labels of the intermediate levels (groups of consecutive values; top implied)."""
    out = {}
    for v in range(n_values):
        labels, size = [], 1
        for f in fanouts:
            size *= f
            g = v // size
            labels.append(f"{name}:{g * size}-{min(n_values, (g + 1) * size) - 1}")
        out[f"{name}{v}"] = labels
    return out


def _zipf(rng: np.random.Generator, n: int, a: float) -> np.ndarray:
    """Zipf-like probabilities over n values, ranks shuffled."""
    p = 1.0 / np.arange(1, n + 1) ** a
    return rng.permutation(p / p.sum())


def make_table(rows: int, seed: int) -> pd.DataFrame:
    """The benchmark table (deterministic in `seed`)."""
    rng = np.random.default_rng(seed)
    n_regions = 12
    region = rng.choice(n_regions, rows, p=_zipf(rng, n_regions, 1.0))
    cols: dict[str, np.ndarray] = {}
    # age: a mixture of two broad modes, clipped to 0..99
    young = rng.random(rows) < 0.55
    age = np.where(young, rng.normal(24, 7, rows), rng.normal(52, 16, rows))
    cols["age"] = np.clip(np.rint(age), 0, 99).astype(np.int64)
    # state: each region's own few states; race and hispanic: one dominant value, a
    # region-dependent tail
    cols["state"] = (region * 5 + rng.choice(5, rows, p=[0.5, 0.25, 0.13, 0.08, 0.04])) % 56
    for name, top_share in (("race", 0.75), ("hispanic", 0.85)):
        n_values = QIDS[name][0]
        tails = np.stack([_zipf(rng, n_values - 1, 1.2) for _ in range(n_regions)])
        u = rng.random(rows)
        cdf = np.cumsum(tails, axis=1)[region]
        tail = np.minimum((u[:, None] > cdf).sum(axis=1), n_values - 2) + 1
        cols[name] = np.where(rng.random(rows) < top_share, 0, tail)
    # injury: few dominant codes; month and day of death only for fatal injuries (code 0),
    # the last code ("not applicable") otherwise, as in accident data
    cols["injury"] = rng.choice(40, rows, p=_zipf(rng, 40, 2.2))
    fatal = cols["injury"] != np.argmax(np.bincount(cols["injury"], minlength=40))
    seasonal = 1 + 0.3 * np.cos(np.arange(12) / 12 * 2 * np.pi)
    month = rng.choice(12, rows, p=seasonal / seasonal.sum())
    weekday = 1 + 0.15 * (np.arange(31) % 7 >= 5)
    day = rng.choice(31, rows, p=weekday / weekday.sum())
    cols["month"] = np.where(fatal, month, 12)
    cols["day"] = np.where(fatal, day, 31)
    cols["sex"] = rng.choice(3, rows, p=[0.68, 0.31, 0.01])
    df = pd.DataFrame({"id": np.arange(rows)})
    for name in QIDS:
        df[name] = np.char.add(name, cols[name].astype(str))
    df["outcome"] = rng.integers(0, 4, rows)
    return df


def write_inputs(work: Path, rows: int, seed: int) -> Path:
    """The table as one Parquet file and its config (root forced to level 0)."""
    data = work / f"data-{rows}-{seed}"
    config = data / "skald.yaml"
    if config.exists():
        return config
    (data / "in").mkdir(parents=True, exist_ok=True)
    df = make_table(rows, seed)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), data / "in" / "part-0.parquet")
    qids = [
        {"name": n, "type": "categorical", "hierarchy": hierarchy(n, *spec)}
        for n, spec in QIDS.items()
    ]
    body = {
        "input": {"path": str(data / "in")},
        "output": {"path": str(work / "out")},
        "chunk_rows": 1_000_000,
        "direct_identifiers": ["id"],
        "sensitive_attributes": ["outcome"],
        "quasi_identifiers": qids,
        "privacy": {"k": 5, "suppression_limit": 0.05},
        "memory": {"histogram_bins": 10**12},
    }
    config.write_text(yaml.safe_dump(body, sort_keys=False))
    return config


def _range(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def end_to_end(config: Path, work: Path, limit: float, repeats: int) -> dict:
    """`skald run` in a fresh process (imports included), `repeats` times."""
    walls, cpus, phases, manifest = [], [], [], {}
    for r in range(repeats):
        out = work / f"out-{limit}-{r}"
        cmd = [
            sys.executable,
            "-m",
            "airflow_skald.cli",
            "run",
            str(config),
            "--output",
            str(out),
            "--suppression-limit",
            str(limit),
            "--quiet",
        ]
        if out.exists():
            subprocess.run(["rm", "-rf", str(out)], check=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        manifest = json.loads((out / "manifest.json").read_text())
        run_file = out / "run.json"  # phase timings (older releases: in the manifest)
        run = json.loads(run_file.read_text()) if run_file.exists() else manifest
        phases.append(run["timings_s"])
    return {
        "suppression_limit": limit,
        "wall_s": _range(walls),
        "cpu_s": _range(cpus),  # user + system of the run: less sensitive to other load
        "encode_s": _range([p["encode"] for p in phases]),
        "search_s": _range([p["search"] for p in phases]),
        "node": manifest["node_paper"],
        "dm_star": manifest["dm_star"],
        "lattice": manifest["lattice"],
        "root_bins_nonempty": manifest["lattice"].get("root_bins_nonempty"),
    }


def exhaustive(config, plan, hist) -> tuple[int, tuple[int, ...]]:
    """Plain exhaustive search: every node of the lattice scored, the best kept (docs/design.md §4).

    Written plainly but not wastefully: a depth-first walk in which each node's histogram is
    rolled up from its parent's (one QID raised by one level), so most roll-ups are small; each
    node judged by the config's policy and scored by the config's objective (an exact loss of
    the reported ones: DM*, ARX's DM*, DM), as the search does. Returns (loss, node).
    """
    from dataclasses import replace

    from airflow_skald.core.privacy import ClassTable
    from airflow_skald.core.quality.metric import Scored
    from airflow_skald.core.quality.reported import REPORTED
    from airflow_skald.core.search.rollups import roll_up

    name = config.quality.objective
    metric = next((m for m in REPORTED if m.name == name and name != "precision"), None)
    if metric is None:
        raise SystemExit(f"exhaustive: objective {name} is none of dm_star, dm_star_arx, dm")

    root_hist = getattr(hist, "classes", hist)  # phase 2's counts, or a plain Histogram
    root = tuple(getattr(hist, "node", None) or plan.root)
    policy, tops, priority = build_policy(config), tuple(plan.tops), config.priority_order()
    lcm = math.lcm(*[t for t in tops if t > 0] or [1])
    best: list = [None]

    def score(node: tuple[int, ...], counts) -> None:
        table = ClassTable(counts)
        judgement = policy.judge(table)
        if judgement.passes:
            loss = metric.value(Scored(table, judgement, node, tops))
            cost = sum(lv * (lcm // t) for lv, t in zip(node, tops, strict=True) if t)
            key = (loss, cost, tuple(node[p] for p in priority))
            if best[0] is None or key < best[0][0]:
                best[0] = (key, node)

    def visit(node: tuple[int, ...], h, first: int) -> None:
        score(node, h.counts)
        for e in range(first, len(tops)):
            if node[e] < tops[e]:
                child = node[:e] + (node[e] + 1,) + node[e + 1 :]
                visit(child, roll_up(replace(plan, root=node), h, child), e)

    visit(root, root_hist, 0)
    assert best[0] is not None
    return best[0][0][0], best[0][1]


def side_by_side(config_path: Path, limit: float, repeats: int, with_exhaustive: bool) -> dict:
    """The product's search and the plain exhaustive search on the same histogram."""
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.passes.pipeline import (
        count_histogram,
        list_chunks,
        plan_root,
        scan_domain,
        search_lattice,
    )

    config = load_config(config_path, {"suppression_limit": limit})
    chunks = list_chunks(config)
    stats = scan_domain(config, chunks)
    plans, searches, exhaustives, search_cpu, exhaustive_cpu = [], [], [], [], []
    for _ in range(repeats):
        t = time.perf_counter()
        plan = plan_root(config, stats)
        plans.append(time.perf_counter() - t)
    hist = count_histogram(config, plan, chunks)
    out = {"suppression_limit": limit, "root_bins_nonempty": hist.n_bins}
    for r in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        decision = search_lattice(config, plan, hist)
        searches.append(time.perf_counter() - t)
        search_cpu.append(time.process_time() - c)
        if with_exhaustive and r == 0:  # once: minutes; timed right after a search
            t, c = time.perf_counter(), time.process_time()
            loss, node = exhaustive(config, plan, hist)
            exhaustives.append(time.perf_counter() - t)
            exhaustive_cpu.append(time.process_time() - c)
            same = (
                node == decision.node and loss == decision.figures.quality[config.quality.objective]
            )
            assert same, (node, decision.node)
    out.update(
        plan_root_s=_range(plans),
        search_s=_range(searches),
        search_cpu_s=_range(search_cpu),
        lattice=decision.to_dict()["lattice"],
        node=decision.node_paper,
        dm_star=decision.figures.dm_star,
    )
    if with_exhaustive:
        ratios = [exhaustives[0] / s for s in searches]
        out.update(
            exhaustive_s=_range(exhaustives),
            exhaustive_cpu_s=_range(exhaustive_cpu),
            exhaustive_over_search_cpu=_range([exhaustive_cpu[0] / s for s in search_cpu]),
            exhaustive_nodes=decision.to_dict()["lattice"]["nodes"],
            exhaustive_over_search=_range(ratios),
            same_answer=True,
        )
    return out


def adult(work: Path, repeats: int) -> list[dict]:
    """Adult, 8 ARX hierarchies, level-0 root: the search alone, k = 5 / 10, supp 0 / 5 %."""
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.passes.pipeline import (
        count_histogram,
        list_chunks,
        plan_root,
        scan_domain,
        search_lattice,
    )

    body = {
        "input": {"path": str(ADULT_CSV), "format": "csv", "delimiter": ";"},
        "output": {"path": str(work / "adult-out")},
        "chunk_rows": 8000,
        "sensitive_attributes": ["salary-class"],
        "quasi_identifiers": adult_qid_config(),
        "privacy": {"k": 5, "suppression_limit": 0},
        "memory": {"histogram_bins": 10**9},
    }
    path = work / "adult.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    rows = []
    for k, limit in ((5, 0), (5, 0.05), (10, 0.05)):
        config = load_config(path, {"k": k, "suppression_limit": limit})
        chunks = list_chunks(config)
        plan = plan_root(config, scan_domain(config, chunks))
        hist = count_histogram(config, plan, chunks)
        times, cpus = [], []
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            decision = search_lattice(config, plan, hist)
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        rows.append(
            {
                "k": k,
                "suppression_limit": limit,
                "search_s": _range(times),
                "search_cpu_s": _range(cpus),
                "lattice": decision.to_dict()["lattice"],
                "node": decision.node_paper,
            }
        )
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default="/tmp/skald-bench-search")
    p.add_argument("--no-exhaustive", action="store_true")
    p.add_argument("--no-adult", action="store_true")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    config = write_inputs(work, args.rows, args.seed)
    report: dict = {"rows": args.rows, "seed": args.seed, "lattice_nodes": 176_400}
    report["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    report["end_to_end"] = [end_to_end(config, work, lim, args.repeats) for lim in (0.0, 0.05)]
    print(json.dumps(report, indent=1), flush=True)
    report["side_by_side"] = [
        side_by_side(config, lim, args.repeats, not args.no_exhaustive) for lim in (0.0, 0.05)
    ]
    print(json.dumps(report["side_by_side"], indent=1), flush=True)
    if not args.no_adult:
        report["adult"] = adult(work, args.repeats)
        print(json.dumps(report["adult"], indent=1), flush=True)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    (work / "report.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
