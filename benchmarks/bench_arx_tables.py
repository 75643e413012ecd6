"""ARX's benchmark tables end to end beside ARX 3.9.2 itself (issues 23, 35): CPU and wall of
whole `skald run` processes and of whole ARX processes (`../shared/arx/arx`), run in the same
session, interleaved, and the search alone on both sides; the same answer asserted.

    python benchmarks/bench_arx_tables.py [--repeats 3] [--work DIR] [--no-exhaustive]
                                          [--no-arx] [--only cup-0,fars-5,...]

Tables (`arx_tables.py`): CUP- and FARS-shaped generated tables (ARX's files are not
available here) and ARX's Adult; k = 5 unless a case says otherwise. Each round runs every
case once on each side, product and ARX alternating (a burst of load hits both alike); every
run is a fresh process (start-up included: Python's import, the JVM's start and ARX's CSV
load are part of what a user waits for). CPU = user + system of that child from `wait4`;
peak RSS likewise. ARX is given the same table as CSV and the same hierarchies (a `*` level
appended where the product appends one, docs/design.md §3), the same privacy model and its own quality
model of the product's objective (`dm_star_arx` <-> `dmstar`, `loss` <-> `loss`).

Search alone: the CPU of the product's `search` phase (run.json's `cpu_s.search`: the search's
thread) and ARX's `cpu_anonymize_main_thread_s` (CPU of `ARXAnonymizer.anonymize`'s thread:
its encoding of the data and its search).

Same answer: the node (every QID's level) and the number of suppressed records must agree on
both sides, except where a case says the product's answer is the better one (population
uniqueness: the shortest fulfilling prefix, which ARX's binary search can miss; docs/design.md §4c):
there the product's DM* must be no worse than ARX's, with the figures printed.
ARX's game-theoretic models (`adult-profit-*`: profitability with and without attack, prosecutor
and journalist, the publisher-payout objective) run on ARX's side through the project's harness
of the same jars (benchmarks/arx_profitability). This round's models have rows of their own: local recoding (`adult-lr-5`: every step's node and
records released must be ARX's), microaggregation (`adult-micro-5`: node and suppressed
records; the released means are compared with ARX's in tests/) and differential privacy
(`adult-dp`: SafePub's node and sample are random draws on both sides, so the derived k and
beta are the answer compared). Issue 44: `adult-l3-grassberger-5` (Grassberger's entropy
estimator: the same node; ARX stops its sum early and may suppress more, ADR 0043),
`adult-rank-5` (Loss with ARX's RANK aggregate) and `adult-lr-adaptive` (ARX's
`optimizeIterative(output, 0.05, 100, 0.05)` with every record suppressible, through
benchmarks/arx_iterative: every releasing step's node and records, ADR 0048),
`adult-dpresence-min-0` (δ-presence with δmin > 0, AECS, limit 0: ARX judges every population
class, docs/design.md §4e) and `adult-sampleuniq-loss-4` (sample uniqueness under Loss:
ARX's order of equal-size classes, docs/design.md §4c) and `adult-tordered-explicit-5`
(ordered-distance t-closeness in an explicit value order, `order: [...]`, ARX's
`DataType.createOrderedString` through benchmarks/arx_ordered, ADR 0044); `--only issue44`
runs that issue's 14 rows.

Without `java` on PATH the ARX side is skipped with one line (the product side still runs).
`run/exhaustive`: the product's whole-run CPU over a plain exhaustive search of the same
lattice (`bench_search.exhaustive`), timed once in this process on the same histogram.
The machine is shared: read ranges, not single figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import yaml
from adult_data import ADULT_CSV
from arx_answers import ITERATIVE
from arx_tables import ADULT_ORDER_FILE, ADULT_SENSITIVE, write_table

ARX = Path(__file__).resolve().parents[2] / "shared" / "arx" / "arx"
PROFITABILITY = Path(__file__).resolve().parent / "arx_profitability" / "arx-profitability"
ORDERED = Path(__file__).resolve().parent / "arx_ordered" / "arx-ordered"


@dataclass(frozen=True)
class Case:
    table: str
    limit: float
    privacy: dict = field(default_factory=dict)  # merged into the config's privacy:
    arx: tuple[str, ...] = ()  # ARX's privacy-model arguments (with --k 5 unless no_k)
    objective: str = "dm_star_arx"
    criterion: str | None = None  # arx_tables' l3 / t0.2 (Adult's sensitive attribute)
    no_k: bool = False
    better: bool = False  # the product may find a better node than ARX (DM* no worse)
    subset: bool = False  # Adult as a population table, every tenth record the research subset
    body: dict = field(default_factory=dict)  # merged into the config (transformation, dp_key)
    qid: dict = field(default_factory=dict)  # per QID name, keys merged into its config entry
    # what "same answer" compares: the node and suppressed records ("node"); local recoding's
    # steps, each one's node and records released ("steps"); DP's derived k and beta ("dp":
    # its node and sample are random draws)
    answer: str = "node"
    command: Path | None = None  # a harness of the project's (same jars) in place of ARX's
    # the harness takes `arx` as its whole arguments (profitability, ADR 0046; explicit order)
    harness: bool = False


PU = {"max": 0.01, "model": "pitman", "sampling_fraction": 0.1}
CASES: dict[str, Case] = {
    "cup-0": Case("cup", 0.0),
    "cup-5": Case("cup", 0.05),
    "fars-0": Case("fars", 0.0),
    "fars-5": Case("fars", 0.05),
    "adult-0": Case("adult", 0.0),
    "adult-5": Case("adult", 0.05),
    "adult-l3-5": Case("adult", 0.05, criterion="l3", arx=("--ldiv", "occupation:entropy:3")),
    "adult-t0.2-0": Case("adult", 0.0, criterion="t0.2", arx=("--tclose", "occupation:equal:0.2")),
    "adult-t0.2-5": Case("adult", 0.05, criterion="t0.2", arx=("--tclose", "occupation:equal:0.2")),
    "adult-avgrisk-5": Case("adult", 0.05, {"average_risk": {"max": 0.05}}, ("--avg-risk", "0.05")),
    "adult-popuniq-0": Case(
        "adult",
        0.0,
        {"population_uniqueness": PU},
        ("--pop-unique", "0.01:pitman:0.1"),
        no_k=True,
    ),
    "adult-popuniq-5": Case(
        "adult",
        0.05,
        {"population_uniqueness": PU},
        ("--pop-unique", "0.01:pitman:0.1"),
        no_k=True,
        better=True,
    ),
    "adult-loss-5": Case("adult", 0.05, objective="loss"),
    "adult-dpresence-5": Case(
        "adult",
        0.05,
        {"k": 2, "delta_presence": {"min": 0, "max": 0.5}},
        ("--dpresence", "0:0.5", "--subset", "mod:10:0"),
        no_k=True,
        subset=True,
    ),
    "adult-kmap-exact-5": Case(
        "adult",
        0.05,
        {"k_map": {"k": 5}},
        ("--kmap", "5", "--subset", "mod:10:0"),
        no_k=True,
        subset=True,
    ),
    "adult-kmap-5": Case(
        "adult",
        0.05,
        {"k_map": {"k": 5, "sampling_fraction": 0.1, "estimator": "zero_truncated_poisson"}},
        ("--kmap", "5:ztp:0.1"),
    ),
}
# issue 44 item 3: Zayatz's model against the USA's population (ARX's Region.USA), Loss
ZAYATZ = {"max": 0.0001, "model": "zayatz", "population": 317238626}
CASES["adult-zayatz-4"] = Case(
    "adult",
    0.04,
    {"population_uniqueness": ZAYATZ},
    ("--pop-unique", "0.0001:zayatz:usa"),
    objective="loss",
    no_k=True,
)
# issue 44 item 9: ARX's game-theoretic models and the publisher-payout objective (ADR 0046),
# with ARX's TestAnonymizationProfitability getConfig2() (attacks pay below 6 records)
COST = {
    "publisher_benefit": 1200,
    "publisher_loss": 3000,
    "adversary_gain": 120,
    "adversary_cost": 20,
}
ARX_COST = ("--benefit", "1200", "--loss", "3000", "--gain", "120", "--cost", "20")
for _name, _prof, _model, _subset in (
    ("adult-profit-pros-4", COST, "prosecutor", False),
    ("adult-profit-jour-4", {**COST, "attacker": "journalist"}, "journalist", True),
    ("adult-profit-pros-noattack-4", {"attack": False}, "prosecutor-noattack", False),
    (
        "adult-profit-jour-noattack-4",
        {**COST, "attacker": "journalist", "attack": False},
        "journalist-noattack",
        True,
    ),
):
    _cost = ARX_COST if "adversary_cost" in _prof else ()
    _metric = "payout-journalist" if _subset else "payout-prosecutor"
    CASES[_name] = Case(
        "adult",
        0.04,
        {"profitability": _prof},
        ("--model", _model, *_cost, "--metric", _metric)
        + (("--subset", "mod:10:0") if _subset else ()),
        objective="publisher_payout",
        no_k=True,
        subset=_subset,
        command=PROFITABILITY,
        harness=True,
    )
DP_ENV = "SKALD_BENCH_DP_KEY"  # the DP case's secret (a benchmark's, not a real key)
CASES.update(
    {
        "adult-lr-5": Case(
            "adult",
            0.05,
            arx=("--local-recoding", "0.01"),
            body={"transformation": {"local_recoding": {"records": 0.01}}},
            answer="steps",
        ),
        "adult-micro-5": Case(
            "adult",
            0.05,
            arx=("--datatype", "age=integer", "--microagg", "age=arithmetic_mean:cluster"),
            qid={"age": {"microaggregation": {"function": "mean", "cluster": True}}},
        ),
        "adult-dp": Case(
            "adult",
            1.0,
            {"differential_privacy": {"epsilon": 2.0, "delta": 1e-5, "search_steps": 100}},
            ("--dp", "2:1e-5:0.1:100:expansions"),
            objective="loss",
            no_k=True,
            # every released column generalised (docs/design.md §4e): occupation is not released
            body={
                "dp_key": {"env": DP_ENV},
                "suppressed_records": "drop",
                "sensitive_attributes": [],
                "direct_identifiers": [ADULT_SENSITIVE],
            },
            answer="dp",
        ),
    }
)
# issue 44 items 7, 8, 10: Grassberger's entropy estimator, adaptive local recoding (ARX's
# optimizeIterative, through benchmarks/arx_iterative), the RANK aggregate
ADAPTIVE = {"mode": "adaptive", "gs_factor": 0.05, "max_steps": 100, "adaption_factor": 0.05}
CASES.update(
    {
        # ARX stops summing n_i G(n_i) at the first partial sum above its bound, in its hash
        # table's bucket order (ADR 0043): the same node, ARX may suppress more classes
        "adult-l3-grassberger-5": Case(
            "adult",
            0.05,
            criterion="l3g",
            arx=("--ldiv", "occupation:entropy-grassberger:3"),
            answer="node-early-abort",
        ),
        "adult-rank-5": Case(
            "adult",
            0.05,
            arx=("--gs-factor", "0.5", "--aggregate", "rank"),
            objective="loss",
            body={"quality": {"objective": "loss", "aggregate": "rank"}},
        ),
        "adult-lr-adaptive": Case(
            "adult",
            1.0,
            arx=("--iterative", "0.05:100:0.05"),
            objective="loss",
            body={"transformation": {"local_recoding": ADAPTIVE}},
            answer="steps",
            command=ITERATIVE,
        ),
    }
)
# issue 44 items 4-6 (ADR 0044, 0045): ARX's non-monotone NU-entropy with suppression
CASES["adult-entropy-nm-5"] = Case("adult", 0.05, objective="nu_entropy_nm")
# ... ordered-distance t-closeness over text, in ARX's STRING order
CASES["adult-tordered-text-5"] = Case(
    "adult",
    0.05,
    criterion="to0.2",
    arx=("--tclose", "occupation:ordered:0.2", "--datatype", "occupation=string"),
)
# ... and in an explicit order (`order: [...]`; ARX's DataType.createOrderedString through
# benchmarks/arx_ordered, the one option ARX's harness lacks)
CASES["adult-tordered-explicit-5"] = Case(
    "adult",
    0.05,
    criterion="to0.2-listed",
    arx=("--sensitive", ADULT_SENSITIVE, "--order", str(ADULT_ORDER_FILE))
    + ("--t", "0.2", "--k", "5"),
    command=ORDERED,
    harness=True,
)
# ... l-diversity with a research subset (δ-presence), ADR 0045
CASES["adult-dpresence-l3-5"] = Case(
    "adult",
    0.05,
    {"k": 2, "delta_presence": {"min": 0, "max": 0.5}},
    ("--dpresence", "0:0.5", "--subset", "mod:10:0", "--ldiv", "occupation:entropy:3"),
    criterion="l3",
    no_k=True,
    subset=True,
)
# issue 44 item 1 (docs/design.md §4e): δ-presence with δmin > 0, judged over every
# population class
CASES["adult-dpresence-min-0"] = Case(
    "adult",
    0.0,
    {"delta_presence": {"min": 0.05, "max": 0.15}},
    ("--dpresence", "0.05:0.15", "--subset", "mod:10:0"),
    objective="aecs",
    no_k=True,
    subset=True,
)
# ... item 2 (docs/design.md §4c): sample-based suppression of equal-size classes in ARX's
# order under Loss
CASES["adult-sampleuniq-loss-4"] = Case(
    "adult",
    0.04,
    {"sample_uniqueness": {"max": 0.01}},
    ("--sample-unique", "0.01"),
    objective="loss",
    no_k=True,
)
ISSUE44 = (
    "adult-dpresence-min-0,adult-sampleuniq-loss-4,adult-zayatz-4,adult-entropy-nm-5,"
    "adult-dpresence-l3-5,adult-tordered-text-5,adult-tordered-explicit-5,"
    "adult-l3-grassberger-5,adult-lr-adaptive,"
    "adult-profit-pros-4,adult-profit-jour-4,adult-profit-pros-noattack-4,"
    "adult-profit-jour-noattack-4,adult-rank-5"
)
ARX_METRIC = {
    "dm_star_arx": "dmstar",
    "loss": "loss",
    "dm": "dm",
    "aecs": "aecs",
    "nu_entropy_nm": "entropy-nm",
}


def _range(xs: list[float], digits: int = 2) -> str:
    lo, hi = min(xs), max(xs)
    return (
        f"{lo:.{digits}f}"
        if f"{lo:.{digits}f}" == f"{hi:.{digits}f}"
        else (f"{lo:.{digits}f}-{hi:.{digits}f}")
    )


def _arx_hierarchy(src: Path, dst: Path, sep: str) -> None:
    """ARX's copy of a hierarchy file: a `*` column appended when the last is not constant
    (the product appends that level itself, docs/design.md §3)."""
    rows = [r for r in csv.reader(src.read_text().splitlines(), delimiter=sep) if r]
    if len({r[-1] for r in rows}) > 1:
        rows = [[*r, "*"] for r in rows]
    dst.write_text("\n".join(sep.join(r) for r in rows) + "\n")


def _arx_args(case: Case, body: dict, folder: Path) -> list[str]:
    """ARX's command line for the case: the same CSV (written once), hierarchies, model."""
    if case.table == "adult":
        data, sep = ADULT_CSV, ";"
    else:
        data, sep = folder / "data.csv", ";"
        if not data.exists():
            table = pq.read_table(folder / "data.parquet")
            pacsv.write_csv(table, data, pacsv.WriteOptions(delimiter=";", quoting_style="none"))
    hier = folder / "arx-hierarchies"
    hier.mkdir(exist_ok=True)
    args = [str(case.command or ARX), "--input", str(data), "--sep", sep]
    qids = [q["name"] for q in body["quasi_identifiers"]]
    for q in body["quasi_identifiers"]:
        dst = hier / f"{q['name']}.csv"
        if not dst.exists():
            _arx_hierarchy(Path(q["hierarchy_file"]), dst, ";")
        args += ["--qid", f"{q['name']}={dst}"]
    if case.harness:  # its own arguments; every other column insensitive
        return [*args, *case.arx, "--suppression", str(case.limit)]
    columns = (
        pq.read_schema(folder / "data.parquet").names
        if case.table != "adult"
        else (data.read_text().split("\n", 1)[0].split(";"))
    )
    others = [c for c in columns if c not in qids and not (case.criterion and c == ADULT_SENSITIVE)]
    args += ["--insensitive", ",".join(others)]
    if not case.no_k:
        args += ["--k", "5"]
    if case.subset and "k" in case.privacy:
        args += ["--k", str(case.privacy["k"])]
    args += [*case.arx, "--suppression", str(case.limit)]
    args += ["--metric", ARX_METRIC[case.objective]]
    return args + ([] if case.command else ["--no-own-stats"])


