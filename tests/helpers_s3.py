"""An S3 endpoint for tests: moto's server mode on a free 127.0.0.1 port.

``s3_server(mp, folder)`` starts it and points the standard ``AWS_*`` variables at it (as a
user points every S3 client, e.g. the core's fsspec/s3fs and `skald` subprocesses, at an S3
endpoint), with no profile, config or credentials file of the machine in the way. The server
is stopped and the variables restored (by the caller's MonkeyPatch) afterwards.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import s3fs
from moto.server import ThreadedMotoServer

ACCESS_KEY, SECRET_KEY, REGION = "testing", "testing", "us-east-1"


@contextlib.contextmanager
def s3_server(mp: pytest.MonkeyPatch, folder: Path) -> Iterator[str]:
    """The server's URL while it runs; ``AWS_*`` set with `mp`, ``folder`` holds nothing."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    nowhere = folder / "none"
    for key, value in {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": str(nowhere),
        "AWS_SHARED_CREDENTIALS_FILE": str(nowhere),
    }.items():
        mp.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        mp.delenv(key, raising=False)
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        yield url
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        server.stop()
