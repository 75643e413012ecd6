"""What the writer needs to know of a store (an fsspec filesystem): whether it is local disk
(renames, hard links, modes) or an object store (whole-object writes, no rename), and how to
forget its cached listings."""

from __future__ import annotations

import contextlib
import posixpath

import fsspec


def protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    return bool({"file", "local"} & set(protocols(fs)))


def fresh(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Forget cached listings (s3fs caches them per process; another run may have written)."""
    with contextlib.suppress(Exception):
        fs.invalidate_cache(path)
        fs.invalidate_cache(posixpath.dirname(path))