def write_configs(work: Path, cases: list[str]) -> dict[str, tuple[Path, list[str]]]:
    """A config file and ARX's command line per case (tables generated once per folder)."""
    out = {}
    for name in cases:
        case = CASES[name]
        folder = work / case.table
        if case.table == "adult":
            body = write_table("adult", folder, criterion=case.criterion)
        elif (folder / "body.yaml").exists():
            body = yaml.safe_load((folder / "body.yaml").read_text())
        else:  # in a child: Linux children inherit the parent's peak RSS (ru_maxrss)
            code = (
                "import sys, yaml; from pathlib import Path; from arx_tables import write_table;"
                "p = Path(sys.argv[2]); body = write_table(sys.argv[1], p);"
                "(p / 'body.yaml').write_text(yaml.safe_dump(body, sort_keys=False))"
            )
            here = Path(__file__).resolve().parent
            subprocess.run(
                [sys.executable, "-c", code, case.table, str(folder)], check=True, cwd=here
            )
            body = yaml.safe_load((folder / "body.yaml").read_text())
        folder.mkdir(parents=True, exist_ok=True)
        body["privacy"]["suppression_limit"] = case.limit
        if case.no_k:
            body["privacy"].pop("k", None)
        body["privacy"].update(case.privacy)
        body["quality"] = {"objective": case.objective}
        body.update(case.body)
        for q in body["quasi_identifiers"]:
            q.update(case.qid.get(q["name"], {}))
        if case.subset:  # the population table: Adult with its research-subset flag
            population = work / "adult-population.csv"
            if not population.exists():
                lines = ADULT_CSV.read_text().splitlines()
                flags = [("true" if i % 10 == 0 else "false") for i in range(len(lines) - 1)]
                rows = [f"{lines[0]};in_study"]
                rows += [f"{r};{f}" for r, f in zip(lines[1:], flags, strict=True)]
                population.write_text("\n".join(rows) + "\n")
            body["input"]["path"] = str(population)
            body["research_subset"] = {"column": "in_study"}
            if not case.criterion:  # l-diversity with a subset keeps its attribute sensitive
                body.pop("sensitive_attributes", None)
        body["output"]["path"] = str(work / "out" / name)
        path = work / f"{name}.yaml"
        path.write_text(yaml.safe_dump(body, sort_keys=False))
        out[name] = (path, _arx_args(case, body, folder))
    return out


