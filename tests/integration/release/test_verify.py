"""`skald verify` on a damaged or incomplete release: one line naming the file at fault, never
a value from it, nothing written, and the exit code the case calls for (verify.py's docstring):

* 2 (bad input, nothing judged): manifest.json not JSON / not an object / a field of the wrong
  type; a part the manifest lists is missing, unreadable, or lacks a column;
* 1 (not verified): the release reads but disagrees with its manifest: a part-* file it does
  not list, fewer (or more) rows than it says. Checked before k, so a missing or emptied part
  is reported as such, not as classes smaller than k.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from helpers_data import (
    release_rows,
    run_inprocess,
    setup_run,
    write_config,
)

BAD_INPUT, NOT_VERIFIED = "skald: error: ", "skald: verification failed: "


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    """One real release per kind, made once by the pipeline (each test damages a copy)."""
    made = {}
    for kind, out_fmt, mode in [
        ("parquet", "parquet", "mask"),
        ("csv", "csv", "mask"),
        ("drop", "parquet", "drop"),
    ]:
        tmp = tmp_path_factory.mktemp(kind)
        _, out, config, cfg = setup_run(tmp, n_files=4, rows=40, out_fmt=out_fmt)
        if mode == "drop":
            cfg["suppressed_records"] = "drop"
            write_config(config, cfg)
        from airflow_skald.cli import main

        assert main(["run", str(config), "-q"]) == 0
        made[kind] = out
    return made


def _copy(releases: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    out = tmp_path / "release"
    shutil.copytree(releases[kind], out)
    return out


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _values(out: Path) -> set[str]:
    """Every released cell long enough to be told apart in a message (labels, ranges, values)."""
    cells = {str(v) for row in release_rows(out) for v in row.values() if v is not None}
    return {c for c in cells if len(c) >= 3 and not c.isdigit()}


def _verify(
    out: Path, capsys, code: int, prefix: str, *flags: str, values: set[str] | None = None
) -> str:
    """Run `skald verify`, check the exit code, the one stderr line, and that nothing was
    written anywhere next to the release; return that line."""
    before = _snapshot(out.parent)
    got, stdout, err = run_inprocess(["verify", str(out), *flags], capsys)
    assert got == code, err
    assert stdout == ""  # no report for a release that was not verified
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    assert "Traceback" not in err and "internal error" not in err
    assert _snapshot(out.parent) == before  # nothing written, nothing removed
    for value in values or ():
        assert value not in lines[0], (value, lines[0])
    return lines[0]


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _write_manifest(out: Path, manifest: object) -> None:
    (out / "manifest.json").write_text(json.dumps(manifest))


def test_intact_releases_verify(releases, tmp_path: Path, capsys) -> None:
    for kind in releases:
        out = _copy(releases, kind, tmp_path / kind)
        code, stdout, err = run_inprocess(["verify", str(out)], capsys)
        assert code == 0, (kind, err)
        assert json.loads(stdout)["verified"] is True
    drop = _manifest(releases["drop"])
    assert drop["suppressed_records"] == "drop" and drop["n_suppressed"] > 0


# ---- D5: a damaged manifest.json is bad input (exit 2), naming it --------------------------


@pytest.mark.parametrize(
    "text, want",
    [
        ("{bad", "is not valid JSON"),
        ("", "is not valid JSON"),
        (b"\xff\xfe{}", "is not valid JSON"),
        ("[" * 100_000, "is not valid JSON"),
        ("[]", "is not a JSON object"),
        ('"a string"', "is not a JSON object"),
        ("null", "is not a JSON object"),
    ],
    ids=["not-json", "empty", "not-utf8", "too-deep", "list", "string", "null"],
)
def test_manifest_not_a_json_object(releases, tmp_path, capsys, text, want) -> None:
    out = _copy(releases, "parquet", tmp_path)
    target = out / "manifest.json"
    target.write_bytes(text if isinstance(text, bytes) else text.encode())
    line = _verify(out, capsys, 2, BAD_INPUT)
    assert line == f"{BAD_INPUT}manifest.json of {out} {want}"


def _set(key: str, value: object) -> Callable[[dict], None]:
    def edit(m: dict) -> None:
        m[key] = value

    return edit


def _drop(key: str) -> Callable[[dict], None]:
    def edit(m: dict) -> None:
        del m[key]

    return edit


def _model(i: int, **fields: object) -> Callable[[dict], None]:
    def edit(m: dict) -> None:
        m["privacy"]["models"][i].update(fields)

    return edit


def _add_model(model: object) -> Callable[[dict], None]:
    def edit(m: dict) -> None:
        m["privacy"]["models"].append(model)

    return edit


L_MODEL = {"model": "distinct-l-diversity", "attribute": "disease", "l": 2}
T_MODEL = {"model": "t-closeness", "attribute": "disease", "t": "0.9", "distance": "equal"}

MANIFEST_FIELDS = [
    ("k-string", _set("k", "abc"), "k must be an integer >= 2"),
    ("k-one", _set("k", 1), "k must be an integer >= 2"),
    ("k-float", _set("k", 3.5), "k must be an integer >= 2"),
    ("k-bool", _set("k", True), "k must be an integer >= 2"),
    ("k-null", _set("k", None), "k must be an integer >= 2"),
    ("limit-string", _set("suppression_limit", "abc"), "suppression_limit must be a number"),
    ("limit-2", _set("suppression_limit", 2), "suppression_limit must be a number between 0"),
    ("limit-nan", _set("suppression_limit", float("nan")), "suppression_limit must be"),
    ("n_records-missing", _drop("n_records"), "n_records is missing"),
    ("n_records-string", _set("n_records", "40"), "n_records must be an integer >= 0"),
    ("n_records-negative", _set("n_records", -1), "n_records must be an integer >= 0"),
    ("n_suppressed-float", _set("n_suppressed", 1.5), "n_suppressed must be an integer >= 0"),
    ("dm_star-list", _set("dm_star", [1]), "dm_star must be an integer >= 0"),
    ("node-list", _set("node", ["city", "age"]), "node must be an object"),
    ("node-empty", _set("node", {}), "node must be an object"),
    ("parts-string", _set("parts", "part-00000.parquet"), "parts must list each part file"),
    ("parts-empty", _set("parts", []), "parts must list each part file"),
    ("parts-twice", _set("parts", ["part-00000.parquet"] * 2), "parts must list each part"),
    ("parts-path", _set("parts", ["../part-00000.parquet"]), "parts must name part-*.parquet"),
    ("parts-other", _set("parts", ["manifest.json"]), "parts must name part-*.parquet"),
    ("format", _set("output_format", "xlsx"), "output_format must be parquet or csv"),
    ("delimiter", _set("output_delimiter", ";;"), "output_delimiter must be one character"),
    ("mode", _set("suppressed_records", "hide"), "suppressed_records must be mask or drop"),
    ("identifiers", _set("direct_identifiers_removed", "name"), "direct_identifiers_removed"),
    ("privacy-list", _set("privacy", []), "privacy must be an object listing its models"),
    ("models-dict", _set("privacy", {"models": {}}), "privacy must be an object listing"),
    ("model-int", _add_model(1), "privacy.models[1] must be an object naming its model"),
    ("model-unknown", _add_model({"model": "x-privacy"}), "privacy.models[1] names a model"),
    ("model-k", _model(0, k="50"), "privacy.models[0].k must be an integer >= 2"),
    ("l-missing", _add_model({**L_MODEL, "l": None}), "privacy.models[1].l must be an integer"),
    ("l-attribute", _add_model({**L_MODEL, "attribute": 3}), "privacy.models[1].attribute"),
    ("c-not-recursive", _add_model({**L_MODEL, "c": 2}), "privacy.models[1]: c goes with"),
    (
        "c-bad",
        _add_model({**L_MODEL, "model": "recursive-cl-diversity", "c": "x"}),
        "privacy.models[1].c must be a number > 0",
    ),
    ("t-zero", _add_model({**T_MODEL, "t": 0}), "privacy.models[1].t must be a number in (0, 1]"),
    ("t-distance", _add_model({**T_MODEL, "distance": "far"}), "privacy.models[1].distance"),
]


@pytest.mark.parametrize(
    "edit, want", [m[1:] for m in MANIFEST_FIELDS], ids=[m[0] for m in MANIFEST_FIELDS]
)
def test_manifest_field_of_the_wrong_type(releases, tmp_path, capsys, edit, want) -> None:
    out = _copy(releases, "parquet", tmp_path)
    manifest = _manifest(out)
    edit(manifest)
    _write_manifest(out, manifest)
    line = _verify(out, capsys, 2, BAD_INPUT)
    assert line.startswith(f"{BAD_INPUT}manifest.json of {out}: {want}"), line


def test_manifest_k_is_checked_even_when_given_on_the_command_line(
    releases, tmp_path, capsys
) -> None:
    out = _copy(releases, "parquet", tmp_path)
    _write_manifest(out, {**_manifest(out), "k": "abc"})
    line = _verify(out, capsys, 2, BAD_INPUT, "--k", "3")
    assert line == f"{BAD_INPUT}manifest.json of {out}: k must be an integer >= 2"


@pytest.mark.parametrize("key, flag", [("k", "--k"), ("suppression_limit", "--suppression-limit")])
def test_manifest_without_a_setting_asks_for_the_flag(releases, tmp_path, capsys, key, flag):
    out = _copy(releases, "parquet", tmp_path)
    manifest = _manifest(out)
    value = manifest.pop(key)
    _write_manifest(out, manifest)
    line = _verify(out, capsys, 2, BAD_INPUT)
    assert line == f"{BAD_INPUT}manifest.json of {out} has no {key}: give " + (
        f"k to verify ({flag})" if key == "k" else f"it to verify ({flag})"
    )
    code, _, err = run_inprocess(["verify", str(out), flag, str(value)], capsys)
    assert code == 0, err


def test_manifest_without_node_asks_for_the_qids(releases, tmp_path, capsys) -> None:
    out = _copy(releases, "parquet", tmp_path)
    manifest = _manifest(out)
    qids = ",".join(manifest.pop("node"))
    _write_manifest(out, manifest)
    line = _verify(out, capsys, 2, BAD_INPUT)
    assert line == f"{BAD_INPUT}manifest.json of {out} has no node: name the QID columns to verify"
    assert run_inprocess(["verify", str(out), "--qids", qids], capsys)[0] == 0


# ---- D5: an unreadable part is bad input (exit 2), naming the part ---------------------------


@pytest.mark.parametrize("kind", ["parquet", "drop"])
@pytest.mark.parametrize("size", [0, 100, -100], ids=["empty", "first-100-bytes", "footer-cut"])
def test_truncated_parquet_part(releases, tmp_path, capsys, kind, size) -> None:
    out = _copy(releases, kind, tmp_path)
    values = _values(out)
    part = out / "part-00002.parquet"
    data = part.read_bytes()
    part.write_bytes(data[:size] if size >= 0 else data[:size])
    line = _verify(out, capsys, 2, BAD_INPUT, values=values)
    assert line == f"{BAD_INPUT}part-00002.parquet of {out} is not a readable Parquet file"


def test_part_that_is_a_folder(releases, tmp_path, capsys) -> None:
    out = _copy(releases, "parquet", tmp_path)
    (out / "part-00001.parquet").unlink()
    (out / "part-00001.parquet").mkdir()
    line = _verify(out, capsys, 2, BAD_INPUT)
    assert line == f"{BAD_INPUT}part-00001.parquet of {out} is not a readable Parquet file"


def test_csv_part_with_a_broken_row(releases, tmp_path, capsys) -> None:
    """pyarrow's own message quotes the row: the one line must not."""
    out = _copy(releases, "csv", tmp_path)
    values = _values(out)
    part = out / "part-00001.csv"
    lines = part.read_text().splitlines()
    cells = lines[1].split(",")
    lines[1] = ",".join(cells[:-1])  # a row one cell short
    part.write_text("\n".join(lines) + "\n")
    line = _verify(out, capsys, 2, BAD_INPUT, values=values | {lines[1]})
    assert line == f"{BAD_INPUT}part-00001.csv of {out} is not a readable CSV file"


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_part_without_a_qid_column(releases, tmp_path, capsys, kind) -> None:
    out = _copy(releases, kind, tmp_path)
    name = f"part-00003.{kind}"
    table = pq.read_table(out / name) if kind == "parquet" else pacsv.read_csv(out / name)
    table = table.drop_columns(["age"])
    if kind == "parquet":
        pq.write_table(table, out / name)
    else:
        pacsv.write_csv(table, out / name)
    line = _verify(out, capsys, 2, BAD_INPUT, values=_values(out))
    assert line == f"{BAD_INPUT}{name} of {out} has no column 'age'"


