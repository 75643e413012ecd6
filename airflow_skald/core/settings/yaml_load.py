"""Safe YAML loading for configuration files: bounded alias expansion, no duplicate keys.

PyYAML's safe loaders share one Python object per anchor, so an alias bomb (nested aliases,
or ``<<`` merges of merges, which older PyYAML 6.0 copies pair by pair) costs little to parse,
but every consumer that walks the result (validation, hashing, hierarchy building) pays the
full expanded size: a 2 KB file can stand for hundreds of millions of nodes. The composed node
graph is a DAG of shared nodes, so its expanded size is computed here in linear time (memoised
per node) and checked BEFORE any Python object is built.

The bound: the expanded document may hold at most ``ALIAS_EXPANSION_FLOOR`` nodes plus
``ALIAS_EXPANSION_FACTOR`` times the nodes written in the file. A file without aliases always
passes (its expansion is itself); aliases that share an inline hierarchy between a few places
pass; an alias bomb is refused with one line.

Duplicate keys in one mapping are refused too (PyYAML silently keeps the last one, which
hides a typo such as two ``k:`` lines, or a hierarchy value listed twice). Keys brought in by
a ``<<`` merge may be overridden, as YAML intends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from airflow_skald.core.errors import ConfigError

ALIAS_EXPANSION_FLOOR = 1_000_000
ALIAS_EXPANSION_FACTOR = 10
_MERGE_TAG = "tag:yaml.org,2002:merge"
_KEY_SHOWN_CHARS = 40
_SIZE_CAP = 1 << 62

try:  # libyaml's parser: faster, and it bounds nesting depth itself
    from yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)


class _DuplicateKeyError(Exception):
    def __init__(self, key_node: Node, first: Node) -> None:
        super().__init__()
        self.key_node = key_node
        self.first = first


class _AliasCycleError(Exception):
    def __init__(self, node: Node) -> None:
        super().__init__()
        self.node = node


class _StrictConstructor(yaml.constructor.SafeConstructor):
    """SafeConstructor that refuses a key written twice in one mapping."""

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: dict[Any, Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)  # memoised: built once
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:  # unhashable: the base class reports it
                    continue
                if first is not key_node:
                    raise _DuplicateKeyError(key_node, first)
        return super().construct_mapping(node, deep=deep)


class _Loader(_Parser, _StrictConstructor, yaml.resolver.Resolver):  # type: ignore[misc,valid-type]
    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _StrictConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def expanded_size(root: Node) -> tuple[int, int]:
    """(nodes after alias expansion, capped at 2**62; distinct nodes in the graph).

    Iterative post-order over the DAG with one memo entry per node, so linear in the file and
    safe at any depth. A ``<<`` merge counts as the merged mapping, an upper bound of what the
    merge copies. Raises `_AliasCycleError` on a recursive anchor (an infinite expansion).
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            total = 1 + sum(size[id(c)] for c in _children(node))
            size[key] = min(total, _SIZE_CAP)  # keeps the sums small
            on_path.discard(key)
            continue
        if key in size:
            continue
        if key in on_path:
            raise _AliasCycleError(node)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise _AliasCycleError(child)
            if id(child) not in size:
                stack.append((child, False))
    return size[id(root)], len(size)


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _shown_key(node: Node) -> str:
    if isinstance(node, ScalarNode) and len(node.value) <= _KEY_SHOWN_CHARS:
        return f" {node.value!r}"
    return ""


def _check_expansion(root: Node, source: str) -> None:
    try:
        total, distinct = expanded_size(root)
    except _AliasCycleError as exc:
        raise ConfigError(
            f"config file {source}: a YAML alias refers to itself (line {_line(exc.node)})"
        ) from None
    limit = ALIAS_EXPANSION_FLOOR + ALIAS_EXPANSION_FACTOR * distinct
    if total > limit:
        raise ConfigError(
            f"config file {source}: YAML aliases expand to more than {limit:,} nodes "
            f"({distinct:,} written); write the repeated parts out or use a hierarchy_file"
        )


def _parse(text: str, source: str) -> Any:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_expansion(root, source)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def load_yaml_text(text: str, source: str) -> Any:
    """Parse one YAML document safely; every failure is a one-line `ConfigError` naming `source`."""
    try:
        return _parse(text, source)
    except _DuplicateKeyError as exc:
        raise ConfigError(
            f"config file {source}: key{_shown_key(exc.key_node)} on line {_line(exc.key_node)} "
            f"repeats the key on line {_line(exc.first)} of the same mapping"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(f"config file {source} is not valid YAML{where}") from None
    except (ValueError, LookupError, TypeError, OverflowError, RecursionError):
        # PyYAML's constructors raise these on bad tags or dates (`!!int x`, `2001-13-45`)
        raise ConfigError(f"config file {source} is not valid YAML") from None


def load_yaml_file(path: str | Path) -> Any:
    """Read a UTF-8 YAML file and parse it as `load_yaml_text` does (errors name the path)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    return load_yaml_text(text, str(path))