def _child(
    cmd: list[str], stdout=subprocess.DEVNULL, env: dict | None = None
) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=stdout, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, status


def run_product(config: Path) -> dict:
    """One `skald run` in a fresh process: CPU (user + system), wall, peak RSS, its answer."""
    body = yaml.safe_load(config.read_text())
    out = Path(body["output"]["path"])
    cmd = [sys.executable, "-m", "airflow_skald.cli", "run", str(config), "--quiet"]
    cmd += ["--overwrite"] if out.exists() else []
    env = {**os.environ, DP_ENV: "bench-dp-secret-0123456789abcdef"}
    cpu, wall, rss, status = _child(cmd, env=env)
    if status != 0:
        raise SystemExit(f"{config.name}: skald run failed ({status})")
    manifest = json.loads((out / "manifest.json").read_text())
    record = json.loads((out / "run.json").read_text())
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_rss_mb": rss,
        "search_s": record["cpu_s"]["search"],
        "node": manifest["node"],
        "dm_star_arx": manifest["dm_star_arx"],
        "n_suppressed": manifest["n_suppressed"],
        "evaluated": manifest["lattice"]["evaluated"],
        "nodes": manifest["lattice"]["nodes"],
        "dm_star": manifest["dm_star"],
        "steps": [
            (s["node_levels"], s["released"])
            for s in (manifest.get("local_recoding") or {}).get("steps", [])
        ],
        "dp": [(manifest.get("differential_privacy") or {}).get(x) for x in ("k", "beta")],
    }