# ---- D6: a missing part is reported as such, before k is judged -----------------------------


@pytest.mark.parametrize("kind", ["parquet", "csv", "drop"])
def test_missing_part(releases, tmp_path, capsys, kind) -> None:
    out = _copy(releases, kind, tmp_path)
    ext = "csv" if kind == "csv" else "parquet"
    (out / f"part-00001.{ext}").unlink()
    line = _verify(out, capsys, 2, BAD_INPUT)
    assert line == (
        f"{BAD_INPUT}part-00001.{ext} of {out} is missing "
        "(manifest.json lists 4 part(s), 1 missing)"
    )
    assert "anonymous" not in line


def test_every_part_missing(releases, tmp_path, capsys) -> None:
    out = _copy(releases, "parquet", tmp_path)
    for part in out.glob("part-*"):
        part.unlink()
    line = _verify(out, capsys, 2, BAD_INPUT, "--k", "3")
    assert line.startswith(f"{BAD_INPUT}part-00000.parquet of {out} is missing")
    assert "4 missing" in line


@pytest.mark.parametrize("kind", ["parquet", "drop"])
def test_part_cut_short_is_a_row_count_not_a_k_failure(releases, tmp_path, capsys, kind):
    """A part that reads but lost rows: its remaining classes are smaller than k, yet the row
    count the manifest gives is what verify reports (exit 1: the release disagrees with it)."""
    out = _copy(releases, kind, tmp_path)
    manifest = _manifest(out)
    part = out / "part-00000.parquet"
    table = pq.read_table(part)
    pq.write_table(table.slice(0, 1), part)
    n_rows = sum(pq.read_metadata(p).num_rows for p in out.glob("part-*.parquet"))
    if kind == "drop":
        expected, what = (
            manifest["n_records"] - manifest["n_suppressed"],
            "n_records - n_suppressed",
        )
    else:
        expected, what = manifest["n_records"], "n_records"
    assert n_rows < expected
    line = _verify(out, capsys, 1, NOT_VERIFIED)
    assert line == (
        f"{NOT_VERIFIED}release {out} has {n_rows} rows but manifest.json says {expected} ({what})"
    )


def test_release_with_more_rows_than_the_manifest(releases, tmp_path, capsys) -> None:
    out = _copy(releases, "parquet", tmp_path)
    manifest = _manifest(out)
    _write_manifest(out, {**manifest, "n_records": manifest["n_records"] - 1})
    line = _verify(out, capsys, 1, NOT_VERIFIED)
    assert f"has {manifest['n_records']} rows but manifest.json says" in line


def test_part_the_manifest_does_not_list(releases, tmp_path, capsys) -> None:
    """A stray part-* file would be read as part of the release by anyone reading the folder:
    the release is not what its manifest certifies (exit 1)."""
    out = _copy(releases, "parquet", tmp_path)
    shutil.copy(out / "part-00000.parquet", out / "part-00009.parquet")
    line = _verify(out, capsys, 1, NOT_VERIFIED)
    assert (
        line
        == f"{NOT_VERIFIED}part-00009.parquet of {out} is not one of the parts manifest.json lists"
    )


def test_other_files_in_the_folder_are_ignored(releases, tmp_path, capsys) -> None:
    out = _copy(releases, "parquet", tmp_path)
    (out / "notes.txt").write_text("kept by the data owner")
    code, _, err = run_inprocess(["verify", str(out)], capsys)
    assert code == 0, err
