"""Bounded property-based fuzzing of the config loader and the CSV reader (issue 6, item 5).

Whatever the input, the product either works or reports a user error (ConfigError / exit
code 2): never another exception, never a traceback. Each property runs a fixed, small number
of examples (no deadline) so the suite stays fast. To fuzz longer, e.g.
`SKALD_FUZZ_EXAMPLES=2000 SKALD_FUZZ_RANDOM=1 pytest tests/test_fuzz.py`.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import tempfile
from pathlib import Path

from helpers_data import (
    CITY_HIERARCHY,
    config_dict,
    leftovers,
    release_rows,
    write_config,
    write_dataset,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from airflow_skald.cli import main as cli_main
from airflow_skald.core.config.run_config import SkaldConfig, config_from_dict, load_config
from airflow_skald.core.errors import ConfigError

N = int(os.environ.get("SKALD_FUZZ_EXAMPLES", "30"))
FUZZ = settings(
    max_examples=N,
    deadline=None,
    derandomize=not os.environ.get("SKALD_FUZZ_RANDOM"),  # CI: reproducible; set it to explore
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# ------------------------------------------------------------------------ config loader

KEYS = [
    "input", "output", "path", "format", "delimiter", "chunk_rows", "direct_identifiers",
    "sensitive_attributes", "quasi_identifiers", "name", "type", "hierarchy", "hierarchy_file",
    "min_width", "widths", "encode", "privacy", "k", "suppression_limit", "memory",
    "histogram_bins", "qid_priority", "suppressed_records", "categorical", "numerical",
    "parquet", "csv", "mask", "drop", "age", "city",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(KEYS + ["", "*", "0.1", "1/3", "1e400", "nan", "-1", "2", "~", "\x00"]),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), scalars), inner, max_size=5),
    ),
    max_leaves=25,
)

_BASE = config_dict("in", "out")


def _mutations():
    """A valid config with a few fields replaced (paths into it, then a new value)."""
    path = st.lists(
        st.one_of(st.sampled_from(KEYS), st.integers(min_value=0, max_value=3)), max_size=4
    )
    return st.lists(st.tuples(path, values), min_size=1, max_size=4)


def _apply(cfg: dict, mutations) -> dict:
    cfg = copy.deepcopy(cfg)
    for path, value in mutations:
        node, parent, key = cfg, None, None
        for step in path:
            if isinstance(node, dict) and isinstance(step, str):
                parent, key, node = node, step, node.get(step)
            elif isinstance(node, list) and isinstance(step, int) and step < len(node):
                parent, key, node = node, step, node[step]
            else:
                break
        if parent is None:
            continue
        if value is None and isinstance(parent, dict):
            parent.pop(key, None)  # deleting a key is a mutation too
        else:
            parent[key] = value
    return cfg


def _load_or_config_error(raw, base_dir: Path) -> None:
    try:
        cfg = config_from_dict(raw, base_dir=base_dir)
    except ConfigError as exc:
        assert str(exc), "an empty error message"  # (the CLI prints it on one line)
        return
    assert isinstance(cfg, SkaldConfig)
    assert cfg.min_class_size >= 2 and 0 <= cfg.suppression.limit <= 1 and cfg.chunk_rows >= 1
    cfg.fingerprint()  # the manifest hashes the config: must not fail either


@FUZZ
@given(raw=values)
def test_random_structures_load_or_raise_config_error(raw) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _load_or_config_error(raw, Path(tmp))


@FUZZ
@given(mutations=_mutations())
def test_mutated_valid_configs_load_or_raise_config_error(mutations) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _load_or_config_error(_apply(_BASE, mutations), Path(tmp))


HIERARCHY_FILES = {
    "ok.csv": "Oslo;Norway;*\nBergen;Norway;*\nLund;Sweden;*\nMalmo;Sweden;*\n",
    "empty.csv": "",
    "ragged.csv": "Oslo;Norway;*\nBergen;*\n",
    "twice.csv": "Oslo;Norway\nOslo;Sweden\n",
    "binary.csv": "\x00\xff\xfe;x\n",
}


@FUZZ
@given(
    name=st.sampled_from([*HIERARCHY_FILES, "missing.csv", "folder", "", ".", "a\x00b"]),
    extra=st.one_of(st.none(), values),
)
def test_hierarchy_files_load_or_raise_config_error(name: str, extra) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for fname, text in HIERARCHY_FILES.items():
            (base / fname).write_bytes(text.encode("utf-8", errors="surrogateescape"))
        (base / "folder").mkdir()
        cfg = copy.deepcopy(_BASE)
        qid = cfg["quasi_identifiers"][0]
        del qid["hierarchy"]
        qid["hierarchy_file"] = name
        if extra is not None:
            qid["hierarchy"] = extra
        _load_or_config_error(cfg, base)


@FUZZ
@given(text=st.one_of(st.text(max_size=200), st.sampled_from(["a: 2001-13-45", "k: !!int x"])))
def test_random_yaml_text_loads_or_raises_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "skald.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            load_config(path)
        except ConfigError as exc:
            assert str(exc)


@FUZZ
@given(
    overrides=st.dictionaries(
        st.sampled_from(["k", "suppression_limit", "histogram_bins", "chunk_rows"]),
        st.one_of(scalars, st.text(max_size=6)),
        max_size=3,
    )
)
def test_overrides_apply_or_raise_config_error(overrides: dict) -> None:
    cfg = config_from_dict(_BASE, base_dir=Path(tempfile.gettempdir()))
    try:
        out = cfg.with_overrides(overrides)
    except ConfigError:
        return
    assert out.min_class_size >= 2 and 0 <= out.suppression.limit <= 1


# --------------------------------------------------------------------------- CSV reader

HEADER = ["pid", "name", "address", "city", "age", "zip", "disease"]
CELLS = {
    "city": [*CITY_HIERARCHY, "Paris", "", "oslo", '"Oslo"', "NA"],
    "age": ["20", "35", "35", "35.5", "-4", "1e3", "", "NaN", "inf", "x", "1_0", " 30 ", "99" * 12],
    "zip": ["1001", "1002", "1002", "1003", "", "NULL", "abc", "1e20", "-1", "0x10"],
}
OTHER = ["a", "", "b c", '"quoted, comma"', '"multi\nline"', "ü", "\t", "'", '"']


@st.composite
def csv_files(draw) -> bytes:
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # now and then: any bytes at all
        return draw(st.binary(max_size=300))
    header = list(HEADER)
    if draw(st.booleans()) and draw(st.booleans()):
        header = draw(st.permutations(header))
    if draw(st.integers(min_value=0, max_value=5)) == 0:
        header = draw(st.lists(st.sampled_from([*HEADER, "extra", ""]), max_size=9))
    rows = []
    n = draw(st.integers(min_value=0, max_value=25))
    common = draw(st.booleans())  # mostly-valid rows, so some runs get through to a release
    for _ in range(n):
        row = []
        for col in header:
            pool = CELLS.get(col, OTHER)
            row.append(pool[draw(st.integers(0, 2))] if common else draw(st.sampled_from(pool)))
        if draw(st.integers(min_value=0, max_value=15)) == 0:
            row = row + ["surplus"] if draw(st.booleans()) else row[:-1]
        rows.append(",".join(row))
    body = "\n".join([",".join(header), *rows])
    if draw(st.booleans()):
        body += "\n"
    return body.encode("utf-8")


@FUZZ
@given(
    data=csv_files(),
    k=st.integers(min_value=2, max_value=4),
    chunk_rows=st.integers(min_value=1, max_value=30),
)
def test_random_csv_runs_or_exits_2(data: bytes, k: int, chunk_rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        inp, out = base / "in", base / "out"
        inp.mkdir()
        (inp / "data.csv").write_bytes(data)
        cfg = config_dict(inp / "data.csv", out, fmt="csv", k=k, chunk_rows=chunk_rows)
        config = write_config(base / "skald.yaml", cfg)
        err, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout):
            code = cli_main(["run", str(config), "-q"])  # any other exception fails the test
        assert code in (0, 2), err.getvalue()
        event(f"exit {code}")
        if code == 2:
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("skald: error:"), err.getvalue()
            assert leftovers(out) == []
        else:
            assert (out / "manifest.json").exists()
            assert cli_main(["verify", str(out), "--k", str(k)]) == 0


def test_the_csv_fuzzer_reaches_both_outcomes(tmp_path: Path) -> None:
    """Sanity check of the generator: a plain valid CSV runs, so code 0 is reachable."""
    write_dataset(tmp_path / "in", n_files=1, rows=30, fmt="csv")
    cfg = config_dict(tmp_path / "in", tmp_path / "out", fmt="csv")
    assert cli_main(["run", str(write_config(tmp_path / "c.yaml", cfg)), "-q"]) == 0


# ------------------------------------------------- random configs and dirty data end to end


@st.composite
def dirty_cases(draw):
    """Random data, hierarchy, widths, k, limit and chunking, sometimes with one defect.

    Returns the table, config pieces, the oracle's QIDs and the defect the run must report
    (None when the input is clean and the run must produce the exhaustive search's release).
    """
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(4, 50))
    n_values = draw(st.integers(1, 5))
    values = [f"v{i}" for i in range(n_values)]
    groups = draw(st.integers(1, n_values))
    l1 = {v: f"g{i % groups}" for i, v in enumerate(values)}
    l2 = {g: draw(st.sampled_from(["S0", "S1"])) for g in sorted(set(l1.values()))}
    hierarchy = {v: [l1[v], l2[l1[v]]] for v in values}
    defects = []
    if draw(st.integers(0, 7)) == 0 and n_values >= 2:  # one group label with two parents
        hierarchy[values[0]] = [l1[values[0]], "S0"]
        hierarchy[values[-1]] = [l1[values[0]], "S1"]
    parents: dict[str, set] = {}
    for labels in hierarchy.values():
        parents.setdefault(labels[0], set()).add(labels[1])
    if any(len(p) > 1 for p in parents.values()):
        defects.append("inconsistent hierarchy")

    age_lo = draw(st.integers(-10, 60))
    df = pd.DataFrame(
        {
            "pid": [f"id{i}" for i in range(n)],
            "city": rng.choice(values, n),
            "age": rng.integers(age_lo, age_lo + draw(st.integers(0, 30)) + 1, n),
            "zip": rng.choice([5001, 5003, 5010, 5200, 9000], n),
            "disease": rng.choice(["a", "b"], n),
        }
    )
    rare = st.integers(0, 7).map(lambda x: x == 0)  # each defect in about 1 case out of 8
    if draw(rare):
        widths = draw(st.sampled_from([[1, 3, 4], [2, 4], [1, 1]]))
        defects.append("bad widths")
    else:
        widths = draw(st.sampled_from([None, [1, 2, 8], [1, 4, 12]]))
    defect = draw(st.sampled_from([None] * 12 + ["null age", "null city", "unknown city"]))
    if defect == "null age":
        df["age"] = df["age"].astype("float64")
        df.loc[draw(st.integers(0, n - 1)), "age"] = np.nan
    elif defect == "null city":
        df.loc[draw(st.integers(0, n - 1)), "city"] = None
    elif defect == "unknown city":
        df.loc[draw(st.integers(0, n - 1)), "city"] = "nowhere"
    if defect:
        defects.append(defect)
    k = draw(st.integers(n + 1, n + 2)) if draw(rare) else draw(st.integers(2, max(2, n)))
    if k > n:
        defects.append("k > records")
    limit = 1.5 if draw(rare) else draw(st.sampled_from([0, 0.1, 0.3, 1]))
    if limit > 1:
        defects.append("limit > 1")
    age = {"name": "age", "type": "numerical", "min_width": 1}
    if widths:
        age["widths"] = widths
    qids = [
        {"name": "city", "type": "categorical", "hierarchy": hierarchy},
        age,
        {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
    ]
    oracle_qids = [
        {"name": "city", "type": "categorical", "hierarchy": hierarchy},
        {**age, "widths": widths},
        {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
    ]
    return {
        "df": df,
        "qids": qids,
        "oracle_qids": oracle_qids,
        "k": k,
        "limit": limit,
        "defects": defects,
        "fmt": draw(st.sampled_from(["parquet", "csv"])),
        "cut": draw(st.integers(1, n)),
        "chunk_rows": draw(st.integers(1, 60)),
    }


def _write_chunks(df, folder: Path, cut: int, fmt: str) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    for i, start in enumerate(range(0, len(df), cut)):
        table = pa.Table.from_pandas(df.iloc[start : start + cut], preserve_index=False)
        path = folder / f"part-{i:03d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(table, path)
        else:
            pacsv.write_csv(table, path)


@settings(FUZZ, max_examples=max(N // 2, 10))
@given(case=dirty_cases())
def test_random_runs_give_a_clear_error_or_the_exhaustive_release(case) -> None:
    from oracle import check_release, contains, exhaustive_search

    df = case["df"]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        _write_chunks(df, base / "in", case["cut"], case["fmt"])
        cfg = {
            "input": {"path": str(base / "in"), "format": case["fmt"]},
            "output": {"path": str(base / "out")},
            "chunk_rows": case["chunk_rows"],
            "direct_identifiers": ["pid"],
            "sensitive_attributes": ["disease"],
            "quasi_identifiers": case["qids"],
            "privacy": {"k": case["k"], "suppression_limit": case["limit"]},
            "memory": {"histogram_bins": 10**9},
        }
        config = write_config(base / "skald.yaml", cfg)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["run", str(config), "-q"])
        if case["defects"]:
            assert code == 2, (case["defects"], err.getvalue())
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("skald: error:")
            assert leftovers(base / "out") == []
            event("clear error")
            return
        if code == 1:  # no node passes: a loud failure, nothing published
            assert (
                exhaustive_search(df, case["oracle_qids"], case["k"], case["limit"], [])["node"]
                is None
            )
            assert leftovers(base / "out") == []
            event("no passing node")
            return
        assert code == 0, err.getvalue()
        event("release")
        import pandas as pd

        release = pd.DataFrame(release_rows(base / "out"))
        check_release(release, ["city", "age", "zip"], case["k"], case["limit"], len(df))
        manifest = json.loads((base / "out" / "manifest.json").read_text())
        expected = exhaustive_search(df, case["oracle_qids"], case["k"], case["limit"], [])
        assert manifest["node"] == expected["node"]
        assert manifest["dm_star"] == expected["dm_star"]
        assert release["disease"].tolist() == df["disease"].tolist()
        for q in case["oracle_qids"]:
            kept = release[q["name"]] != "*"
            for gen, orig in zip(release[q["name"]][kept], df[q["name"]][kept], strict=True):
                assert contains(gen, orig, q), (q["name"], gen, orig)
