"""`execution: {engine: spark, connection: "sc://localhost:PORT/;token=..."}` end to end
through the CLI (docs/design.md §2b, ADR 0056, ADR 0069): the same manifest figures and
released rows (as a multiset) as `execution: chunks`, the token in no output; what the engine
does not run yet refused before any work in one line (exit 2, nothing written). One JVM for
every test of the module, which runs on one xdist worker (Spark's start is paid once): a local
Spark (local[2]) that is also a Spark Connect server on a free loopback port (Spark's
`SparkConnectPlugin`, shipped in pyspark's jars), requiring a token. The engine reaches it
through Spark Connect's URI, the deployment route, in most cases; one case names `local[2]`,
and the engine finds the running local session."""

from __future__ import annotations

import socket

import pytest
from engine_compare import (
    PROFIT,
    assert_same_release,
    config,
    run_cli,
    same_as_chunks,
    same_utility_as_chunks,
    write_files,
)

pytestmark = pytest.mark.xdist_group("spark")
LOCAL = {"engine": "spark", "connection": "local[2]"}
#: the Connect server's token (Spark's `spark.connect.authenticate.token`); the client sends it
#: without TLS to `localhost` only. The URI holding it is an environment variable's, named by
#: the config (as a deployment keeps it out of the file).
TOKEN = "sc-test-token-6d2f0b9a41c8"
URI_VARIABLE = "SKALD_SPARK_CONNECT_URI"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def spark():
    """This module's one local SparkSession (the engine's `local[2]` finds it running) with a
    Spark Connect server in its JVM; yields the server's `execution`. The JVM ended with the
    module: kept for the worker's life it went on costing CPU and memory under the later tests,
    and a later test's process-group kill could take it down before its teardown."""
    from pyspark.sql import SparkSession

    port = free_port()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("skald-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "512m")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", str(port))
        .config("spark.connect.authenticate.token", TOKEN)
        .getOrCreate()
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv(URI_VARIABLE, f"sc://localhost:{port}/;token={TOKEN}")
        yield {"engine": "spark", "connection": URI_VARIABLE}
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    client = ConnectSession.getActiveSession()
    if client is not None:  # the engine's Spark Connect client (its gRPC channel)
        client.stop()
    session.stop()
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is not None:  # the JVM pyspark launched for this process
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.kill()
            proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None


@pytest.mark.parametrize(
    "settings",
    [
        {"privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]}},
        {
            "quality": {"objective": "loss"},
            "suppressed_records": "drop",
            "direct_identifiers": [{"pid": "pseudonymise"}],
            "pseudonym_key": {"env": "SKALD_SPARK_TEST_KEY"},
        },
        {  # local recoding: each row at its step's node (ADR 0063)
            "transformation": {"local_recoding": {"records": 0.01}},
            "privacy": {"k": 4, "suppression_limit": 0.02},
        },
    ],
)
def test_the_spark_engine_releases_what_the_chunk_path_releases(
    spark, tmp_path, capsys, monkeypatch, settings
):
    monkeypatch.setenv("SKALD_SPARK_TEST_KEY", "a-pseudonym-key-0f3c9e7d1b2a4c68")
    inp = write_files(tmp_path / "in", 2, 150, 11)
    out = {}
    for name, execution in (("chunks", {"engine": "chunks"}), ("spark", spark)):
        out[name] = tmp_path / f"out-{name}"
        code, err = run_cli(
            tmp_path, config(inp, out[name], execution=execution, **settings), name, capsys
        )
        assert code == 0, err
    assert_same_release(out["spark"], out["chunks"])
    assert TOKEN not in err and not any(
        TOKEN.encode() in p.read_bytes() for p in out["spark"].rglob("*") if p.is_file()
    )


def test_what_the_spark_engine_does_not_run_is_refused_before_any_work(tmp_path, capsys):
    inp = write_files(tmp_path / "in", 1, 40, 1)
    execution = {"engine": "spark", "connection": "sc://127.0.0.1:9"}  # never reached
    cfg = config(inp, tmp_path / "out", execution=execution)
    cfg["output"]["format"] = "csv"
    code, err = run_cli(tmp_path, cfg, "refused", capsys)
    assert code == 2
    assert "execution.engine spark" in err and "output.format is csv" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "refused.yaml"]


