"""The settings table (core.settings): one parser and one message per setting on every route,
and the regressions it fixed (issue 10: bugs 1, 3, 5; bugs 2 and 4 of the per-chunk run)."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest
from helpers_data import (
    config_dict,
    run_inprocess,
    setup_run,
    write_config,
    write_dataset,
)

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.table import BY_NAME, SETTINGS, check_run_conf, parse_overrides


def _file_error(tmp_path: Path, name: str, value) -> str:
    inp, out = tmp_path / "in", tmp_path / "out"
    cfg = config_dict(inp, out)
    node = cfg
    for key in BY_NAME[name].path[:-1]:
        node = node.setdefault(key, {})
    node[BY_NAME[name].path[-1]] = value
    path = write_config(tmp_path / f"{name}.yaml", cfg)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    return str(err.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("k", 1),
        ("k", 2.5),
        ("k", "abc"),
        ("suppression_limit", 5),
        ("suppression_limit", -0.1),
        ("histogram_bins", 1),
        ("histogram_bins", 0),
        ("chunk_rows", 0),
        ("suppressed_records", "hide"),
    ],
)
def test_one_message_per_bad_value_on_every_route(name, value, tmp_path, capsys) -> None:
    """Bug 5: the file, the CLI flag and a DAG param / operator field say the same thing."""
    from_file = _file_error(tmp_path, name, value)
    with pytest.raises(ConfigError) as err:
        parse_overrides({name: value})
    from_param = str(err.value)
    _, _, config, _ = setup_run(tmp_path / "cli", n_files=1, rows=10)
    code, _, err_text = run_inprocess(["run", str(config), BY_NAME[name].flag, str(value)], capsys)
    from_cli = err_text.strip().removeprefix("skald: error: ")
    assert code == 2
    assert from_param == from_cli, (from_param, from_cli)
    # the file names the key's place in the file; the rest of the message is the same words
    assert from_file == BY_NAME[name].where + from_param.removeprefix(name)
    assert "must be" in from_param


def test_empty_overrides_keep_the_files_values(tmp_path) -> None:
    """Bug 1 (core side): an empty param or flag means the file's value, for every setting."""
    cfg = config_dict(tmp_path / "in", tmp_path / "out", k=100, suppression_limit=0.02)
    cfg["memory"] = {"histogram_bins": 5000}
    cfg["suppressed_records"] = "drop"
    path = write_config(tmp_path / "skald.yaml", cfg)
    plain = load_config(path)
    empty = {s.name: None for s in SETTINGS} | {"k": "", "histogram_bins": "None"}
    assert load_config(path, empty).fingerprint() == plain.fingerprint()
    assert plain.min_class_size == 100 and plain.suppression.limit == Fraction(1, 50)
    assert plain.histogram_bins == 5000 and plain.suppression.records == "drop"


def test_values_are_parsed_exactly() -> None:
    got = parse_overrides({"k": "7", "suppression_limit": "0.29", "chunk_rows": 10.0})
    assert got == {"k": 7, "suppression_limit": Fraction(29, 100), "chunk_rows": 10}
    assert parse_overrides({"overwrite": "true"}) == {"overwrite": True}


def test_unknown_conf_keys_are_refused() -> None:
    allowed = {"config", "k"}
    check_run_conf({"config": "x", "k": 3}, allowed)
    with pytest.raises(ConfigError, match="unknown key 'K'"):
        check_run_conf({"K": 25}, allowed)


def test_param_schemas_have_no_bounds_to_clamp() -> None:
    """Airflow's trigger form clamps to min/max: the Params carry types only."""
    for setting in SETTINGS:
        schema = setting.param_schema()
        assert "minimum" not in schema and "maximum" not in schema
        assert "null" in schema["type"]


def test_verify_k_defaults_to_the_manifest_and_refuses_k_below_2(tmp_path, capsys) -> None:
    """Bug 3: `skald verify OUT --k 0` was 'verified'; now k < 2 is refused, and --k is
    optional (the manifest's k)."""
    _, out, config, _ = setup_run(tmp_path, k=4)
    assert run_inprocess(["run", str(config), "-q"], capsys)[0] == 0
    for bad in ("0", "1", "-3"):
        code, stdout, err = run_inprocess(["verify", str(out), "--k", bad], capsys)
        assert code == 2 and stdout == "" and "k must be an integer >= 2" in err, err
    code, stdout, _ = run_inprocess(["verify", str(out)], capsys)
    assert code == 0 and json.loads(stdout)["k"] == 4


def test_per_chunk_run_with_a_chunk_smaller_than_k_is_a_clear_error(tmp_path, capsys) -> None:
    """Bug 2: 24 rows, chunk_rows 4, k 5 crashed with exit 3 (TypeError); now exit 2."""
    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=1, rows=24)
    config = write_config(tmp_path / "skald.yaml", config_dict(inp, out, k=5, chunk_rows=4))
    code, _, err = run_inprocess(["run", str(config), "--per-chunk", "-q"], capsys)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "chunk" in err and "k=5" in err
    assert not out.exists()


def test_per_chunk_runs_stage_under_their_own_token(tmp_path) -> None:
    """Bug 4: every `--per-chunk` run staged into `.out.skald-staging-cli`, so two concurrent
    runs removed each other's parts; now the token is per process, as the global run's."""
    from airflow_skald.core.run.baseline import run_per_chunk

    _, out, config, _ = setup_run(tmp_path, n_files=2, rows=40)
    seen: set[str] = set()

    def progress(phase: str, i: int, total: int, rows: int) -> None:
        seen.update(p.name for p in tmp_path.iterdir() if "skald-staging" in p.name)

    run_per_chunk(load_config(config), progress)
    assert len(seen) == 1
    assert seen.pop().startswith(f".out.skald-staging-cli-{os.getpid()}-")
    assert (out / "manifest.json").exists()


@pytest.mark.parametrize("command", ["run", "verify", "audit", "generate"])
def test_every_command_prints_its_help(command, capsys) -> None:
    """The flags' help comes from the settings table; a '%' in it broke argparse's --help."""
    code, stdout, _ = run_inprocess([command, "--help"], capsys)
    assert code == 0 and "usage: skald" in stdout


def test_the_table_places_its_keys_and_defaults_in_the_file(tmp_path) -> None:
    """Keys the table places are accepted by the loader, and a file that leaves them out gets
    the table's defaults (written once, in the table)."""
    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.settings.table import SETTINGS, file_keys

    assert {"chunk_rows", "suppressed_records"} <= file_keys()
    assert file_keys("memory") == {"histogram_bins", "root"}
    assert {"k", "suppression_limit"} <= file_keys("privacy")
    body = {
        "input": {"path": str(tmp_path)},
        "output": {"path": str(tmp_path / "out")},
        "quasi_identifiers": [{"name": "age", "type": "numerical"}],
        "privacy": {"k": 2},
    }
    config = config_from_dict(body)
    assert config.utility is None  # its rows fill one object, made only with the section
    with_section = config_from_dict({**body, "utility": {}}).utility.describe()
    for s in SETTINGS:
        if s.path and s.path[0] == "utility":
            assert with_section[s.path[1]] == s.default, s.name
        elif s.path and s.name not in ("k", "input_path", "output_path"):
            assert config.setting(s.name) == s.default, s.name
