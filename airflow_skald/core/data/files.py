"""Where files live: an fsspec filesystem for a local path or URL (`filesystem`), the full
name of a file it lists (`full_path`), the local path of a plain path or file:// URL
(`local_path`), and a file's version as its store keeps it, without reading it
(`file_version`).
"""

from __future__ import annotations

import fsspec

from airflow_skald.core.errors import ConfigError, DataError


def filesystem(path: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """fsspec filesystem and in-filesystem path for a local path or URL."""
    try:
        fs, root = fsspec.core.url_to_fs(path)
    except (ValueError, ImportError) as exc:  # unknown protocol, or its package missing
        reason = "its protocol is not known" if isinstance(exc, ValueError) else str(exc)
        raise ConfigError(f"cannot use the path {path}: {reason}") from None
    return fs, root


def full_path(fs: fsspec.AbstractFileSystem, path: str) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if protocol in ("file", "local") else f"{protocol}://{path}"


def local_path(path: str) -> str | None:
    """The local filesystem path of `path` (a plain path or a file:// URL), else None."""
    if "://" not in path:
        return path
    return path[len("file://") :] if path.startswith("file://") else None


# What a store keeps about a file that changes when the file is rewritten (local files and
# most fsspec stores: mtime; S3: LastModified, ETag, VersionId; GCS: updated, generation, md5)
_VERSION_KEYS = (
    "mtime",
    "LastModified",
    "last_modified",
    "updated",
    "ETag",
    "etag",
    "VersionId",
    "version_id",
    "generation",
    "md5Hash",
    "crc32c",
)


def file_version(file: str) -> str:
    """This version of `file`, without reading it: its size plus the modification time and
    entity tag its store keeps (a rewritten file gets new ones; an unchanged one, read again
    by a retry or another task, the same)."""
    fs, path = filesystem(file)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise DataError(f"input file disappeared: {file}") from None
    parts = [f"size={info.get('size')}"]
    parts += [f"{key}={info[key]}" for key in _VERSION_KEYS if info.get(key) is not None]
    return ";".join(parts)
