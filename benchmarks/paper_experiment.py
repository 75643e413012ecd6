"""The SKALD paper's experiment: SKALD vs per-chunk (ARX-style) anonymisation.

    python benchmarks/paper_experiment.py [--chunk-rows 20000] [--chunks 1,5,25,125]
        [--k 10,50,250,1000] [--out results/] [--workers 2] [--releases]

Generates the paper's synthetic dataset once at the largest chunk count (a smaller dataset is
a prefix of a larger one), then for every chunk count c (the first c chunks) and every k:

* SKALD: phase 1, RAM root and phase-2 histogram over the c chunks (they do not depend on k),
  then the lattice search for each k (`pipeline.search_lattice`, the same code `skald run` uses;
  phase 3 writes exactly the searched node and `skald run` re-verifies its DM* every time);
* per-chunk baseline: each chunk's own optimal node (`baseline.anonymise_chunk`, the code of
  `skald run --per-chunk`), and the DM* of the union of the released chunks.

A chunk's own decision depends only on the chunk, k and the shared domains, so it is computed
once and re-used for every c whose phase-1 domains are identical (checked, not assumed).
`--releases` also writes every release through `skald run` / `skald run --per-chunk`
(`pipeline.run`, `baseline.run_per_chunk`, each verified) and checks the figures agree.

Outputs in --out: paper_experiment.csv, paper_experiment.md (Table III-like) and dm_ratio.png
(DM* ratio per-chunk / SKALD against k, one bar per chunk count, like the paper's figure).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from airflow_skald.core.config.run_config import load_config  # noqa: E402
from airflow_skald.core.data.generate import generate_dataset, paper_config_dict  # noqa: E402
from airflow_skald.core.passes import pipeline  # noqa: E402
from airflow_skald.core.run import runner  # noqa: E402
from airflow_skald.core.run.baseline import (  # noqa: E402
    RollUpCache,
    anonymise_chunk,
    run_per_chunk,
    union_figures,
    union_policy,
)

log = logging.getLogger("paper_experiment")

PAPER = {
    "ratio_at_least": {25: 4, 125: 9},
    "k50_nodes": {
        5: ("((3,1),(1,24,128))", "((3,4),(4,24,4))"),
        25: ("((3,1),(1,24,32))", "((3,4),(4,24,4))"),
        125: ("((2,1),(1,24,32))", "((3,4),(4,24,4))"),
    },
}

FIELDS = [
    "chunks",
    "chunk_rows",
    "n_records",
    "k",
    "skald_node_paper",
    "skald_node",
    "skald_root_paper",
    "skald_dm_star",
    "skald_n_suppressed",
    "skald_n_classes",
    "per_chunk_nodes_paper",
    "per_chunk_dm_star_union",
    "per_chunk_dm_star_sum",
    "per_chunk_n_suppressed",
    "per_chunk_n_classes",
    "dm_ratio",
    "dm_ratio_sum",
    "skald_seconds",
    "per_chunk_seconds",
    "root_mode",
    "paper_root_paper",
    "paper_node_paper",
    "paper_dm_star",
    "paper_dm_ratio",
    "lr_skald_dm_star",
    "lr_skald_n_suppressed",
    "lr_skald_steps",
    "lr_per_chunk_dm_star_union",
    "lr_per_chunk_n_suppressed",
    "lr_dm_ratio",
]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _subset(data: Path, c: int, work: Path) -> Path:
    """A folder holding the first c chunk files (hard links) and its skald.yaml."""
    folder = work / f"c{c}"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(c):
        src, dst = data / f"chunk-{i:05d}.parquet", folder / f"chunk-{i:05d}.parquet"
        if not dst.exists():
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
    return folder


def _config(folder: Path, chunk_rows: int, output: Path, objective: str = "dm_star"):
    body = paper_config_dict(folder, output, chunk_rows)
    if objective != "dm_star":  # docs/design.md §4d: SKALD and the per-chunk baseline minimise it
        body["quality"] = {"objective": objective}
    path = folder / "skald.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return load_config(path)


def _domain_key(stats) -> str:
    body = {n: vars(q) for n, q in sorted(stats.qids.items())}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _chunk_job(job):
    config, plan, chunk, ks = job
    logging.getLogger("airflow_skald").setLevel(logging.WARNING)
    t = time.perf_counter()
    outcomes = anonymise_chunk(config, plan, chunk, ks)
    return chunk.chunk_id, outcomes, time.perf_counter() - t


def run_experiment(
    chunk_rows: int,
    chunk_counts: list[int],
    ks: list[int],
    out: Path,
    workers: int = 2,
    seed: int = 1,
    data_dir: Path | None = None,
    releases: bool = False,
    roots: tuple[str, ...] = ("adaptive", "paper"),
    objective: str = "dm_star",
    local_recoding: str | None = None,
) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    own_tmp = data_dir is None
    work = Path(tempfile.mkdtemp(prefix="skald-paper-")) if own_tmp else Path(data_dir)
    t0 = time.perf_counter()
    try:
        data = work / "data"
        max_c = max(chunk_counts)
        log.info("generating %d chunks of %d rows in %s", max_c, chunk_rows, data)
        generate_dataset(max_c * chunk_rows, chunk_rows, seed, data, overwrite=True)
        t_gen = time.perf_counter() - t0
        decisions: dict[tuple[str, int], dict[int, object]] = {}  # (domain, chunk) -> k -> outcome
        chunk_seconds: dict[tuple[str, int], float] = {}
        rows: list[dict] = []
        for c in sorted(chunk_counts):
            folder = _subset(data, c, work)
            config = _config(folder, chunk_rows, work / "out" / f"skald-c{c}", objective)
            t = time.perf_counter()
            chunks = pipeline.list_chunks(config)
            stats = pipeline.scan_domain(config, chunks)
            t_scan = time.perf_counter() - t
            by_root = {}  # root mode -> (plan, k -> (decision, seconds))
            hists = {}
            for mode in roots:
                by_root[mode] = _skald(
                    replace(config, root=mode), stats, chunks, ks, t_scan, hists, mode
                )
            plan, skald = by_root[roots[0]]
            hist_of = {c: hists[roots[0]]}
            domain = _domain_key(stats)
            lr_config = None
            if local_recoding:  # docs/design.md §4f: both sides recode their suppressed records
                lr_config = config.with_overrides({"local_recoding": local_recoding})
            todo = [ch for ch in chunks if (domain, ch.chunk_id) not in decisions]
            log.info("c=%d: SKALD done; %d chunk(s) to anonymise alone", c, len(todo))
            jobs = [(config, plan, ch, ks) for ch in todo]
            if lr_config is not None:
                jobs += [(lr_config, plan, ch, ks) for ch in todo]
            if workers > 1 and len(jobs) > 1:
                with ProcessPoolExecutor(max_workers=workers) as pool:
                    results = list(pool.map(_chunk_job, jobs, chunksize=1))
            else:
                results = [_chunk_job(j) for j in jobs]
            for (cfg, *_), (chunk_id, outcomes, seconds) in zip(jobs, results, strict=True):
                if cfg is lr_config:
                    decisions[("lr", domain, chunk_id)] = {o.k: o for o in outcomes}
                    continue
                decisions[(domain, chunk_id)] = {o.k: o for o in outcomes}
                chunk_seconds[(domain, chunk_id)] = seconds
            for k in ks:
                outs = [decisions[(domain, ch.chunk_id)][k] for ch in chunks]
                union = union_figures(
                    outs, union_policy(config.with_overrides({"k": k})), config.suppression.records
                )
                decision, s_seconds = skald[k]
                nodes: dict[str, int] = {}
                for o in outs:
                    nodes[o.decision.node_paper] = nodes.get(o.decision.node_paper, 0) + 1
                own_sum = sum(o.decision.figures.dm_star for o in outs)
                row = {
                    "chunks": c,
                    "chunk_rows": chunk_rows,
                    "n_records": stats.n_rows,
                    "k": k,
                    "skald_node_paper": decision.node_paper,
                    "skald_node": json.dumps(list(decision.node)),
                    "skald_root_paper": _paper(plan, plan.root),
                    "skald_dm_star": decision.figures.dm_star,
                    "skald_n_suppressed": decision.figures.n_suppressed,
                    "skald_n_classes": decision.figures.n_classes,
                    "per_chunk_nodes_paper": "; ".join(
                        f"{p} x{n}" for p, n in sorted(nodes.items(), key=lambda x: -x[1])
                    ),
                    "per_chunk_dm_star_union": union["dm_star"],
                    "per_chunk_dm_star_sum": own_sum,
                    "per_chunk_n_suppressed": union["n_suppressed"],
                    "per_chunk_n_classes": union["n_equivalence_classes"],
                    "dm_ratio": union["dm_star"] / decision.figures.dm_star,
                    "dm_ratio_sum": own_sum / decision.figures.dm_star,
                    "skald_seconds": round(s_seconds, 2),
                    "root_mode": roots[0],
                    **_other_roots(by_root, roots[1:], k, union["dm_star"]),
                    "per_chunk_seconds": round(
                        sum(chunk_seconds[(domain, ch.chunk_id)] for ch in chunks) / len(ks), 2
                    ),
                    **_objective_scores(objective, decision, outs),
                    **_recoded(lr_config, plan, hist_of[c], decision, decisions, domain, chunks, k),
                }
                rows.append(row)
                log.info(
                    "c=%d k=%d: SKALD %s DM*=%d | per-chunk %s DM*=%d | ratio %.2f",
                    c,
                    k,
                    decision.node_paper,
                    decision.figures.dm_star,
                    row["per_chunk_nodes_paper"],
                    union["dm_star"],
                    row["dm_ratio"],
                )
                if releases:
                    _check_releases(config, work, c, k, row)
        total = time.perf_counter() - t0
        write_outputs(rows, out, total, t_gen, workers)
        return rows
    finally:
        if own_tmp:
            shutil.rmtree(work, ignore_errors=True)


def _objective_scores(objective: str, decision, outs) -> dict:
    """With another objective than DM*: SKALD's score and the chunks' own scores (each chunk
    minimised the same objective over its own records)."""
    if objective == "dm_star":
        return {}
    own = [o.decision.quality.scores[objective] for o in outs]
    own = [x for x in own if x is not None]
    return {
        "objective": objective,
        "skald_score": decision.quality.scores[objective],
        "per_chunk_score_min": min(own, default=None),
        "per_chunk_score_max": max(own, default=None),
    }


def _skald(config, stats, chunks, ks, t_scan: float, hists: dict | None = None, mode: str = ""):
    """SKALD's plan and decision per k for one root mode (phases 1-2 shared by the k's)."""
    t = time.perf_counter()
    plan = pipeline.plan_root(config, stats)
    hist = pipeline.count_histogram(config, plan, chunks)
    if hists is not None:
        hists[mode] = hist
    plan = plan.with_root(hist.node)  # the root phase 2 settled on (adaptive: ADR 0012)
    t_phase12 = t_scan + time.perf_counter() - t
    cache = RollUpCache(plan, hist)
    out = {}
    for k in ks:
        t = time.perf_counter()
        decision = pipeline.search_lattice(config.with_overrides({"k": k}), plan, hist, cache)
        out[k] = (decision, t_phase12 / len(ks) + time.perf_counter() - t)
    return plan, out


def _recoded(lr_config, plan, hist, decision, decisions, domain, chunks, k) -> dict:
    """With --local-recoding: SKALD's release and the per-chunk union after local recoding
    (docs/design.md §4f), each side recoding its own suppressed records."""
    if lr_config is None:
        return {}
    from airflow_skald.core.config.policy import build_policy
    from airflow_skald.core.search.recoded import local_recoding

    config = lr_config.with_overrides({"k": k})
    policy = build_policy(config, plan.stats.sensitive, plan.stats.n_rows)
    recoded = local_recoding(config, plan, hist, decision, policy)
    outs = [decisions[("lr", domain, ch.chunk_id)][k] for ch in chunks]
    union = union_figures(outs, union_policy(config), config.suppression.records)
    return {
        "lr_skald_dm_star": recoded.figures.dm_star,
        "lr_skald_n_suppressed": recoded.figures.n_suppressed,
        "lr_skald_steps": len(recoded.steps),
        "lr_per_chunk_dm_star_union": union["dm_star"],
        "lr_per_chunk_n_suppressed": union["n_suppressed"],
        "lr_dm_ratio": union["dm_star"] / recoded.figures.dm_star,
    }


def _other_roots(by_root: dict, modes: tuple[str, ...], k: int, per_chunk_dm: int) -> dict:
    """SKALD's figures with the other root modes (e.g. the paper's rule beside adaptive)."""
    row = {}
    for mode in modes:
        plan, skald = by_root[mode]
        decision = skald[k][0]
        row[f"{mode}_root_paper"] = _paper(plan, plan.root)
        row[f"{mode}_node_paper"] = decision.node_paper
        row[f"{mode}_dm_star"] = decision.figures.dm_star
        row[f"{mode}_dm_ratio"] = per_chunk_dm / decision.figures.dm_star
    return row


def _paper(plan, node) -> str:
    from airflow_skald.core.encode.dimensions import paper_notation

    return paper_notation(plan.dims, node)


def _check_releases(config, work: Path, c: int, k: int, row: dict) -> None:
    """Write both releases through the product's own runs and check they agree with the row."""
    rel = work / "releases"
    config = config.with_overrides({"k": k})
    skald_cfg = replace(config, output=replace(config.output, path=str(rel / f"skald-c{c}-k{k}")))
    m = runner.run(skald_cfg)
    base_cfg = replace(
        config, output=replace(config.output, path=str(rel / f"per-chunk-c{c}-k{k}"))
    )
    b = run_per_chunk(base_cfg)
    checks = {
        "skald_dm_star": m["dm_star"],
        "skald_node_paper": m["node_paper"],
        "per_chunk_dm_star_union": b["dm_star"],
        "per_chunk_dm_star_sum": b["dm_star_sum_of_chunks"],
        "per_chunk_n_suppressed": b["n_suppressed"],
    }
    for key, value in checks.items():
        if row[key] != value:
            raise RuntimeError(
                f"c={c} k={k}: {key} is {row[key]} but the written release has {value}"
            )
    row["skald_release"] = skald_cfg.output.path
    row["per_chunk_release"] = base_cfg.output.path


