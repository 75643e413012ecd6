"""The bad-input catalogue (issue 6, item 1; docs/design.md §6): every case is a user error.

For each case `skald run` must exit with code 2, print exactly one line on stderr starting
`skald: error:` that names the column / value / file / row where that applies, print no
traceback, leave no output folder and no staging folder behind, and not touch the input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from helpers_data import (
    config_dict,
    leftovers,
    make_table,
    run_inprocess,
    run_subprocess,
    write_config,
    write_dataset,
    write_table,
)

Files = list[Path]


@dataclass
class Case:
    id: str
    expect: list[str]  # substrings of the error line; "{file0}".. are input file names
    fmt: str = "parquet"
    mutate: Callable[[Files, Path], None] | None = None  # (files, tmp_path)
    cfgmut: Callable[[dict, Path], None] | None = None  # (config dict, tmp_path)
    argv: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # substrings that must NOT appear


# ----------------------------------------------------------------------------- mutations


def _read(path: Path) -> pa.Table:
    return pq.read_table(path) if path.suffix == ".parquet" else pacsv.read_csv(path)


def rewrite(i: int, fn: Callable[[pa.Table], pa.Table]):
    def mutate(files: Files, _tmp: Path) -> None:
        write_table(fn(_read(files[i])), files[i], files[i].suffix[1:])

    return mutate


def set_col(name: str, values: list, typ: pa.DataType | None = None):
    def fn(t: pa.Table) -> pa.Table:
        return t.set_column(t.schema.get_field_index(name), name, pa.array(values, typ))

    return fn


def csv_cell(i: int, line: int, col: int, text: str):
    """Set one cell of CSV file i (line 0 is the header, so `line` is the data row number)."""

    def mutate(files: Files, _tmp: Path) -> None:
        lines = files[i].read_text().splitlines()
        cells = lines[line].split(",")
        cells[col] = text
        lines[line] = ",".join(cells)
        files[i].write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))

    return mutate


def csv_append_to_line(i: int, line: int, text: str):
    def mutate(files: Files, _tmp: Path) -> None:
        lines = files[i].read_text().splitlines()
        lines[line] += text
        files[i].write_text("\n".join(lines) + "\n")

    return mutate


def delete_all(files: Files, _tmp: Path) -> None:
    for f in files:
        f.unlink()


def zero_rows(files: Files, _tmp: Path) -> None:
    for f in files:
        write_table(make_table(0), f)


def truncate(i: int):
    def mutate(files: Files, _tmp: Path) -> None:
        data = files[i].read_bytes()
        files[i].write_bytes(data[: len(data) // 2])

    return mutate


def scramble_body(i: int):
    """Keep the magic bytes and footer, garble the column data in between."""

    def mutate(files: Files, _tmp: Path) -> None:
        data = bytearray(files[i].read_bytes())
        for j in range(8, len(data) // 2):
            data[j] = (data[j] * 7 + 13) % 256
        files[i].write_bytes(bytes(data))

    return mutate


def privacy(key: str, value):
    def cfgmut(cfg: dict, _tmp: Path) -> None:
        cfg["privacy"][key] = value

    return cfgmut


def criteria(l_diversity: list | None = None, t_closeness: list | None = None):
    """privacy.l_diversity / t_closeness criteria (docs/design.md §4b) on the dataset's `disease`."""

    def cfgmut(cfg: dict, _tmp: Path) -> None:
        if l_diversity is not None:
            cfg["privacy"]["l_diversity"] = l_diversity
        if t_closeness is not None:
            cfg["privacy"]["t_closeness"] = t_closeness

    return cfgmut


def listed_sensitive(name: str):
    """A criterion on an attribute listed in sensitive_attributes but absent from the data."""

    def cfgmut(cfg: dict, _tmp: Path) -> None:
        cfg["sensitive_attributes"].append(name)
        cfg["privacy"]["l_diversity"] = [{"attribute": name, "l": 2}]

    return cfgmut


DISEASE_GROUPS = {"flu": ["infection"], "asthma": ["chronic"], "none": ["healthy"]}  # no gout


def two_parent_hierarchy(cfg: dict, _tmp: Path) -> None:
    cfg["quasi_identifiers"][0]["hierarchy"] = {
        "Oslo": ["Norway", "Nordic"],
        "Bergen": ["Norway", "Europe"],  # Norway -> Nordic and Norway -> Europe
        "Lund": ["Sweden", "Nordic"],
        "Malmo": ["Sweden", "Nordic"],
    }