def run_arx(args: list[str], out: Path) -> dict:
    """One ARX 3.9.2 process (JVM start, CSV load, search, output): CPU, wall, its answer."""
    with out.open("w") as f:
        cpu, wall, rss, status = _child(args, stdout=f)
    if status != 0:
        raise SystemExit(f"ARX failed ({status}): {' '.join(args)}")
    got = json.loads(out.read_text())
    # a research subset: the released records are the subset's (ARX's view)
    stats = got.get("arx_class_statistics_subset") or got.get("arx_class_statistics") or {}
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_rss_mb": rss,
        "search_s": got["cpu_anonymize_main_thread_s"],
        "node": got["node"],
        "dm_star": got.get("arx_information_loss_value"),
        "suppressed": stats.get("suppressed_records"),
        "checked": got.get("transformations_checked"),
        "steps": [  # ARX lists the searches that released nothing too (optimizeIterative)
            (s["node"], s["records_transformed"])
            for s in (got.get("local_recoding") or {}).get("steps", [])
            if s["records_transformed"]
        ],
        "dp": [(got.get("dp") or {}).get(x) for x in ("derived_k", "beta")],
    }


def exhaustive_cpu(config: Path, limit: float) -> dict:
    """The plain exhaustive search's CPU on the run's histogram (same node and DM* asserted)."""
    from bench_search import side_by_side

    got = side_by_side(config, limit, 1, True)
    return {k: got[k] for k in ("exhaustive_cpu_s", "search_cpu_s", "exhaustive_nodes")}