def test_spark_microaggregates_as_the_chunk_path(spark, tmp_path, capsys):
    """Integer means in and out of the lattice (class sums counted by Spark, each class's
    label joined from the worker's table: ADR 0064); the engine's `local[2]` reuses the
    module's running local session (its JVM and Spark Connect server unchanged)."""
    from test_engine_microaggregation import CASES

    inp = write_files(tmp_path / "in", 2, 150, 23)
    same_as_chunks(tmp_path, capsys, inp, LOCAL, **CASES[2])


def test_spark_weighs_journalist_profitability_as_the_chunk_path(spark, tmp_path, capsys):
    """ARX's ProfitabilityJournalist over a research subset flagged by a column (ADR 0046, ADR
    0068): each class's loss from Spark's root histogram and its population records from
    Spark's counts give the chunk path's node, payout and released rows."""
    from test_engine_subset import population

    population(tmp_path / "in", 58)
    journalist = {**PROFIT, "attacker": "journalist"}
    settings = {
        "research_subset": {"column": "in_study"},
        "privacy": {"profitability": journalist, "suppression_limit": 0.2},
    }
    same_as_chunks(tmp_path, capsys, tmp_path / "in", LOCAL, **settings)


def test_spark_reads_csv_as_the_chunk_path(spark, tmp_path, capsys):
    """CSV parsed by Spark with pyarrow's options (ADR 0077): the chunk path's manifest and
    released rows; a numerical QID's CSV text summed by microaggregation."""
    from test_duckdb_csv import _csv, csv_files

    inp = csv_files(tmp_path / "in", 2, 150, 31)
    qids = config(inp, inp)["quasi_identifiers"]
    qids[1]["microaggregation"] = {"function": "mean", "cluster": False}
    settings = {
        "input": _csv(inp),
        "quasi_identifiers": qids,
        "privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]},  # "" is a value
    }
    same_as_chunks(tmp_path, capsys, inp, LOCAL, **settings)