def hierarchy_file(text: str | None, name: str = "city_hierarchy.csv"):
    def cfgmut(cfg: dict, tmp: Path) -> None:
        if text is not None:
            (tmp / name).write_text(text)
        qid = cfg["quasi_identifiers"][0]
        del qid["hierarchy"]
        qid["hierarchy_file"] = name  # relative: resolved against the config's folder

    return cfgmut


def widths(values: list):
    def cfgmut(cfg: dict, _tmp: Path) -> None:
        cfg["quasi_identifiers"][1]["widths"] = values

    return cfgmut


def histogram_bins(n: int):
    def cfgmut(cfg: dict, _tmp: Path) -> None:
        cfg["memory"] = {"histogram_bins": n}

    return cfgmut


def input_path(path: str):
    def cfgmut(cfg: dict, tmp: Path) -> None:
        cfg["input"]["path"] = path.format(tmp=tmp, input=cfg["input"]["path"])

    return cfgmut


def output_path(path: str):
    def cfgmut(cfg: dict, tmp: Path) -> None:
        cfg["output"]["path"] = path.format(tmp=tmp, input=cfg["input"]["path"])

    return cfgmut


def not_a_release(cfg: dict, tmp: Path) -> None:
    folder = tmp / "precious"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    cfg["output"]["path"] = str(folder)


# ------------------------------------------------------------------------------- catalogue