def _same_answer(name: str, product: dict, arx: dict) -> str:
    kind = CASES[name].answer
    if kind == "steps":  # local recoding: every step's node and records released
        if product["node"] == arx["node"] and product["steps"] == arx["steps"]:
            return f"yes ({len(arx['steps'])} steps)"
        raise SystemExit(f"{name}: steps {product['steps']} are not ARX's {arx['steps']}")
    if kind == "dp":  # random draws: the derived k and beta are the comparable answer
        if product["dp"][0] == arx["dp"][0] and abs(product["dp"][1] - arx["dp"][1]) < 1e-12:
            return f"k, beta equal ({product['dp'][0]}, {product['dp'][1]:.6f}); node drawn"
        raise SystemExit(f"{name}: k, beta {product['dp']} are not ARX's {arx['dp']}")
    if product["node"] == arx["node"] and product["n_suppressed"] == arx["suppressed"]:
        return "yes"
    same_node = product["node"] == arx["node"]
    if kind == "node-early-abort" and same_node and product["n_suppressed"] <= arx["suppressed"]:
        return f"same node; {product['n_suppressed']} suppressed, ARX {arx['suppressed']}"
    if CASES[name].better and product["dm_star_arx"] <= float(arx["dm_star"]):
        return f"better (DM* {product['dm_star_arx']} vs ARX's {arx['dm_star']})"
    raise SystemExit(
        f"{name}: the product's node {product['node']} ({product['n_suppressed']} suppressed) "
        f"is not ARX's {arx['node']} ({arx['suppressed']})"
    )


