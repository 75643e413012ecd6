"""What l-diversity, t-closeness, differential privacy and δ-presence cost end to end (issues
11 and 32, "Speed").

    python benchmarks/bench_criteria.py [--chunks 125] [--chunk-rows 1000000] [--repeats 2]
        [--old-commit 7eefe06] [--work /tmp/skald-crit]

On the paper's synthetic dataset (`skald generate --seed 1`; health_condition is the skewed
sensitive attribute), runs `skald run` in a fresh process under `/usr/bin/time -v` for:

- a: k-only, k=50 (suppression 0.01, the generated config's);
- b: k=50 + distinct l=3;
- c: k=50 + entropy l=3, suppression 0.01;
- d: k=50 + t-closeness, equal distance, t=0.2, suppression 0.01;

- dp: (ε, δ)-differential privacy in place of k (ε = 2, δ = 1e-5, SafePub's search with the
  default budget and steps, objective dm; the secret from SKALD_BENCH_DP_KEY, a random one
  when unset);
- lr: k=50 with local recoding (`transformation.local_recoding.records = 0.01`, docs/design.md §4f): the
  records the node suppresses released again, step by step, from phase 2's counts;
- micro: k=50 with age released as the mean of its class (`microaggregation: {function: mean,
  cluster: true}`, docs/design.md §4f);
- delta: k=50 + δ-presence [0, 0.5] over a research subset (every tenth record, as make
  bench-arx's rows): the same chunks with a boolean column `in_study` added (written once
  beside the data, `{data}-subset`: as much disk again as the data);

all with the default (adaptive) root, plus two k-only references: `a_paper` (this code with
`--root paper`) and `a_old` (the same run with the code of `--old-commit`, before the criteria
work, extracted with `git archive` and put first on PYTHONPATH). Configurations alternate
within each round (the order rotates between rounds) so that drift in the load of this shared
machine hits them alike; each ratio to (a) is taken within a round.

Reports per configuration: wall time (range), ratio to (a), CPU time (user + system), peak RSS
(`/usr/bin/time`'s maximum resident set size), the phase timings of run.json, the root chosen
and its non-empty bins, nodes evaluated vs the lattice size, and the figures reached (smallest
distinct count, smallest entropy l, largest distance). Results go to
`{work}/bench_criteria-{chunks}x{chunk_rows}.json`, written after every run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SENSITIVE = "health_condition"
TARGETS = {"b": 1.5, "c": 3.0, "d": 3.0}
# CPU (user + system) over k-only's: issue 32 (dp, delta) and issue 31 (lr, micro)
CPU_TARGETS = {"dp": 1.2, "delta": 1.2, "lr": 1.3, "micro": 1.2}
MICRO_QID = "age"  # the generated data's numerical QID released as its class's mean (micro)
SUBSET_COLUMN = "in_study"


def configurations(k: int) -> dict[str, dict]:
    """Name -> privacy section, `--root` and whether it runs the old code."""
    base = {"k": k, "suppression_limit": 0.01}
    return {
        "a": {"privacy": base},
        "b": {
            "privacy": {
                **base,
                "l_diversity": [{"attribute": SENSITIVE, "l": 3, "variant": "distinct"}],
            }
        },
        "c": {
            "privacy": {
                **base,
                "l_diversity": [{"attribute": SENSITIVE, "l": 3, "variant": "entropy"}],
            }
        },
        "d": {
            "privacy": {
                **base,
                "t_closeness": [{"attribute": SENSITIVE, "t": 0.2, "distance": "equal"}],
            }
        },
        "dp": {
            "privacy": {"differential_privacy": {"epsilon": 2.0, "delta": 1e-5}},
            "quality": {"objective": "dm"},
            "dp_key": {"env": "SKALD_BENCH_DP_KEY"},
            # docs/design.md §4e: levels from configured hierarchies only, every released column one
            "dp_qids": True,
        },
        "lr": {"privacy": base, "transformation": {"local_recoding": {"records": 0.01}}},
        "micro": {"privacy": base, "microaggregate": {"function": "mean", "cluster": True}},
        "delta": {
            "privacy": {**base, "delta_presence": {"min": 0, "max": 0.5}},
            "research_subset": {"column": SUBSET_COLUMN},
            "subset_data": True,
        },
        "a_paper": {"privacy": base, "root": "paper"},
        "a_old": {"privacy": base, "old": True},
    }


def _generate(rows: int, chunk_rows: int, out: Path) -> None:
    """In a child process, so this process stays small (children inherit its peak RSS)."""
    if not (out / "skald.yaml").exists():
        cmd = [sys.executable, "-m", "airflow_skald.cli", "generate", "--rows", str(rows)]
        cmd += ["--chunk-rows", str(chunk_rows), "--seed", "1", "--out", str(out), "--overwrite"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _with_subset(data: Path) -> Path:
    """The same chunks with `in_study` (global row number % 10 == 0) added, written once in a
    child process (this one stays small)."""
    out = data.with_name(data.name + "-subset")
    if (out / "skald.yaml").exists():
        return out
    code = f"""