CASES = [
    # --- schema
    Case(
        "missing-column",
        ["column 'age'", "missing", "{file0}"],
        mutate=rewrite(0, lambda t: t.drop_columns(["age"])),
    ),
    Case(
        "missing-direct-identifier",
        ["column 'address'", "missing", "{file1}"],
        mutate=rewrite(1, lambda t: t.drop_columns(["address"])),
    ),
    Case(
        "schema-drift-extra-column",
        ["schema drift", "'extra'", "{file2}"],
        mutate=rewrite(2, lambda t: t.append_column("extra", pa.array(["x"] * t.num_rows))),
    ),
    Case(
        "schema-drift-renamed-column",
        ["column 'age'", "missing", "{file1}"],
        mutate=rewrite(
            1, lambda t: t.rename_columns(["Age" if c == "age" else c for c in t.column_names])
        ),
    ),
    Case(
        "schema-drift-csv",
        ["schema drift", "'extra'", "{file1}"],
        fmt="csv",
        mutate=rewrite(1, lambda t: t.append_column("extra", pa.array(["x"] * t.num_rows))),
    ),
    # --- wrong type
    Case(
        "text-in-numerical-qid-parquet",
        ["column 'age'", "{file1}", "numerical"],
        mutate=rewrite(1, set_col("age", ["31"] * 39 + ["SECRET-AGE-TEXT"])),
        absent=["SECRET-AGE-TEXT"],
    ),
    Case(
        "text-in-numerical-qid-csv",
        ["column 'age'", "not a number", "row 5", "{file1}"],
        fmt="csv",
        mutate=csv_cell(1, 5, 4, "SECRET-AGE-TEXT"),
        absent=["SECRET-AGE-TEXT", "Person"],
    ),
    Case(
        "bool-in-numerical-qid",
        ["column 'age'", "{file1}", "numerical"],
        mutate=rewrite(1, set_col("age", [True] * 40, pa.bool_())),
    ),
    Case(
        "csv-not-utf8",
        ["column 'city'", "not valid UTF-8", "row 5", "{file1}"],
        fmt="csv",
        mutate=csv_cell(1, 5, 3, "\udcd8slo"),  # a lone Latin-1 byte
    ),
    Case(
        "numerical-domain-too-wide",
        ["column 'age'", "2^32 units", "min_width"],
        mutate=rewrite(1, set_col("age", [30.0] * 39 + [1e300], pa.float64())),
        absent=["1e+300", "1e300"],
    ),
    Case(
        "uint64-beyond-int64",
        ["column 'age'", "2^32 units"],
        mutate=rewrite(1, set_col("age", [2**63 + 5] * 40, pa.uint64())),
    ),
    # --- nulls, NaN, infinities
    Case(
        "null-in-numerical-qid",
        ["column 'age'", "null", "row 11", "{file1}"],
        mutate=rewrite(1, set_col("age", [30] * 10 + [None] + [30] * 29, pa.int64())),
    ),
    Case(
        "nan-in-numerical-qid",
        ["column 'age'", "NaN", "row 11", "{file1}"],
        mutate=rewrite(1, set_col("age", [30.0] * 10 + [float("nan")] + [30.0] * 29, pa.float64())),
    ),
    Case(
        "infinity-in-numerical-qid",
        ["column 'age'", "infinite", "{file1}"],
        mutate=rewrite(1, set_col("age", [30.0] * 10 + [float("inf")] + [30.0] * 29, pa.float64())),
    ),
    Case(
        "null-in-encoded-qid",
        ["column 'zip'", "null", "row 3", "{file0}"],
        mutate=rewrite(0, set_col("zip", [1001] * 2 + [None] + [1001] * 37, pa.int64())),
    ),
    Case(
        "null-in-categorical-qid",
        ["column 'city'", "null", "row 11", "{file1}"],
        mutate=rewrite(1, set_col("city", ["Oslo"] * 10 + [None] + ["Oslo"] * 29)),
    ),
    Case(
        "empty-numerical-cell-csv",
        ["column 'age'", "null", "row 5", "{file1}"],
        fmt="csv",
        mutate=csv_cell(1, 5, 4, ""),
    ),
    Case(
        "empty-categorical-cell-csv",
        ["column 'city'", "empty value", "row 5", "{file1}"],
        fmt="csv",
        mutate=csv_cell(1, 5, 3, ""),
    ),
    # --- hierarchies
    Case(
        "categorical-value-not-in-hierarchy",
        ["column 'city'", "'Paris'", "not in its hierarchy", "2 row(s)", "row 8", "{file2}"],
        mutate=rewrite(2, set_col("city", ["Oslo"] * 7 + ["Paris", "Paris"] + ["Oslo"] * 31)),
    ),
    Case(
        "value-with-a-newline-not-in-hierarchy",  # the message stays one line, the value cut
        ["column 'city'", "not in its hierarchy", "'Par\\nis", "…'", "1 row(s) among rows 1-40 of"],
        mutate=rewrite(2, set_col("city", ["Oslo"] * 7 + ["Par\nis" + "x" * 60] + ["Oslo"] * 32)),
        absent=["x" * 60],
    ),
    Case(
        "passed-through-column-type-drift",  # parts of one release would disagree
        ["column 'disease'", "type int64 in file", "{file1}", "but string in file", "{file0}"],
        mutate=rewrite(1, set_col("disease", list(range(40)), pa.int64())),
    ),
    Case(
        "hierarchy-label-with-two-parents",
        ["hierarchy of 'city'", "inconsistent", "'Norway'", "two parents"],
        cfgmut=two_parent_hierarchy,
    ),
    Case(
        "hierarchy-file-value-with-two-parents",
        ["hierarchy of 'city'", "'Oslo'", "twice"],
        cfgmut=hierarchy_file("Oslo;Norway;*\nBergen;Norway;*\nLund;Sweden;*\nOslo;Sweden;*\n"),
    ),
    Case(
        "hierarchy-file-ragged",
        ["hierarchy of 'city'", "row 2"],
        cfgmut=hierarchy_file("Oslo;Norway;*\nBergen;*\nLund;Sweden;*\nMalmo;Sweden;*\n"),
    ),
    Case(
        "hierarchy-file-missing",
        ["hierarchy file", "city_hierarchy_missing.csv", "'city'"],
        cfgmut=hierarchy_file(None, "city_hierarchy_missing.csv"),
    ),
    # --- empty or unreadable input
    Case("folder-without-files", ["no parquet files", "{input}"], mutate=delete_all),
    Case("files-with-zero-rows", ["no records", "{input}"], mutate=zero_rows),
    Case(
        "zero-byte-parquet-among-good",
        ["{file1}", "not a valid Parquet file"],
        mutate=lambda files, tmp: files[1].write_bytes(b""),
    ),
    Case(
        "garbage-parquet-among-good",
        ["{file1}", "not a valid Parquet file"],
        mutate=lambda files, tmp: files[1].write_bytes(b"PAR1 certainly not parquet PAR1"),
    ),
    Case("truncated-parquet-among-good", ["{file1}", "Parquet"], mutate=truncate(1)),
    Case("corrupt-parquet-body-among-good", ["{file1}", "corrupt"], mutate=scramble_body(1)),
    Case(
        "zero-byte-csv-among-good",
        ["{file1}", "empty"],
        fmt="csv",
        mutate=lambda files, tmp: files[1].write_bytes(b""),
    ),
    Case(
        "csv-ragged-row",
        ["{file1}", "ragged row 7", "expected 7 columns, got 8"],
        fmt="csv",
        mutate=csv_append_to_line(1, 7, ",SECRET-EXTRA-CELL"),
        absent=["SECRET-EXTRA-CELL", "Person", "Main Street"],
    ),
    # --- privacy settings
    Case("k-below-2", ["k must be an integer >= 2"], cfgmut=privacy("k", 1)),
    Case("k-zero-flag", ["k must be an integer >= 2"], argv=["--k", "0"]),
    Case("k-larger-than-records", ["k=1000", "larger", "(120)"], cfgmut=privacy("k", 1000)),
    Case("k-not-integer", ["k must be an integer"], cfgmut=privacy("k", 2.5)),
    Case("k-text", ["k must be an integer"], cfgmut=privacy("k", "three")),
    Case("k-flag-not-integer", ["k must be an integer"], argv=["--k", "abc"]),
    Case("k-boolean", ["k must be an integer"], cfgmut=privacy("k", True)),
    Case(
        "suppression-limit-above-1",
        ["suppression_limit", "between 0 and 1"],
        cfgmut=privacy("suppression_limit", 1.5),
    ),
    Case(
        "suppression-limit-negative",
        ["suppression_limit", "between 0 and 1"],
        cfgmut=privacy("suppression_limit", -0.1),
    ),
    Case(
        "suppression-limit-text",
        ["suppression_limit", "between 0 and 1"],
        cfgmut=privacy("suppression_limit", "lots"),
    ),
    Case(
        "suppression-limit-flag",
        ["suppression_limit", "between 0 and 1"],
        argv=["--suppression-limit", "2"],
    ),
    Case(  # YAML .nan and .inf are floats, no decimals
        "suppression-limit-nan",
        ["suppression_limit", "between 0 and 1", "'nan'"],
        cfgmut=privacy("suppression_limit", float("nan")),
    ),
    Case(
        "t-infinite",
        ["privacy.t_closeness[0].t", "'inf'"],
        cfgmut=criteria(t_closeness=[{"attribute": "disease", "t": float("inf")}]),
    ),
    Case(
        "recursive-c-nan",
        ["privacy.l_diversity[0].c", "'nan'"],
        cfgmut=criteria(
            [{"attribute": "disease", "l": 2, "variant": "recursive", "c": float("nan")}]
        ),
    ),
    Case("workers-zero", ["--workers must be at least 1"], argv=["--workers", "0"]),
    Case(
        "input-protocol-unknown",
        ["cannot use the path foo://bucket/in", "protocol is not known"],
        argv=["--input", "foo://bucket/in"],
    ),
    # --- l-diversity and t-closeness criteria (docs/design.md §4b)
    Case(
        "criterion-attribute-unknown",
        ["privacy.l_diversity[0]", "'nope'", "not one of sensitive_attributes"],
        cfgmut=criteria([{"attribute": "nope", "l": 2}]),
    ),
    Case(
        "criterion-attribute-not-a-column",
        ["column 'nope'", "missing"],
        cfgmut=listed_sensitive("nope"),
    ),
    Case(
        "criterion-attribute-not-sensitive",
        ["privacy.t_closeness[0]", "'city'", "not one of sensitive_attributes"],
        cfgmut=criteria(t_closeness=[{"attribute": "city", "t": 0.2}]),
    ),
    Case(
        "l-below-2",
        ["privacy.l_diversity[0].l", "an integer >= 2"],
        cfgmut=criteria([{"attribute": "disease", "l": 1}]),
    ),
    Case(
        "l-not-integer",
        ["privacy.l_diversity[0].l", "an integer >= 2"],
        cfgmut=criteria([{"attribute": "disease", "l": 2.5, "variant": "entropy"}]),
    ),
    Case(
        "l-above-distinct-values",
        ["privacy.l_diversity[0]", "l=5", "'disease'", "only 4 distinct value(s)"],
        cfgmut=criteria([{"attribute": "disease", "l": 5}]),
        absent=["flu", "asthma", "gout"],
    ),
    Case(
        "l-flag-above-distinct-values",
        ["l=9", "'disease'", "only 4 distinct value(s)"],
        cfgmut=criteria([{"attribute": "disease", "l": 2}]),
        argv=["--l", "9"],
    ),
    Case(
        "t-zero",
        ["privacy.t_closeness[0].t"],
        cfgmut=criteria(t_closeness=[{"attribute": "disease", "t": 0}]),
    ),
    Case(
        "t-above-1",
        ["privacy.t_closeness[0].t"],
        cfgmut=criteria(t_closeness=[{"attribute": "disease", "t": 1.5}]),
    ),
    Case(
        "t-flag-negative",
        ["t must be"],
        cfgmut=criteria(t_closeness=[{"attribute": "disease", "t": 0.3}]),
        argv=["--t", "-0.1"],
    ),
    Case(
        "c-zero",
        ["privacy.l_diversity[0].c", "a number > 0"],
        cfgmut=criteria([{"attribute": "disease", "l": 2, "variant": "recursive", "c": 0}]),
    ),
    Case(
        "c-negative",
        ["privacy.l_diversity[0].c", "a number > 0"],
        cfgmut=criteria([{"attribute": "disease", "l": 2, "variant": "recursive", "c": -1}]),
    ),
    Case(
        "recursive-without-c",
        ["privacy.l_diversity[0]", "needs 'c'"],
        cfgmut=criteria([{"attribute": "disease", "l": 2, "variant": "recursive"}]),
    ),
    Case(
        "ordered-on-text",
        ["'disease'", "holds text", "t-closeness", "ordered"],
        cfgmut=criteria(t_closeness=[{"attribute": "disease", "t": 0.3, "distance": "ordered"}]),
    ),
    Case(
        "t-hierarchy-misses-a-value",
        ["privacy.t_closeness[0]", "hierarchy", "'disease'", "no row"],
        cfgmut=criteria(
            t_closeness=[
                {
                    "attribute": "disease",
                    "t": 0.3,
                    "distance": "hierarchical",
                    "hierarchy": DISEASE_GROUPS,
                }
            ]
        ),
        absent=["gout"],
    ),
    Case(
        "l-flag-with-two-l-criteria",
        ["l sets the threshold", "one configured l-diversity criterion", "lists 2"],
        cfgmut=criteria(
            [
                {"attribute": "disease", "l": 2},
                {"attribute": "disease", "l": 2, "variant": "entropy"},
            ]
        ),
        argv=["--l", "3"],
    ),
    Case(
        "t-flag-without-t-criterion",
        ["t sets the threshold", "t-closeness", "lists 0"],
        argv=["--t", "0.2"],
    ),
    Case(
        "unknown-criterion-variant",
        ["privacy.l_diversity[0].variant", "distinct", "entropy", "recursive"],
        cfgmut=criteria([{"attribute": "disease", "l": 2, "variant": "probabilistic"}]),
    ),
    # --- generalisation and memory settings
    Case("widths-not-multiples", ["'age'", "width 4", "multiple of 3"], cfgmut=widths([1, 3, 4])),
    Case("widths-not-increasing", ["'age'", "width"], cfgmut=widths([1, 4, 2])),
    Case("widths-not-starting-at-min-width", ["'age'", "min_width"], cfgmut=widths([2, 4])),
    Case(
        "histogram-bins-1",
        ["memory.histogram_bins must be an integer >= 2 (got 1)"],
        cfgmut=histogram_bins(1),
    ),
    Case(
        "histogram-bins-flag-1",
        ["histogram_bins must be an integer >= 2 (got 1)"],
        argv=["--histogram-bins", "1"],
    ),
    Case("histogram-bins-zero", ["histogram_bins", ">= 2"], cfgmut=histogram_bins(0)),
    Case("chunk-rows-zero-flag", ["chunk_rows", "positive"], argv=["--chunk-rows", "0"]),
    # --- paths
    Case(
        "input-path-missing",
        ["input path does not exist", "no-such-folder"],
        cfgmut=input_path("{tmp}/no-such-folder"),
    ),
    Case("glob-matching-nothing", ["no parquet files"], cfgmut=input_path("{input}/*.nothing")),
    Case(
        "output-inside-input",
        ["output path", "inside the input folder", "{input}"],
        cfgmut=output_path("{input}/release"),
    ),
    Case("output-equals-input", ["inside the input folder"], cfgmut=output_path("{input}")),
    Case("output-is-a-file", ["exists and is a file"], cfgmut=output_path("{input}.txt")),
    Case("output-is-not-a-release", ["not a skald release", "precious"], cfgmut=not_a_release),
    Case("output-is-parent-of-input", ["not a skald release"], cfgmut=output_path("{tmp}")),
    Case(
        "output-is-an-input-file",
        ["inside the input folder"],
        cfgmut=lambda c, t: c["output"].update(path=c["input"]["path"] + "/chunk-000.parquet"),
    ),
    # --- the config file itself
    Case("unknown-config-key", ["unknown key 'colour'"], cfgmut=lambda c, t: c.update(colour=1)),
    Case(
        "unknown-privacy-key",
        ["unknown key 'l'", "privacy"],
        cfgmut=lambda c, t: c["privacy"].update(l=2),
    ),
    Case(
        "qid-listed-twice",
        ["'age'", "twice"],
        cfgmut=lambda c, t: c["quasi_identifiers"].append(dict(c["quasi_identifiers"][1])),
    ),
]


