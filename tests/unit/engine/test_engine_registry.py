"""The engine seam's registry and the `execution:` setting (docs/design.md §2b, ADR 0050): an
engine not registered is refused before any work, in one line naming the setting."""

from __future__ import annotations

import pytest
from helpers_data import config_dict, run_inprocess, setup_run, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.engine import registry
from airflow_skald.core.engine.chunks import ChunkEngine
from airflow_skald.core.engine.registry import engine_class, open_engine, registered
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.execution import ExecutionSettings


def test_the_chunk_engine_is_registered_and_the_default(tmp_path) -> None:
    _, _, config, _ = setup_run(tmp_path, n_files=1, rows=4)
    loaded = load_config(config)
    assert loaded.execution_settings == ExecutionSettings("chunks", None)
    engine = open_engine(loaded, workers=2)
    assert isinstance(engine, ChunkEngine) and engine.workers == 2
    assert "chunks" in registered()


@pytest.mark.parametrize("name", ["duckdb", "oracle"])
def test_an_engine_not_registered_is_refused_in_one_line(name) -> None:
    if name in registered():  # a SQL engine once it lands: the test names one that never will
        name = "spark-of-tomorrow"
    with pytest.raises(ConfigError) as err:
        engine_class(name)
    text = str(err.value)
    assert "\n" not in text and f"execution.engine '{name}'" in text and "chunks" in text


def test_the_file_short_and_long_forms_and_the_flags(tmp_path) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    short = write_config(tmp_path / "a.yaml", {**config_dict(inp, out), "execution": "chunks"})
    assert load_config(short).execution == "chunks"
    body = {**config_dict(inp, out), "execution": {"engine": "spark", "connection": "SPARK_URL"}}
    spark = load_config(write_config(tmp_path / "b.yaml", body))
    assert spark.execution_settings == ExecutionSettings("spark", "SPARK_URL")
    assert spark.fingerprint() == load_config(short).fingerprint()  # not in the hash
    assert "SPARK_URL" not in str(spark.effective())  # nor in the archive
    # a flag naming another engine drops the file's connection unless it names one
    assert load_config(short, {"execution": "duckdb"}).execution_connection is None
    moved = load_config(short, {"execution": "postgresql", "execution_connection": "db"})
    assert moved.execution_settings == ExecutionSettings("postgresql", "db")
    with pytest.raises(ConfigError, match="^execution must be one of chunks, duckdb"):
        load_config(short, {"execution": "oracle"})
    with pytest.raises(ConfigError, match="the chunk engine .* takes no connection"):
        load_config(short, {"execution_connection": "db"})
    with pytest.raises(ConfigError, match="unknown key 'engin'"):
        load_config(write_config(tmp_path / "c.yaml", {**body, "execution": {"engin": "x"}}))


def test_the_cli_refuses_an_engine_not_registered_before_any_work(
    tmp_path, capsys, monkeypatch
) -> None:
    name = "spark"
    monkeypatch.delitem(registry.ENGINES, name, raising=False)  # as before it is built
    inp, out, config, _ = setup_run(tmp_path, n_files=1, rows=8)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, err = run_inprocess(["run", str(config), "--execution", name, "-q"], capsys)
    assert code == 2 and stdout == "", err
    assert len(err.strip().splitlines()) == 1 and f"execution.engine '{name}'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not out.exists()


@pytest.mark.parametrize(
    "uri",
    [
        "sc://spark.example:15002/;token=s3cret-tok",
        "sc://spark.example:15002/;user_id=etl;TOKEN=s3cret-tok",
        "postgresql://alice:s3cret-tok@db.example/clinic",
        "postgresql://alice@db.example/clinic?sslmode=require&password=s3cret-tok",
    ],
)
def test_an_engine_uri_holding_a_secret_is_refused_without_showing_it(uri) -> None:
    """ADR 0069: the config file is archived with the release, so a URI with a token or a
    password is refused (name an environment variable or an Airflow connection instead)."""
    with pytest.raises(ConfigError, match="^execution.connection: the URI holds a secret") as e:
        ExecutionSettings("spark", uri)
    assert "s3cret" not in str(e.value) and "\n" not in str(e.value)
    for fine in ("sc://spark.example:15002/;user_id=etl;use_ssl=true", "SPARK_URL", "local[2]"):
        assert ExecutionSettings("spark", fine).connection == fine
