"""`make demo`: generate a small paper-shaped dataset and anonymise it end to end.

By default it runs the `skald_anonymise` Airflow DAG with `airflow dags test` in a temporary
AIRFLOW_HOME (SQLite metadata DB, local object storage); `--cli` runs `skald run` instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m airflow_skald.demo")
    p.add_argument("--dir", default="demo-output", help="where data, release and report go")
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--chunk-rows", type=int, default=50_000)
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--cli", action="store_true", help="run the CLI pipeline instead of the DAG")
    args = p.parse_args(argv)

    from airflow_skald.core.data.generate import generate_dataset

    base = Path(args.dir).resolve()
    data = base / "data"
    print(f"generating {args.rows} rows in chunks of {args.chunk_rows} into {data}")
    config = generate_dataset(args.rows, args.chunk_rows, seed=1, out_dir=data, overwrite=True)
    output = base / "release"
    if not args.cli:
        try:
            from airflow_skald.dag_demo import run_dag_demo
        except ImportError:
            run_dag_demo = None
        if run_dag_demo is not None:
            code = run_dag_demo(config, output, args.k, base)
            code = code or run_with_l(config, base / "release-k-and-l", args.k)
            return code or run_clinical(base, args.chunk_rows)
    code = run_cli(config, output, args.k)
    code = code or run_with_l(config, base / "release-k-and-l", args.k)
    return code or run_clinical(base, args.chunk_rows)


def run_clinical(base: Path, chunk_rows: int, rows: int = 100_000, k: int = 10) -> int:
    """A clinical table (dates of birth and admission, ZIP and ICD-10 codes, length of stay)
    whose hierarchies are all built from rules (docs/design.md §3a), released at k, and the ZIP
    hierarchy the rule built written as an ARX CSV beside it."""
    from airflow_skald.cli import main as cli_main
    from airflow_skald.core.data.generate import generate_dataset

    data = base / "clinical"
    print(f"\nclinical table: {rows} rows, hierarchies built from rules ({data / 'skald.yaml'})")
    config = generate_dataset(rows, chunk_rows, 1, data, overwrite=True, schema="clinical")
    code = run_cli(config, base / "release-clinical", k)
    code = code or run_for_researchers(config, base / "release-clinical-research", k)
    if code:
        return code
    hierarchy = base / "zip-hierarchy.csv"
    return cli_main(["hierarchy", str(config), "--qid", "zip", "--out", str(hierarchy)])


#: what keeps the clinical table useful to a researcher (docs/design.md §4d, §4f): Loss averaged over the
#: QIDs, diagnosis, sex, length of stay and age weighted above admission date and ZIP, and the
#: records the global node suppresses given back by local recoding
RESEARCH = {
    "quality": {
        "objective": "loss",
        "aggregate": "arithmetic_mean",
        "weights": {
            "icd10": 1,
            "sex": 0.6,
            "length_of_stay": 0.6,
            "birth_date": 0.4,
            "admitted": 0.05,
            "zip": 0.05,
        },
    },
    "transformation": {"local_recoding": {"records": 0.01}},
}


def run_for_researchers(config: Path, output: Path, k: int) -> int:
    """The clinical table again, with local recoding and an objective and weights that keep
    the clinically useful columns; what differs from the default release is printed."""
    import yaml

    body = {**yaml.safe_load(config.read_text()), **RESEARCH}
    research = config.with_name("skald-research.yaml")
    research.write_text(yaml.safe_dump(body, sort_keys=False))
    print(
        f"\nthe same table for researchers ({research.name}): Loss (arithmetic mean) weighting "
        "diagnosis, sex, length of stay and age above admission date and ZIP, and local "
        "recoding (records 0.01)"
    )
    code = run_cli(research, output, k)
    if code:
        return code
    default = output.with_name("release-clinical")
    print(difference(default, output))
    return 0


def difference(default: Path, research: Path) -> str:
    """Per QID the labels each release keeps, and the records each suppresses."""
    a = json.loads((default / "manifest.json").read_text())
    b = json.loads((research / "manifest.json").read_text())

    def kept(m: dict) -> dict[str, str]:
        out = {}
        for q in (m.get("quality_models") or {}).get("qids", []):
            n = len(q["labels"]) if isinstance(q["labels"], list) else q["labels"]
            out[q["name"]] = "'*' for everyone" if q["level"] == q["top"] else f"{n} values"
        return out

    ka, kb = kept(a), kept(b)
    lr = b.get("local_recoding") or {}
    before = (lr.get("before") or {}).get("n_suppressed", b["n_suppressed"])
    lines = [
        "\nwhat the researcher's release keeps (default DM* release -> research release):",
        *(f"  {q:<15} {ka.get(q, '?'):<18} -> {kb.get(q, '?')}" for q in ka),
        f"  {'suppressed':<15} {a['n_suppressed']:<18,} -> {b['n_suppressed']:,} "
        f"({before:,} at the global node, given back in {len(lr.get('steps', []))} local "
        "recoding step(s))",
        f"  reports: {default / 'report.html'}",
        f"           {research / 'report.html'}",
    ]
    return "\n".join(lines)


def run_with_l(config: Path, output: Path, k: int) -> int:
    """The same data released with k and entropy l-diversity on health_condition, beside a
    k-only release at the same k, so the demo shows what the criterion costs."""
    import yaml

    k = min(k, 10)  # classes of 50+ records are l-diverse anyway on this data
    body = yaml.safe_load(config.read_text())
    criterion = {"attribute": "health_condition", "l": 3, "variant": "entropy"}
    body["privacy"]["l_diversity"] = [criterion]
    with_l = config.with_name("skald-k-and-l.yaml")
    with_l.write_text(yaml.safe_dump(body, sort_keys=False))
    print(f"\nk={k} alone, then k={k} with entropy l=3 on health_condition ({with_l.name}):")
    return run_cli(config, output.with_name("release-k-only"), k) or run_cli(with_l, output, k)


def run_cli(config: Path, output: Path, k: int) -> int:
    from airflow_skald.cli import main as cli_main

    argv = ["run", str(config), "--output", str(output), "--k", str(k), "--quiet", "--overwrite"]
    code = cli_main(argv)
    if code != 0:
        return code
    manifest = json.loads((output / "manifest.json").read_text())
    print(
        f"\nchosen node {manifest['node_paper']} (levels {manifest['node']})\n"
        f"RAM root {manifest['root_node_paper']}\n"
        f"DM* = {manifest['dm_star']}, suppressed {manifest['n_suppressed']} of "
        f"{manifest['n_records']}, {manifest['n_equivalence_classes']} classes\n"
        f"release:  {output}\nmanifest: {output / 'manifest.json'}"
    )
    for model in manifest.get("privacy_models", []):
        print("criterion: " + ", ".join(f"{key}={value}" for key, value in model.items()))
    report = output / "report.html"
    if report.exists():
        print(f"report:   {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