def _prepare(case: Case, tmp_path: Path) -> tuple[list[str], Path, dict[str, str], Path]:
    inp, out = tmp_path / "in", tmp_path / "out"
    files = write_dataset(inp, n_files=3, rows=40, fmt=case.fmt)
    if case.mutate:
        case.mutate(files, tmp_path)
    cfg = config_dict(inp, out, fmt=case.fmt)
    if case.cfgmut:
        case.cfgmut(cfg, tmp_path)
    (tmp_path / "in.txt").write_text("a file beside the input")
    config = write_config(tmp_path / "skald.yaml", cfg)
    names = {f"file{i}": str(f) for i, f in enumerate(files)}
    names["input"] = str(inp)
    return ["run", str(config), *case.argv], Path(cfg["output"]["path"]), names, inp


def _snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _check_error_line(err: str, case: Case, names: dict[str, str]) -> str:
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("skald: error:")]
    assert len(errors) == 1, err
    assert lines[-1] == errors[0], err
    line = errors[0]
    for want in case.expect:
        want = want.format(**names)
        assert want in line, f"{want!r} not in {line!r}"
    for bad in case.absent:
        assert bad not in err, f"{bad!r} leaked into {err!r}"
    return line


@pytest.mark.parametrize("mode", ["global", "per-chunk"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2_with_one_line(case: Case, mode: str, tmp_path: Path, capsys) -> None:
    argv, out, names, inp = _prepare(case, tmp_path)
    if mode == "per-chunk":  # the baseline run must fail the same way
        argv.append("--per-chunk")
    before = _snapshot(inp)
    existed = out.exists()  # the output names something that exists: it must stay as it was
    before_out = _snapshot(out) if out.is_dir() else out.read_bytes() if existed else None
    code, stdout, err = run_inprocess(argv, capsys)
    assert code == 2, (code, stdout, err)
    _check_error_line(err, case, names)
    assert stdout == "", stdout
    assert _snapshot(inp) == before, "the input was modified"
    if existed:
        assert (_snapshot(out) if out.is_dir() else out.read_bytes()) == before_out
    else:
        assert leftovers(out) == [], leftovers(out)
    staging = [p for p in tmp_path.rglob("*") if "skald-staging" in p.name or ".tmp" in p.name]
    assert staging == []


SUBPROCESS_CASES = [  # (case, quiet): a real process costs seconds, so only two
    ("categorical-value-not-in-hierarchy", False),
    ("text-in-numerical-qid-csv", True),
]


@pytest.mark.parametrize(("case_id", "quiet"), SUBPROCESS_CASES)
def test_bad_input_real_process(case_id: str, quiet: bool, tmp_path: Path) -> None:
    """The same through a real `python -m airflow_skald.cli` process (logging on or -q)."""
    case = next(c for c in CASES if c.id == case_id)
    argv, out, names, _ = _prepare(case, tmp_path)
    proc = run_subprocess([*argv, "--quiet"] if quiet else argv)
    assert proc.returncode == 2, proc.stderr
    _check_error_line(proc.stderr, case, names)
    assert proc.stdout == ""
    assert leftovers(out) == []
    if quiet:
        assert len(proc.stderr.splitlines()) == 1, proc.stderr
        assert re.match(r"skald: error: \S", proc.stderr)


def test_missing_config_file(tmp_path: Path, capsys) -> None:
    code, _, err = run_inprocess(["run", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2
    assert err.strip() == f"skald: error: config file not found: {tmp_path / 'nope.yaml'}"


def test_invalid_yaml(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("input: {path: [unclosed\nprivacy: {k: 2}\n")
    code, _, err = run_inprocess(["run", str(path)], capsys)
    assert code == 2
    assert err.startswith("skald: error:") and "not valid YAML" in err
    assert len(err.strip().splitlines()) == 1


def test_zero_row_file_among_good_ones_is_fine(tmp_path: Path, capsys) -> None:
    """A file with zero rows next to good files is not an error: it contributes no chunk."""
    inp, out = tmp_path / "in", tmp_path / "out"
    files = write_dataset(inp, n_files=3, rows=40)
    write_table(make_table(0), files[1])
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out))
    code, _, err = run_inprocess(["run", str(config)], capsys)
    assert code == 0, err
    assert (out / "manifest.json").exists()


def test_verify_bad_input(tmp_path: Path, capsys) -> None:
    """`skald verify` on a missing folder or with a bad k is a user error, not a crash."""
    code, _, err = run_inprocess(["verify", str(tmp_path / "nothing"), "--k", "5"], capsys)
    assert code == 2 and err.startswith("skald: error:") and "not found" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run_inprocess(["verify", str(tmp_path / "empty"), "--k", "5"], capsys)
    assert code == 2 and "no release parts" in err
    code, _, err = run_inprocess(["verify", str(tmp_path / "empty"), "--k", "x"], capsys)
    assert code == 2 and "k must be an integer >= 2" in err


def test_verify_bad_flags_on_a_real_release(tmp_path: Path, capsys) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=2, rows=30)
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out))
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    for flags, want in [
        (["--suppression-limit", "abc"], "suppression_limit must be a number"),
        (["--suppression-limit", "2"], "between 0 and 1"),
        (["--qids", "city,nope"], "has no column 'nope'"),
    ]:
        code, _, err = run_inprocess(["verify", str(out), "--k", "3", *flags], capsys)
        assert code == 2, (flags, err)
        assert err.startswith("skald: error:") and want in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_generate_into_a_file_is_a_user_error(tmp_path: Path, capsys) -> None:
    target = tmp_path / "a-file"
    target.write_text("x")
    argv = ["generate", "--rows", "10", "--chunk-rows", "5", "--out", str(target)]
    code, _, err = run_inprocess(argv, capsys)
    assert code == 2 and err.startswith("skald: error: cannot write to") and "Traceback" not in err
    code, _, err = run_inprocess(
        ["generate", "--rows", "0", "--chunk-rows", "5", "--out", "x"], capsys
    )
    assert code == 2 and "must be positive" in err


@pytest.mark.parametrize(
    "argv",
    [[], ["run"], ["run", "x.yaml", "--bogus"], ["generate", "--rows", "x"], ["verify", "out"]],
    ids=["no-command", "run-no-config", "unknown-flag", "rows-not-int", "verify-no-k"],
)
def test_usage_errors_are_one_line(argv: list[str], capsys) -> None:
    code, stdout, err = run_inprocess(argv, capsys)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("skald: error:"), err


def test_bad_chunk_threads_setting_is_a_one_line_error(tmp_path, monkeypatch, capsys) -> None:
    """SKALD_CHUNK_THREADS (ADR 0007) must be a whole number >= 1: exit 2, nothing written."""
    from helpers_data import config_dict, run_inprocess, write_config, write_dataset

    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=1, rows=40)
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out))
    monkeypatch.setenv("SKALD_CHUNK_THREADS", "two")
    code, _, err = run_inprocess(["run", str(config)], capsys)
    assert code == 2
    assert "SKALD_CHUNK_THREADS" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
