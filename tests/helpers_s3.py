"""An S3 endpoint for tests: moto's server mode on a free 127.0.0.1 port.

``s3_server(mp, folder)`` starts it and points the standard ``AWS_*`` variables at it (as a
user points every S3 client, e.g. the core's fsspec/s3fs and `skald` subprocesses, at an S3
endpoint), with no profile, config or credentials file of the machine in the way. The server
is stopped and the variables restored (by the caller's MonkeyPatch) afterwards.

moto checks a conditional write (``If-None-Match: *``) and then stores the object, two steps
another request thread can come between; on AWS S3 and MinIO the check and the write are one.
The server here therefore serves writes (anything but GET and HEAD) one at a time, so several
lease takers racing for one key see what they would see on S3: exactly one wins.
"""

from __future__ import annotations

import contextlib
import logging
import threading
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
    wsgi = server._server  # werkzeug's server, running; its app is looked up per request
    wsgi.app = _writes_one_at_a_time(wsgi.app)
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


def _writes_one_at_a_time(app):
    lock = threading.Lock()

    def serve(environ, start_response):
        if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))

    return serve
