"""Adult as the repository holds it (tests/data/adult/): the table compressed (adult.csv.gz),
ARX's hierarchies plain. `adult_csv()` decompresses the table once into a cache folder under
the system's temporary folder, so that tests, benchmarks and ARX read a plain `;`-separated
file; nothing outside the clone is read."""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ARX's hierarchies (adult_hierarchy_<column>.csv) and adult.csv.gz
ADULT = ROOT / "tests" / "data" / "adult"
#: SHA-256 of adult.csv as ARX ships it (30,162 records, CRLF line ends)
ADULT_SHA256 = "c700df9304fbf3c4d4db5938bffc510561bd4a2dfad285a3feef9a20619391c5"


def adult_csv() -> Path:
    """The plain adult.csv, decompressed from tests/data/adult/adult.csv.gz on first use (the
    cache folder is named by the table's hash; written under a temporary name, then renamed,
    so concurrent test workers never read half a file)."""
    path = Path(tempfile.gettempdir()) / "skald-testdata" / ADULT_SHA256[:16] / "adult.csv"
    if path.is_file():
        return path
    data = gzip.decompress((ADULT / "adult.csv.gz").read_bytes())
    if hashlib.sha256(data).hexdigest() != ADULT_SHA256:
        raise RuntimeError(f"{ADULT / 'adult.csv.gz'}: not the Adult table recorded here")
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"adult.csv.{os.getpid()}.part")
    part.write_bytes(data)
    os.replace(part, path)
    return path
