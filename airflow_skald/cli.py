"""The `skald` command line: run, generate, verify (docs/design.md §6). A thin shell over the pipeline.

Exit codes: 0 success, 1 a release failed verification, 2 bad input (one line, no traceback,
nothing half-written left behind).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from airflow_skald.core.errors import SkaldInputError, VerificationError


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line too (exit 2), like every other bad input."""

    def error(self, message: str):
        self.exit(2, f"skald: error: {message} (see '{self.prog} --help')\n")


# `skald audit` flags: where to read, and the thresholds to audit against
_AUDIT_SETTINGS = (
    "input_path",
    "chunk_rows",
    "k",
    "suppression_limit",
    "l",
    "t",
    "c",
    "k_map",
    "average_risk",
    "sample_uniqueness",
    "population_uniqueness",
    "b_likeness",
    "d_disclosure",
    "risk_threshold",
    "risk_sampling_fraction",
    "risk_population",
)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="skald", description="k-anonymise datasets larger than RAM")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="anonymise a dataset (three passes over its chunks)")
    r.add_argument("config", help="YAML configuration file")
    _add_settings(r)
    r.add_argument("--per-chunk", action="store_true", help="baseline: each chunk anonymised alone")
    r.add_argument(
        "--workers", default="1", help="worker processes for the per-chunk work (default 1)"
    )
    r.add_argument("--quiet", "-q", action="store_true", help="no progress lines")

    g = sub.add_parser(
        "generate", help="write a synthetic dataset (the paper's, or a clinical table)"
    )
    g.add_argument("--rows", type=int, required=True)
    g.add_argument("--chunk-rows", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True)
    g.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    g.add_argument(
        "--schema",
        choices=("paper", "clinical"),
        default="paper",
        help="paper: the SKALD paper's table; clinical: dates, ZIP and ICD-10 codes (docs/design.md §3a)",
    )
    g.add_argument(
        "--overwrite", action="store_true", help="replace the dataset in a non-empty --out folder"
    )

    h = sub.add_parser(
        "hierarchy", help="write the hierarchy a QID's rule builds over the data (ARX CSV)"
    )
    h.add_argument("config", help="YAML configuration file")
    h.add_argument("--qid", required=True, help="the quasi-identifier")
    h.add_argument("--out", help="CSV file to write (default: standard output)")
    h.add_argument("--check", action="store_true", help="print levels and counts per level instead")

    v = sub.add_parser("verify", help="re-check that a release is k-anonymous")
    v.add_argument("output", help="release folder")
    _add_settings(v, only=("k", "suppression_limit"), suffix=" (default: the manifest's)")
    v.add_argument("--qids", help="comma-separated QID columns (default: from the manifest)")
    v.add_argument(
        "--connection",
        help="a table release: the database URI, or the environment variable holding it "
        "(default: the connection its manifest names)",
    )

    a = sub.add_parser(
        "audit", help="check a dataset or release as it is against the config's criteria"
    )
    a.add_argument("config", help="YAML configuration file")
    _add_settings(a, only=_AUDIT_SETTINGS)
    return p


def _add_settings(
    parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None, suffix: str = ""
) -> None:
    """One flag per row of the settings table (core.settings); values are validated there."""
    from airflow_skald.core.settings.table import SETTINGS

    for setting in SETTINGS:
        if only is not None and setting.name not in only:
            continue
        text = (setting.description + suffix).replace("%", "%%")  # argparse formats help with %
        if setting.cli:
            parser.add_argument(setting.flag, dest=setting.name, help=text)
        elif setting.schema["type"] == "boolean":
            parser.add_argument(
                setting.flag,
                dest=setting.name,
                action="store_true",
                default=None,
                help=text,
            )