def _rounds(repeats, cases, configs, with_arx, work, runs, arx_runs) -> None:
    """Every case once on each side per round, interleaved (a burst of load hits every case
    alike), each run's figures appended to work/runs.jsonl as it ends."""
    for r in range(repeats):
        for case in cases:
            config, arx_args = configs[case]
            first_arx = with_arx and r % 2 == 1  # alternate which side goes first
            sides = ["arx", "product"] if first_arx else ["product"] + ["arx"] * with_arx
            for side in sides:
                if side == "arx":
                    got = run_arx(arx_args, work / f"{case}.arx.json")
                    arx_runs[case].append(got)
                else:
                    got = run_product(config)
                    runs[case].append(got)
                with (work / "runs.jsonl").open("a") as f:
                    f.write(json.dumps({"round": r, "case": case, "side": side, **got}) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/skald-arx-tables"))
    parser.add_argument("--no-exhaustive", action="store_true")
    parser.add_argument("--no-arx", action="store_true", help="the product's side only")
    parser.add_argument(
        "--only", default=",".join(CASES), help="comma-separated case names; `issue44`: its rows"
    )
    args = parser.parse_args()
    cases = [c for c in args.only.replace("issue44", ISSUE44).split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    with_arx = not args.no_arx
    if with_arx and shutil.which("java") is None:
        print("ARX side skipped: `java` is not on PATH (install a Java 17 runtime to compare)")
        with_arx = False
    elif with_arx and not ARX.exists():
        print(f"ARX side skipped: {ARX} is missing (../shared must sit beside the repository)")
        with_arx = False
    args.work.mkdir(parents=True, exist_ok=True)
    configs = write_configs(args.work, cases)
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    arx_runs: dict[str, list[dict]] = {c: [] for c in cases}
    load = [os.getloadavg()[0]]
    try:
        _rounds(args.repeats, cases, configs, with_arx, args.work, runs, arx_runs)
    except KeyboardInterrupt:  # Ctrl-C: the table of the pairs run so far
        print("interrupted: the rounds run so far", flush=True)
    load.append(os.getloadavg()[0])
    results = {}
    for case in cases:
        done = min(len(runs[case]), len(arx_runs[case])) if with_arx else len(runs[case])
        if done == 0:
            continue
        rs, arx_runs[case] = runs[case][:done], arx_runs[case][:done]
        if CASES[case].answer == "dp":  # each run draws its own node and sample
            answers = {json.dumps(r["dp"]) for r in rs}
        else:
            answers = {json.dumps([r["node"], r["dm_star_arx"], r["n_suppressed"]]) for r in rs}
        assert len(answers) == 1, f"{case}: runs disagree: {answers}"
        row = {
            "cpu_s": _range([r["cpu_s"] for r in rs]),
            "wall_s": _range([r["wall_s"] for r in rs]),
            "peak_rss_mb": _range([r["peak_rss_mb"] for r in rs], 0),
            "search_s": _range([r["search_s"] for r in rs]),
            "evaluated": f"{rs[0]['evaluated']} of {rs[0]['nodes']}",
            "node": rs[0]["node"],
            "dm_star_arx": rs[0]["dm_star_arx"],
            "n_suppressed": rs[0]["n_suppressed"],
        }
        if with_arx:
            ax = arx_runs[case]
            # per round, the product's CPU over ARX's of the same round (same load)
            ratios = [p["cpu_s"] / a["cpu_s"] for p, a in zip(rs, ax, strict=True)]
            search = [p["search_s"] / a["search_s"] for p, a in zip(rs, ax, strict=True)]
            row.update(
                arx_cpu_s=_range([a["cpu_s"] for a in ax]),
                arx_wall_s=_range([a["wall_s"] for a in ax]),
                arx_peak_rss_mb=_range([a["peak_rss_mb"] for a in ax], 0),
                arx_search_s=_range([a["search_s"] for a in ax]),
                product_over_arx=_range(ratios),
                search_over_arx=_range(search),
                arx_dm_star=ax[0]["dm_star"],
                same_answer=_same_answer(case, rs[0], ax[0]),
            )
        table = CASES[case].table
        if table != "adult" and not args.no_exhaustive:
            ex = exhaustive_cpu(configs[case][0], CASES[case].limit)
            best = min(r["cpu_s"] for r in rs)
            row["exhaustive_cpu_s"] = ex["exhaustive_cpu_s"]
            row["run_over_exhaustive"] = f"{best / float(ex['exhaustive_cpu_s']):.2f}"
        results[case] = row
        print(json.dumps({case: row}), flush=True)
    print(f"\nload average (1 min) at start / end: {load[0]:.1f} / {load[1]:.1f}")
    print(
        "| case | product CPU s | ARX CPU s | product/ARX (per round) | search s (product / ARX) "
        "| search/ARX | same answer | run/exhaustive |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for case, r in results.items():
        print(
            f"| {case} | {r['cpu_s']} | {r.get('arx_cpu_s', '')} | {r.get('product_over_arx', '')} "
            f"| {r['search_s']} / {r.get('arx_search_s', '')} | {r.get('search_over_arx', '')} "
            f"| {r.get('same_answer', '')} | {r.get('run_over_exhaustive', '')} |"
        )
    (args.work / "results.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