import shutil
from pathlib import Path
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
src, out = Path({str(data)!r}), Path({str(out)!r})
out.mkdir(parents=True, exist_ok=True)
start = 0
for f in sorted(src.glob("chunk-*.parquet")):
    t = pq.read_table(f)
    flags = pa.array(np.arange(start, start + t.num_rows) % 10 == 0)
    pq.write_table(t.append_column({SUBSET_COLUMN!r}, flags), out / f.name)
    start += t.num_rows
shutil.copy(src / "skald.yaml", out / "skald.yaml")
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    return out


def _old_source(commit: str, work: Path) -> Path:
    """The package at `commit`, extracted once with `git archive`; checked to be the one
    imported under its PYTHONPATH."""
    dest = work / f"src-{commit}"
    if not (dest / "airflow_skald").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    where = subprocess.run(
        [sys.executable, "-c", "import airflow_skald; print(airflow_skald.__file__)"],
        env={**os.environ, "PYTHONPATH": str(dest)},
        cwd="/",
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not where.startswith(str(dest)):
        raise SystemExit(f"PYTHONPATH={dest} imports {where}, not the old code")
    return dest


def write_configs(data: Path, work: Path, k: int) -> dict[str, Path]:
    """One config file per configuration: the generated one with its privacy section replaced
    (JSON, which YAML reads), input as an absolute path."""
    base = yaml.safe_load((data / "skald.yaml").read_text())
    base["input"]["path"] = str(data)
    paths = {}
    for name, spec in configurations(k).items():
        body = {**base, "privacy": spec["privacy"]}
        for key in ("quality", "dp_key", "research_subset", "transformation"):
            if key in spec:
                body[key] = spec[key]
        if "microaggregate" in spec:
            body["quasi_identifiers"] = [
                {**q, "microaggregation": spec["microaggregate"]} if q["name"] == MICRO_QID else q
                for q in base["quasi_identifiers"]
            ]
        if spec.get("dp_qids"):  # the categorical QIDs; the others are not released
            cats = [q for q in base["quasi_identifiers"] if q["type"] == "categorical"]
            body["quasi_identifiers"] = cats
            body["qid_priority"] = [q["name"] for q in cats]
            dropped = [q["name"] for q in base["quasi_identifiers"] if q not in cats]
            dropped += base.get("sensitive_attributes") or []
            body["direct_identifiers"] = [*base.get("direct_identifiers", []), *dropped]
            body["sensitive_attributes"] = []
        if spec.get("subset_data"):
            body["input"] = {**base["input"], "path": str(data.with_name(data.name + "-subset"))}
        body["output"] = {**base["output"], "path": str(work / f"out-{data.name}-{name}")}
        if spec.get("root"):
            body["memory"] = {**base.get("memory", {}), "root": spec["root"]}
        path = work / f"{data.name}-{name}.yaml"
        path.write_text(json.dumps(body, indent=1))
        paths[name] = path
    return paths


_TIME_FIELDS = {
    "Maximum resident set size (kbytes)": "max_rss_kb",
    "User time (seconds)": "user_s",
    "System time (seconds)": "system_s",
    "Elapsed (wall clock) time (h:mm:ss or m:ss)": "elapsed",
}


def _parse_time_v(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        key, _, value = line.strip().rpartition(": ")
        if key in _TIME_FIELDS:
            out[_TIME_FIELDS[key]] = value
    return out


def _code_version(old_src: Path | None) -> str:
    """The code a run uses: the old commit, or HEAD (+ '-dirty' if the package is edited)."""
    if old_src is not None:
        return old_src.name.removeprefix("src-")
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "airflow_skald"], capture_output=True, text=True
    ).stdout.strip()
    return head.stdout.strip() + ("-dirty" if dirty else "")


