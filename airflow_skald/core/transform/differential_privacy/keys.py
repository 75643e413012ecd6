"""The keyed pseudo-random streams of a differentially private run (docs/design.md §4e): Philox
(Salmon et al. 2011), keyed by HMAC-SHA-256 (RFC 2104).

Every random decision of a DP run (which records the sample keeps, which pivot the search
draws) is a function of the secret, the run's identity and the decision's position: a Philox
counter-based generator keyed by the secret's HMAC-SHA-256 of the run's token in the purpose's
own domain (``settings/keyed.py``: ``DP_SAMPLE``, ``DP_SEARCH``). Decision i is
lane ``i mod 4`` of the block at counter ``i div 4``, so any range of decisions is drawn at once
and does not depend on what was drawn before (chunking, workers, retries). Without the secret
the stream cannot be predicted; another run (another identity) draws a fresh one.
"""

from __future__ import annotations

import numpy as np

from airflow_skald.core.settings import keyed

SAMPLE = keyed.DP_SAMPLE
SEARCH = keyed.DP_SEARCH


def stream_key(secret: bytes, run_id: str, purpose: str) -> int:
    """The 128-bit Philox key of one purpose of one run."""
    digest = keyed.derive(secret, purpose, run_id.encode())
    return int.from_bytes(digest[:16], "little")


def raw(key: int, first: int, n: int) -> np.ndarray:
    """Decisions first .. first + n - 1 of the stream: 64 random bits each."""
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    block, lane = divmod(int(first), 4)
    gen = np.random.Philox(key=key, counter=[block, 0, 0, 0])
    return gen.random_raw(lane + n)[lane:]


def uniforms(key: int, first: int, n: int) -> np.ndarray:
    """The same decisions as doubles in [0, 1): the top 53 bits over 2^53."""
    return (raw(key, first, n) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