def write_outputs(rows: list[dict], out: Path, total: float, t_gen: float, workers: int) -> None:
    with open(out / "paper_experiment.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(
                {
                    **r,
                    "dm_ratio": f"{r['dm_ratio']:.4f}",
                    "dm_ratio_sum": f"{r['dm_ratio_sum']:.4f}",
                }
            )
    (out / "paper_experiment.md").write_text(markdown(rows, total, t_gen, workers))
    chart(rows, out / "dm_ratio.png")


def markdown(rows: list[dict], total: float, t_gen: float, workers: int) -> str:
    chunk_rows = rows[0]["chunk_rows"] if rows else 0
    counts = sorted({r["chunks"] for r in rows})
    objective = rows[0].get("objective") if rows else None
    lines = [
        "# SKALD vs per-chunk anonymisation (the paper's experiment)",
        "",
        *(
            [
                f"Objective: **{objective}** (docs/design.md §4d): SKALD and every chunk minimise it. "
                "Its score for SKALD's node, and the range of the chunks' own scores (c, k): "
                + "; ".join(
                    f"({r['chunks']}, {r['k']}) {r['skald_score']:.4g} vs "
                    f"{r['per_chunk_score_min']:.4g}..{r['per_chunk_score_max']:.4g}"
                    for r in rows
                ),
                "",
            ]
            if objective
            else []
        ),
        f"Paper's synthetic medical dataset, chunks of {chunk_rows:,} rows "
        f"(the paper: 1,000,000), first c chunks for c in {counts}; suppression limit 1 %. "
        "Nodes in the paper's notation ((blood group, profession levels from 1), "
        "(age, BMI, encoded PIN widths)). Per-chunk = each chunk anonymised alone with its own "
        "optimal node and no RAM bound (ARX's situation); its DM* is that of the union of the "
        "released chunks (identical released tuples across chunks form one class); "
        "`sum` = sum of the chunks' own DM*. Ratio = per-chunk DM* / SKALD DM* "
        "(> 1: SKALD loses less information).",
        "",
        "| k | chunks | records | SKALD node | per-chunk node(s) (x chunks) | SKALD DM* "
        "| per-chunk DM* (union) | ratio | ratio (sum) |",
        "|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["k"], r["chunks"])):
        lines.append(
            f"| {r['k']} | {r['chunks']} | {r['n_records']:,} | `{r['skald_node_paper']}` "
            f"| `{r['per_chunk_nodes_paper']}` | {r['skald_dm_star']:,} "
            f"| {r['per_chunk_dm_star_union']:,} | **{r['dm_ratio']:.2f}** "
            f"| {r['dm_ratio_sum']:.2f} |"
        )
    lines += [
        "",
        "Minimum DM* ratio over k per chunk count (the paper: >= 4 at 25, >= 9 at 125):",
        "",
    ]
    for c in counts:
        sel = [r["dm_ratio"] for r in rows if r["chunks"] == c]
        paper = PAPER["ratio_at_least"].get(c)
        lines.append(
            f"- {c} chunk(s): min {min(sel):.2f}, max {max(sel):.2f}"
            + (f" (paper: at least {paper})" if paper else "")
        )
    if any("paper_dm_star" in r for r in rows):
        lines += [
            "",
            "Root modes (docs/design.md §4a): the table above uses the adaptive root (N_RAM bounds the "
            "root's non-empty bins); the paper's rule (N_RAM bounds its possible bins) gives:",
            "",
            "| k | chunks | adaptive root | adaptive DM* | ratio | paper root | paper DM* | ratio |",
            "|---:|---:|---|---:|---:|---|---:|---:|",
        ]
        for r in sorted(rows, key=lambda r: (r["k"], r["chunks"])):
            lines.append(
                f"| {r['k']} | {r['chunks']} | `{r['skald_root_paper']}` | {r['skald_dm_star']:,} "
                f"| {r['dm_ratio']:.2f} | `{r['paper_root_paper']}` | {r['paper_dm_star']:,} "
                f"| {r['paper_dm_ratio']:.2f} |"
            )
    if any("lr_skald_dm_star" in r for r in rows):
        lines += [
            "",
            "With local recoding (docs/design.md §4f, ARX's optimizeIterativeFast): each side recodes the "
            "records its node suppressed, step by step (per-chunk: within each chunk).",
            "",
            "| k | chunks | SKALD+LR DM* | suppressed | steps | per-chunk+LR DM* (union) "
            "| suppressed | ratio |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in sorted(rows, key=lambda r: (r["k"], r["chunks"])):
            lines.append(
                f"| {r['k']} | {r['chunks']} | {r['lr_skald_dm_star']:,} "
                f"| {r['lr_skald_n_suppressed']:,} | {r['lr_skald_steps']} "
                f"| {r['lr_per_chunk_dm_star_union']:,} | {r['lr_per_chunk_n_suppressed']:,} "
                f"| **{r['lr_dm_ratio']:.2f}** |"
            )
    lines += [
        "",
        "The paper's Table III (k = 50, 1M-row chunks): SKALD "
        + ", ".join(f"{c} chunks `{s}`" for c, (s, _) in PAPER["k50_nodes"].items())
        + "; ARX per chunk `((3,4),(4,24,4))` throughout.",
        "",
        "Reading the ratios: the union is the release a data user actually gets, so its DM* "
        "is the comparable figure; the sum of the chunks' own DM* is not the DM* of any release "
        "of the whole table (a class of 50 in each of 125 chunks counts 125*50^2 there, but is "
        "one class of 6250 records in the union), so `ratio (sum)` below 1 does not mean the "
        "per-chunk release is better.",
        "",
        f"Run time {total:.0f} s on {os.cpu_count()} CPU(s) ({workers} worker process(es)), "
        f"of which {t_gen:.0f} s generating the data; {_cpu_seconds():.0f} CPU-seconds in all "
        f"processes; load average at the end {_load()}. "
        f"Reproduce: `python benchmarks/paper_experiment.py --chunk-rows {chunk_rows} "
        f"--chunks {','.join(map(str, counts))} "
        f"--k {','.join(str(k) for k in sorted({r['k'] for r in rows}))}`.",
        "",
    ]
    return "\n".join(lines)


def _cpu_seconds() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _load() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg()) + " (1/5/15 min)"
    except OSError:
        return "n/a"


def chart(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    ks = sorted({r["k"] for r in rows})
    counts = sorted({r["chunks"] for r in rows})
    ratio = {(r["k"], r["chunks"]): r["dm_ratio"] for r in rows}
    width = 0.8 / max(len(counts), 1)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = plt.cm.viridis([i / max(len(counts) - 1, 1) for i in range(len(counts))])
    for j, c in enumerate(counts):
        xs = [i + (j - (len(counts) - 1) / 2) * width for i in range(len(ks))]
        ys = [ratio.get((k, c), 0) for k in ks]
        bars = ax.bar(xs, ys, width, label=f"{c} chunk{'s' if c > 1 else ''}", color=colours[j])
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    ax.axhline(1, color="black", lw=0.8, ls="--")
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_xlabel("k")
    ax.set_ylabel("DM* ratio (per-chunk / SKALD)")
    chunk_rows = rows[0]["chunk_rows"] if rows else 0
    ax.set_title(f"DM* ratio vs k for different numbers of chunks ({chunk_rows:,} rows per chunk)")
    ax.legend(title="chunks")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunk-rows", type=int, default=20_000)
    p.add_argument("--chunks", default="1,5,25,125")
    p.add_argument("--k", default="10,50,250,1000")
    p.add_argument("--out", default=str(ROOT / "results"))
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", help="keep the generated data and releases here (default: temp)")
    p.add_argument(
        "--releases",
        action="store_true",
        help="also write and verify every release (skald run / --per-chunk); slow",
    )
    p.add_argument(
        "--roots",
        default="adaptive,paper",
        help="root modes, the first one charted (default: adaptive,paper)",
    )
    p.add_argument(
        "--objective",
        default="dm_star",
        help="the quality model SKALD and the per-chunk baseline minimise (docs/design.md §4d); results "
        "go to OUT/objective-NAME unless it is dm_star",
    )
    p.add_argument(
        "--local-recoding",
        default=None,
        help="RECORDS: also SKALD and the per-chunk baseline with local recoding (docs/design.md §4f), "
        "columns lr_* (e.g. 0.01)",
    )
    args = p.parse_args(argv)
    if args.objective != "dm_star" and args.out == str(ROOT / "results"):
        args.out = str(ROOT / "results" / f"objective-{args.objective}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("airflow_skald").setLevel(logging.WARNING)
    rows = run_experiment(
        args.chunk_rows,
        _ints(args.chunks),
        _ints(args.k),
        Path(args.out),
        workers=args.workers,
        seed=args.seed,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        releases=args.releases,
        roots=tuple(args.roots.split(",")),
        objective=args.objective,
        local_recoding=args.local_recoding,
    )
    print((Path(args.out) / "paper_experiment.md").read_text())
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