def run_once(config: Path, output: Path, old_src: Path | None, timeout: float) -> dict:
    """`skald run` in a fresh process under /usr/bin/time -v; figures from run.json and the
    manifest (the old code has no run.json: its timings are in the manifest). A run past
    `timeout` seconds is stopped (its whole process group) and reported as such."""
    shutil.rmtree(output, ignore_errors=True)
    env = dict(os.environ)
    if old_src is not None:
        env["PYTHONPATH"] = str(old_src)
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "airflow_skald.cli", "run", str(config)]
    cmd += ["--output", str(output), "--quiet"]
    load_before = os.getloadavg()[0]
    code = _code_version(old_src)
    t = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate()
        shutil.rmtree(output, ignore_errors=True)
        return {
            "code": code,
            "wall_s": round(time.perf_counter() - t, 2),
            "exit": "timeout",
            "load_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        }
    wall = time.perf_counter() - t
    tv = _parse_time_v(stderr)
    result = {
        "code": code,
        "wall_s": round(wall, 2),
        "exit": proc.returncode,
        "load_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    if "max_rss_kb" in tv:
        result["peak_rss_mb"] = round(int(tv["max_rss_kb"]) / 1024, 1)
        result["cpu_s"] = round(float(tv["user_s"]) + float(tv["system_s"]), 2)
    if proc.returncode != 0:
        tail = re.sub(r"\n\s+\w[^\n]*: [^\n]*", "", stderr)[-2000:]
        result["stderr"] = tail
        return result
    manifest = json.loads((output / "manifest.json").read_text())
    run_json = output / "run.json"
    record = json.loads(run_json.read_text()) if run_json.exists() else manifest
    result.update(
        {
            "timings_s": {k: round(v, 2) for k, v in record.get("timings_s", {}).items()},
            "peak_rss_mb_self": round(record.get("peak_rss_bytes", 0) / 2**20, 1),
            "root_mode": manifest.get("root_mode", "paper"),
            "root_node_paper": manifest.get("root_node_paper"),
            "root_bins": manifest.get("root_bins"),
            "root_bins_nonempty": manifest.get("root_bins_nonempty")
            or manifest["lattice"].get("root_bins_nonempty"),
            "lattice": manifest["lattice"],
            "node_paper": manifest.get("node_paper"),
            "dm_star": (manifest.get("quality") or manifest).get("dm_star"),
            "n_suppressed": manifest.get("n_suppressed"),
            "n_classes": manifest.get("n_equivalence_classes"),
            "privacy_models": manifest.get("privacy_models"),
        }
    )
    shutil.rmtree(output, ignore_errors=True)  # 0.35 GB per release at full scale
    return result


def _figures(models) -> str:
    """The figure each criterion reached, e.g. 'distinct l: min 4'."""
    if not isinstance(models, list):
        return ""
    parts = []
    for m in models:
        if not isinstance(m, dict) or m.get("model") in (None, "k-anonymity"):
            continue
        reached = {k: v for k, v in m.items() if k.startswith(("min_", "max_", "reached"))}
        shown = ", ".join(
            f"{k} {round(v, 4) if isinstance(v, float) else v}" for k, v in reached.items()
        )
        parts.append(f"{m.get('model')}: {shown}")
    return "; ".join(parts)


def summarise(runs: dict[str, list[dict]]) -> str:
    names = [n for n in runs if runs[n]]
    lines = [
        "| config | wall s (range) | wall / a (per round) | CPU s | CPU / a | peak RSS MB | root | "
        "non-empty bins | evaluated / nodes | node | figures |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        ok = [r for r in runs[name] if r.get("exit") == 0]
        if not ok:
            lines.append(
                f"| {name} | failed ({runs[name][-1]['exit']}, {runs[name][-1]['wall_s']} s) |"
            )
            continue
        walls = [r["wall_s"] for r in ok]
        base = {r["round"]: r["wall_s"] for r in runs.get("a", []) if r.get("exit") == 0}
        ratios = [r["wall_s"] / base[r["round"]] for r in ok if r["round"] in base]
        base_cpu = {r["round"]: r["cpu_s"] for r in runs.get("a", []) if r.get("exit") == 0}
        cpu_ratios = [r["cpu_s"] / base_cpu[r["round"]] for r in ok if r["round"] in base_cpu]
        cpu = [r["cpu_s"] for r in ok]
        rss = [r["peak_rss_mb"] for r in ok]
        last = ok[-1]
        lat = last["lattice"]
        lines.append(
            f"| {name} ({', '.join(sorted({str(r.get('code', '?')) for r in ok}))}) | "
            f"{min(walls):.1f}-{max(walls):.1f} (median "
            f"{statistics.median(walls):.1f}) | "
            + (f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-")
            + f" | {min(cpu):.1f}-{max(cpu):.1f} | "
            + (f"{min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}" if cpu_ratios else "-")
            + f" | {min(rss):.0f}-{max(rss):.0f} | "
            f"{last['root_node_paper']} | {last['root_bins_nonempty']} | "
            f"{lat.get('evaluated')} / {lat.get('nodes')} | {last['node_paper']} | "
            f"{_figures(last.get('privacy_models'))} |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--chunks", type=int, default=125)
    p.add_argument("--chunk-rows", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--old-commit", default="7eefe06", help="'' skips the old-code reference")
    p.add_argument("--only", default="", help="comma-separated configurations (default: all)")
    p.add_argument("--work", default="/tmp/skald-crit")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    p.add_argument("--tag", default="", help="suffix of the results file's name")
    p.add_argument(
        "--summarise", nargs="+", default=None, help="only print the table of these result files"
    )
    args = p.parse_args()
    if args.summarise:
        merged: dict[str, list[dict]] = {}
        for i, f in enumerate(args.summarise):  # rounds of different files kept apart
            for name, rs in json.loads(Path(f).read_text())["runs"].items():
                merged.setdefault(name, []).extend({**r, "round": (i, r["round"])} for r in rs)
        print(summarise(merged))
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"paper-{args.chunks}x{args.chunk_rows}"
    _generate(args.chunks * args.chunk_rows, args.chunk_rows, data)
    specs = configurations(args.k)
    names = [n for n in (args.only.split(",") if args.only else specs) if n]
    if any(specs[n].get("subset_data") for n in names):
        _with_subset(data)
    os.environ.setdefault("SKALD_BENCH_DP_KEY", secrets.token_hex(32))  # the runs inherit it
    configs = write_configs(data, work, args.k)
    if not args.old_commit:
        names = [n for n in names if not specs[n].get("old")]
    old_src = _old_source(args.old_commit, work) if "a_old" in names else None
    runs: dict[str, list[dict]] = {n: [] for n in names}
    out_json = work / f"bench_criteria-{args.chunks}x{args.chunk_rows}{args.tag}.json"
    report = {
        "rows": args.chunks * args.chunk_rows,
        "chunks": args.chunks,
        "cores": os.cpu_count(),
        "old_commit": args.old_commit,
        "runs": runs,
    }
    for rnd in range(args.repeats):
        order = names[rnd % len(names) :] + names[: rnd % len(names)]
        for name in order:
            spec = specs[name]
            r = run_once(
                configs[name],
                work / f"out-{data.name}-{name}",
                old_src if spec.get("old") else None,
                args.timeout,
            )
            r["round"] = rnd
            runs[name].append(r)
            print(
                f"round {rnd} {name}: {r['wall_s']} s wall, {r.get('cpu_s')} s CPU, "
                f"{r.get('peak_rss_mb')} MB, load {r['load_1min']}, exit {r['exit']}",
                flush=True,
            )
            if r["exit"] != 0:
                print(r.get("stderr", ""), file=sys.stderr, flush=True)
            out_json.write_text(json.dumps(report, indent=1))
    print(
        f"\n{args.chunks} x {args.chunk_rows:,} rows, {args.repeats} rounds, "
        f"load (1 min) {min(x for v in runs.values() for r in v for x in r['load_1min'])}-"
        f"{max(x for v in runs.values() for r in v for x in r['load_1min'])}"
    )
    print(summarise(runs))
    for name, limit in TARGETS.items():
        if name in runs and "a" in runs and runs[name] and runs["a"]:
            med = statistics.median(r["wall_s"] for r in runs[name] if r.get("exit") == 0)
            base = statistics.median(r["wall_s"] for r in runs["a"] if r.get("exit") == 0)
            print(f"{name}: median wall / median (a) = {med / base:.2f} (target <= {limit})")
    for name, limit in CPU_TARGETS.items():
        ok = {r["round"]: r["cpu_s"] for r in runs.get(name, []) if r.get("exit") == 0}
        base = {r["round"]: r["cpu_s"] for r in runs.get("a", []) if r.get("exit") == 0}
        ratios = [ok[i] / base[i] for i in ok if i in base]
        if ratios:
            print(
                f"{name}: CPU / CPU of (a), per round {min(ratios):.2f}-{max(ratios):.2f} "
                f"(target <= {limit})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
