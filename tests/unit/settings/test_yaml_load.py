"""The config YAML loader: PyYAML's safe load, minus alias bombs and silent duplicate keys."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
import yaml

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings import yaml_load
from airflow_skald.core.settings.yaml_load import load_yaml_file, load_yaml_text

REPO = Path(__file__).resolve().parents[3]

CONFIG_HEAD = """\
input: {path: data, format: parquet}
output: {path: out}
privacy: {k: 5}
quasi_identifiers:
  - name: bg
    type: categorical
    hierarchy:
"""


def _bomb(levels: int = 9, fan_out: int = 10) -> str:
    """A config whose hierarchy rows are nested aliases: fan_out ** levels labels, ~1 KB."""
    rows = ['      "v0": &a0 [' + ", ".join(["A"] * fan_out) + "]"]
    for i in range(1, levels):
        rows.append(f'      "v{i}": &a{i} [' + ", ".join([f"*a{i - 1}"] * fan_out) + "]")
    return CONFIG_HEAD + "\n".join(rows) + "\n"


def _one_line_error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_yaml_text(text, "c.yaml")
    message = str(info.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------- same as safe_load


@pytest.mark.parametrize("path", ["docker/skald/skald.yaml", "docker/docker-compose.yaml"])
def test_real_files_load_as_safe_load_does(path):
    text = (REPO / path).read_text(encoding="utf-8")
    assert load_yaml_text(text, path) == yaml.safe_load(text)


def test_scalars_aliases_and_merges_load_as_safe_load_does():
    text = (
        "a: &h {A+: [A], A-: [A]}\nb: *h\nn: [1, 1.5, yes, ~, '01', 2001-01-01]\n"
        "base: &base {x: 1, y: 2}\nmerged: {<<: *base, y: 3}\n"
    )
    loaded = load_yaml_text(text, "c.yaml")
    assert loaded == yaml.safe_load(text)
    assert loaded["merged"] == {"x": 1, "y": 3}  # a merge may be overridden: not a duplicate


def test_an_empty_document_is_none():
    assert load_yaml_text("", "c.yaml") is None
    assert load_yaml_text("# only a comment\n", "c.yaml") is None


# ------------------------------------------------------------------------- the old error mapping


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a: [1, 2\nb: 3\n", "config file c.yaml is not valid YAML (line 2)"),
        ("a: 1\n  b: 2\n", "config file c.yaml is not valid YAML (line 2)"),
        ("a: 1\n---\nb: 2\n", "config file c.yaml is not valid YAML (line 2)"),
        ("a: !!int x\n", "config file c.yaml is not valid YAML"),
        ("a: 2001-13-45\n", "config file c.yaml is not valid YAML"),
        ("a: !!python/object:os.system x\n", "config file c.yaml is not valid YAML (line 1)"),
        ("a: *nowhere\n", "config file c.yaml is not valid YAML (line 1)"),
        ("[" * 5000 + "]" * 5000, "config file c.yaml is not valid YAML"),
    ],
)
def test_invalid_yaml_is_one_line(text, expected):
    assert _one_line_error(text).startswith(expected)


def test_file_errors_name_the_path(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=f"^config file not found: {missing}$"):
        load_yaml_file(missing)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("a: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=f"^config file {latin1} is not UTF-8 text$"):
        load_yaml_file(latin1)
    with pytest.raises(ConfigError, match=f"^cannot read config file {tmp_path}: "):
        load_yaml_file(tmp_path)  # a folder
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^config file {broken} is not valid YAML \\(line 2\\)"):
        load_yaml_file(broken)
    good = tmp_path / "good.yaml"
    good.write_text("a: 1\n", encoding="utf-8")
    assert load_yaml_file(str(good)) == {"a": 1}


# ------------------------------------------------------------------------- duplicate keys


def test_a_key_written_twice_is_refused_with_both_lines():
    text = "privacy:\n  k: 100\n  suppression_limit: 0.01\n  k: 5\n"
    assert yaml.safe_load(text) == {"privacy": {"k": 5, "suppression_limit": 0.01}}  # silent
    assert _one_line_error(text) == (
        "config file c.yaml: key 'k' on line 4 repeats the key on line 2 of the same mapping"
    )


def test_keys_equal_after_construction_are_duplicates():
    assert "line 2 repeats the key on line 1" in _one_line_error("1: a\n0x1: b\n")


def test_same_key_in_different_mappings_is_fine():
    assert load_yaml_text("a: {k: 1}\nb: {k: 2}\n", "c.yaml") == {"a": {"k": 1}, "b": {"k": 2}}


def test_a_long_key_is_not_echoed():
    key = "x" * 200
    message = _one_line_error(f"{key}: 1\n{key}: 2\n")
    assert key not in message and "key on line 2 repeats the key on line 1" in message


# ------------------------------------------------------------------------- alias expansion


def test_the_alias_bomb_is_refused_before_it_is_built():
    text = _bomb(levels=9)  # 10**9 labels in about 1 KB
    assert len(text) < 2048
    tracemalloc.start()
    try:
        message = _one_line_error(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message.startswith("config file c.yaml: YAML aliases expand to more than ")
    assert peak < 50 * 2**20  # the unbounded load walked 10**9 nodes (4.5 GB in the issue)


def test_a_merge_key_bomb_is_refused():
    # PyYAML >= 6.0.2 dedupes merged keys, older 6.0 copies every merged pair: the count is the
    # copying bound, so merges of merges are refused whatever PyYAML is installed
    rows = ["m0: &m0 {a: 1, b: 2}"]
    rows += [
        f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}, *m{i - 1}, *m{i - 1}]}}" for i in range(1, 14)
    ]
    assert "YAML aliases expand to more than" in _one_line_error("\n".join(rows) + "\n")


def test_a_self_referencing_alias_is_refused():
    assert _one_line_error("a: &a [1, *a]\n") == (
        "config file c.yaml: a YAML alias refers to itself (line 1)"
    )
    assert "refers to itself" in _one_line_error("a: &a {b: {c: *a}}\n")


def test_the_bound_is_a_floor_plus_a_multiple_of_the_written_nodes(monkeypatch):
    monkeypatch.setattr(yaml_load, "ALIAS_EXPANSION_FLOOR", 3)
    monkeypatch.setattr(yaml_load, "ALIAS_EXPANSION_FACTOR", 1)
    # written: mapping, keys a and b, the list and its 2 items = 6 nodes; expanded: 1 + 2 + 2 * 3
    twice = "a: &l [x, y]\nb: *l\n"
    assert yaml_load.expanded_size(yaml.compose(twice)) == (9, 6)
    assert load_yaml_text(twice, "c.yaml") == {"a": ["x", "y"], "b": ["x", "y"]}  # 9 <= 3 + 6
    thrice = twice + "c: *l\n"  # 13 > 3 + 7
    assert _one_line_error(thrice) == (
        "config file c.yaml: YAML aliases expand to more than 10 nodes (7 written); "
        "write the repeated parts out or use a hierarchy_file"
    )


def test_a_shared_inline_hierarchy_under_the_bound_loads():
    labels = ", ".join(f'"v{i}": [g{i % 7}]' for i in range(2000))
    text = f"h: &h {{{labels}}}\ncopy1: *h\ncopy2: *h\ncopy3: *h\n"
    loaded = load_yaml_text(text, "c.yaml")
    assert loaded["copy3"] == loaded["h"] and len(loaded["h"]) == 2000