def test_spark_numbers_csv_rows_and_reads_numbers_as_pyarrow(spark, tmp_path):
    """Each CSV row's number in its file, counted over Spark's splits of it (several here),
    and pyarrow's number texts read to pyarrow's doubles."""
    import pyarrow.csv as pacsv
    from sqlglot import exp
    from test_duckdb_csv import _csv, csv_files

    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.sql import dialect as D
    from airflow_skald.core.engine.sql import spark_input
    from airflow_skald.core.engine.sql.spark_session import SparkSqlSession, spark_of

    inp = csv_files(tmp_path / "in", 2, 200, 5)
    texts = ["1", "+1", "-.5", " 2.5\t", "1.e3", "1E-2", "inf", "-Infinity", "NaN", "NA", "+nan"]
    rows = ["pid,city,age,zip,income,disease,score"]
    rows += [f"Q{i},Oslo,{t},1001,1.5,flu,1" for i, t in enumerate(texts)] + ["Q,Oslo,,1,1,a,1"]
    (inp / "odd.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    cfg = config_from_dict(config(inp, tmp_path / "out", input=_csv(inp, ";")))
    session = spark_of(LOCAL["connection"])
    session.conf.set("spark.sql.files.maxPartitionBytes", "2048")  # several splits a file
    sql = SparkSqlSession(session)
    try:
        files = sorted(str(p) for p in inp.glob("in-*.csv"))
        source = spark_input.view(sql, cfg, files, rows=True)
        cells = [D.column(c) for c in ("pid", spark_input.ROW, spark_input.FILE)]
        got = sql.query(exp.select(*cells).from_(D.table(source.relation))).to_pylist()
        for i, f in enumerate(files):
            pids = pacsv.read_csv(f, parse_options=pacsv.ParseOptions(delimiter=";"))["pid"]
            numbered = {r[spark_input.ROW]: r["pid"] for r in got if r[spark_input.FILE] == i}
            assert numbered == dict(enumerate(pids.to_pylist()))
        comma = config_from_dict(config(inp, tmp_path / "out", input=_csv(inp, ",")))
        odd = spark_input.view(sql, comma, [str(inp / "odd.csv")])
        ages = sql.query(exp.select(D.column("age")).from_(D.table(odd.relation)))["age"]
        expected = pacsv.read_csv(
            inp / "odd.csv",
            convert_options=pacsv.ConvertOptions(column_types={"age": "float64"}),
        )["age"]
        assert [str(v) for v in ages.to_pylist()] == [str(v) for v in expected.to_pylist()]
    finally:
        sql.close()
        session.conf.unset("spark.sql.files.maxPartitionBytes")


@pytest.mark.parametrize("row", ["P3,Oslo,33d,1001,3.5,flu,1", "P3,Oslo,33"])
def test_a_csv_row_pyarrow_refuses_is_refused(spark, tmp_path, capsys, row):
    """A number Spark's cast reads (33d) but pyarrow does not, and a ragged row (found by the
    header's read, within pyarrow's first block): refused in one line naming the file and the
    row, as the chunk path refuses them; nothing written."""
    inp = tmp_path / "in"
    inp.mkdir()
    rows = ["pid,city,age,zip,income,disease,score"]
    rows += [f"P{i},Oslo,{30 + i},1001,{i}.5,flu,1" for i in range(6)]
    rows[4] = row  # the fourth data row
    (inp / "in.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    errors = {}
    for name, execution in (("chunks", {"engine": "chunks"}), ("spark", LOCAL)):
        cfg = config(inp, tmp_path / f"out-{name}", execution=execution)
        cfg["input"] = {"path": str(inp), "format": "csv", "delimiter": ","}
        code, err = run_cli(tmp_path, cfg, name, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / f"out-{name}").exists()
        errors[name] = err.strip()
    assert errors["spark"] == errors["chunks"]
    assert "in.csv: " in errors["spark"] and "row 4" in errors["spark"]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_spark_gathers_the_utility_analysis_of_the_chunk_path(spark, tmp_path, capsys, fmt):
    """The manifest's `utility` section from Spark's counts and its join of the sampled rows
    (ADR 0077) on Parquet's and CSV's row numbers: the chunk path's, a sample smaller than the
    input (its key bound used)."""
    manifest = same_utility_as_chunks(tmp_path, capsys, fmt, LOCAL)
    assert manifest["utility"]["sample"]["records"] == 200
    assert manifest["utility"]["classification"]["models"]


def test_spark_estimates_where_to_group_and_counts_the_chunk_paths_node(spark, tmp_path):
    """Spark's APPROX_COUNT_DISTINCT places the grouped table (`chain_estimate.ESTIMATING`;
    DuckDB's sampled estimate: tests/integration/engines/test_duckdb_chain.py): the estimating
    scan runs for the nodes in doubt, and from any start the counting node is the chunk path's."""
    from engine_compare import chunk_path
    from sqlglot import exp

    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.sql import (
        chain_estimate,
        counts,
        grouped_table,
        passes,
        spark_input,
        subset,
    )
    from airflow_skald.core.engine.sql.spark_session import SparkSqlSession, spark_of
    from airflow_skald.core.passes import pipeline as P

    inp = write_files(tmp_path / "in", 2, 150, 7)
    settings = {"memory": {"histogram_bins": 300, "root": "adaptive"}}
    cfg = config_from_dict(config(inp, tmp_path / "out", **settings))
    chunks = chunk_path(cfg, tmp_path / "chunks").counts
    expected = tuple(chunks.node)
    session = SparkSqlSession(spark_of("local[2]"))
    try:
        files = sorted(str(p) for p in inp.glob("*.parquet"))
        source = spark_input.view(session, cfg, files)
        plan = P.plan_root(cfg, passes.domain_stats(session, source, cfg, []))
        chain = [tuple(node) for node in plan.counting_chain()]
        source = subset.flagged(session, source, cfg)
        coding = passes.coding_of(session, source, plan, cfg)
        asked, query = [], session.query
        session.query = lambda s, *a: asked.append(s.find(exp.ApproxDistinct)) or query(s, *a)
        estimated = chain_estimate.estimated_start(session, source, coding, plan)
        del session.query
        assert any(a is not None for a in asked)  # the estimating scan ran
        answer = chain.index(expected)
        assert estimated <= answer  # 150 x 2 records: the estimates are exact here
        for start in sorted({0, estimated, answer, len(chain) - 2}):
            *_, index = counts.judged(session, source, coding, plan, start)
            assert chain[index] == expected, start
        # ADR 0082: a start judged with the next node's table and its finer bins' bits: the
        # counting node where the start does not fit (at the next node or rolled up past it),
        # None where it fits (an estimate too high) or its step is not one arithmetic QID's
        judged = []
        for start in range(1, len(chain) - 1):
            counted = counts.by_children(session, source, coding, plan, start)
            placed = grouped_table.child_place(coding, chain[start], chain[start + 1]) is not None
            assert (counted is not None) == (placed and start < answer), start
            if counted is not None:
                judged.append(start)
                assert chain[counted[2]] == expected, start
        assert judged and min(judged) < answer - 1  # a roll-up past the next node too
        counted = counts.root_counts(session, source, coding, plan)
        assert counted.node == expected
        assert (counted.classes.keys == chunks.classes.keys).all()
        assert (counted.classes.counts == chunks.classes.counts).all()
        # the first node that surely fits judged before any estimate (`_first_sure`: the
        # node before it by `by_children`): with 60 bins 300 records spread evenly would
        # overfill that node, so it runs and gives the chunk path's node; with 151 they would
        # not, and the estimate decides as above
        for bins, runs in ((60, True), (151, False)):
            cfg = config_from_dict(config(inp, tmp_path / "out", memory={"histogram_bins": bins}))
            plan = P.plan_root(cfg, passes.domain_stats(session, source, cfg, []))
            coding = passes.coding_of(session, source, plan, cfg)
            first = counts._first_sure(session, source, coding, plan)
            assert (first is not None) == runs, bins
            expected = tuple(chunk_path(cfg, tmp_path / f"chunks-{bins}").counts.node)
            assert first is None or tuple(plan.counting_chain()[first[2]]) == expected
    finally:
        session.close()


def test_spark_samples_the_chunk_paths_records_of_files_it_does_not_cut(spark, tmp_path, capsys):
    """Two files of 300 records, `chunk_rows` 150: the chunk path reads four chunks, Spark
    two files, numbered per file (`_metadata.row_index`); the same sample of 200 of the 600
    records, so the same `utility` section, and every manifest key but the chunk count and
    the parts' names the chunk path's."""
    manifest = same_utility_as_chunks(tmp_path, capsys, "parquet", LOCAL, 300)
    assert manifest["utility"]["sample"]["records"] == 200


def test_spark_phase_1_is_one_scan_with_the_two_scans_answers(spark):
    """ADR 0082: Spark's phase 1 (`domain.phase_1_scan`) computes the summaries beside the
    distinct counts in one GROUP BY (GROUPING SETS with two columns), combined by the worker:
    the same figures as the two scans (a null, NaN, infinities, fractions, negative zero;
    and over no rows)."""
    import pyarrow as pa

    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.sql import domain
    from airflow_skald.core.engine.sql.spark_session import SparkSqlSession, spark_of

    doubles = [1.5, float("nan"), float("inf"), float("-inf"), -0.0, 2.0, None, 7.0]
    table = pa.table(
        {
            "x": pa.array(doubles, pa.float64()),
            "y": pa.array([5, -3, 9, None, 4, 4, 1, 2], pa.int64()),
            "c": pa.array(["a", "b", None, "a", "b", "b", "a", "c"]),
            "d": pa.array(["u", "u", "v", "v", "u", None, "u", "v"]),
        }
    )
    numerical = {"type": "numerical", "min_width": 1}
    qids = [{"name": n, **numerical} for n in ("x", "y")]
    qids = config_from_dict(config("in", "out", quasi_identifiers=qids)).quasi_identifiers
    session = SparkSqlSession(spark_of("local[2]"))
    try:
        for rows in (table, table.slice(0, 0)):
            source = domain.SqlInput(session.send("odd", rows), rows.schema, "odd")
            for columns in (["c"], ["c", "d"]):
                summary, tables = domain.phase_1_scan(session, source, qids, columns)
                expected = domain.summaries(session, source, qids)
                assert _figures(summary) == _figures(expected), (rows.num_rows, columns)
                for c in columns:
                    got = tables[c].sort_by("v").to_pylist()
                    assert (
                        got == domain.distinct_counts(session, source, c).sort_by("v").to_pylist()
                    )
    finally:
        session.close()


def _figures(summary: dict) -> dict:
    """Phase 1's summary figures, compared as values: NaN as a text (NaN equals no number); a
    count over no rows (Spark's SUM of none is null) as 0."""
    out = {}
    for key, value in summary.items():
        if key[:2] not in ("lo", "hi") and value is None:
            value = 0
        out[key] = "NaN" if isinstance(value, float) and value != value else value
    return out