def _int_arg(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SkaldInputError(f"--{name} must be an integer") from None


def _cmd_run(args: argparse.Namespace) -> int:
    from airflow_skald.core.config.run_config import OVERRIDE_KEYS, load_config
    from airflow_skald.core.run.runner import run

    overrides = {key: getattr(args, key, None) for key in OVERRIDE_KEYS}
    config = load_config(args.config, overrides)
    from airflow_skald.core.progress import cli_progress

    progress = cli_progress(quiet=args.quiet)  # a bar on a TTY; else the log's per-chunk lines
    workers = _int_arg(args.workers, "workers")
    if workers < 1:
        raise SkaldInputError("--workers must be at least 1")
    if args.per_chunk:
        from airflow_skald.core.run.baseline import run_per_chunk

        manifest = run_per_chunk(config, progress, workers=workers)
    else:
        manifest = run(config, progress, workers=workers)
    summary = {
        key: manifest.get(key)
        for key in (
            "node",
            "node_paper",
            "root_node",
            "dm_star",
            "n_suppressed",
            "n_equivalence_classes",
            "min_class_size",
            "chunks",
            "verified",
        )
    }
    summary["release"] = config.output.path
    if config.output_table is not None:
        summary["table"] = config.output_table.qualified
    summary["manifest"] = config.output.path.rstrip("/") + "/manifest.json"
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from airflow_skald.core.data.generate import generate_dataset

    if args.rows < 1 or args.chunk_rows < 1:
        raise SkaldInputError("--rows and --chunk-rows must be positive")
    try:
        path = generate_dataset(
            args.rows,
            args.chunk_rows,
            args.seed,
            args.out,
            args.format,
            overwrite=args.overwrite,
            schema=args.schema,
        )
    except OSError as exc:
        raise SkaldInputError(f"cannot write to {args.out}: {exc.strerror}") from None
    print(f"wrote {args.rows} rows to {args.out}; config: {path}")
    return 0


def _cmd_hierarchy(args: argparse.Namespace) -> int:
    from pathlib import Path

    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.encode.hierarchy_export import arx_csv, check_summary, qid_hierarchy

    hierarchy = qid_hierarchy(load_config(args.config), args.qid)
    if args.check:
        print(json.dumps(check_summary(args.qid, hierarchy), indent=2))
        return 0
    text = arx_csv(hierarchy)
    if not args.out:
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)  # never half a file
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SkaldInputError(f"cannot write {args.out}: {exc.strerror}") from None
    print(f"wrote {len(hierarchy.table)} rows, {hierarchy.top_level + 1} levels to {args.out}")
    return 0


VERIFIED_IN_PART = 4  # `skald verify`: what it re-checked holds, but not every criterion was


def _cmd_verify(args: argparse.Namespace) -> int:
    from airflow_skald.core.release.check.verify import verify_release
    from airflow_skald.core.settings.table import parse_overrides

    given = parse_overrides({"k": args.k, "suppression_limit": args.suppression_limit})
    qids = [q.strip() for q in args.qids.split(",")] if args.qids else None
    from airflow_skald.core.data.database.connection import resolve_uri
    from airflow_skald.core.engine.sql.table_counts import verify_table_release
    from airflow_skald.core.release.check.release_reading import read_manifest
    from airflow_skald.core.release.table_release import is_table_release

    limits = (given.get("k"), given.get("suppression_limit"))
    if is_table_release(read_manifest(args.output)):
        report = verify_table_release(
            args.output, resolve_uri, *limits, qids=qids, connection=args.connection
        )
    else:
        report = verify_release(args.output, *limits, qids=qids)
    print(json.dumps(report, indent=2))
    if report["verified"] is not True:  # "partial": criteria listed under not_rechecked
        print(
            f"skald: verified in part: {len(report['not_rechecked'])} criterion(s) could not "
            "be re-checked (not_rechecked)",
            file=sys.stderr,
        )
        return VERIFIED_IN_PART
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.release.check.audit import audit

    overrides = {key: getattr(args, key, None) for key in _AUDIT_SETTINGS}
    config = load_config(args.config, overrides)
    report = audit(config)
    print(json.dumps(report, indent=2))
    return 0 if report["holds"] else 1


def main(argv: list[str] | None = None) -> int:
    import airflow_skald.core.run  # noqa: F401  its import tunes this process (run/startup.py),

    # before any command imports numpy or pyarrow
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if getattr(args, "quiet", False) else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("botocore", "aiobotocore", "s3fs", "urllib3", "fsspec"):  # s3:// chatter
        logging.getLogger(noisy).setLevel(logging.WARNING)
    commands = {
        "run": _cmd_run,
        "generate": _cmd_generate,
        "hierarchy": _cmd_hierarchy,
        "verify": _cmd_verify,
        "audit": _cmd_audit,
    }
    try:
        return commands[args.command](args)
    except SkaldInputError as exc:
        print(f"skald: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except VerificationError as exc:
        print(f"skald: verification failed: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("skald: interrupted; nothing was published", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: never echo a message that may hold data
        if os.environ.get("SKALD_DEBUG"):
            raise
        print(
            f"skald: internal error ({type(exc).__name__}); nothing was published. "
            "Set SKALD_DEBUG=1 to see the traceback.",
            file=sys.stderr,
        )
        return 3


def _one_line(exc: Exception) -> str:
    """The message on one line even if it quotes a label or path holding a line break."""
    return str(exc).replace("\r", "\\r").replace("\n", "\\n")


def entry_point() -> None:
    """Console-script entry: run, flush, and leave without interpreter teardown.

    pyarrow's C++ thread pools can abort the process at teardown ("terminate called without an
    active exception", seen intermittently after `skald verify` had printed its result), which
    would turn a success into SIGABRT. Everything is flushed first; files are already closed.
    """
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry_point()
