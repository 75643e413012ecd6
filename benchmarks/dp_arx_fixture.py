"""Writes tests/data/arx_answers/dp-parameters-grid.json: ARX 3.9.2's k and β for a grid of (ε, δ)
(`../shared/arx/arx --dp-params-only EPS:DELTA:BUDGET`, both modes) and the JVM's Math.exp at
the two bounds ARX takes e^(-ε) of (the one input of β where a JVM may differ from the C
library by an ulp). Run once by hand (ARX needs up to half a minute per point):

    .venv/bin/python benchmarks/dp_arx_fixture.py [EPS:DELTA:BUDGET ...]
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARX = ROOT.parent / "shared" / "arx" / "arx"
OUT = ROOT / "tests" / "data" / "arx_answers" / "dp-parameters-grid.json"
COMMAND = "../shared/arx/arx --dp-params-only EPS:DELTA:BUDGET"
GRID = [
    "0.1:1e-3:0.01",
    "0.25:1e-5:0.1",
    "0.5:1e-4:0.1",
    "0.5:1e-6:0.05",
    "1:1e-5:0.1",
    "1:1e-6:0.2",
    "1.5:1e-5:0.1",
    "2:1e-4:0.1",
    "2:1e-5:0.1",
    "2:1e-6:0.5",
    "3:1e-5:0.1",
    "3:1e-6:0.1",
]
JAVA_EXP = """public class JvmExp { public static void main(String[] a) {
  for (String s : a) { double x = Double.longBitsToDouble(Long.parseLong(s));
    System.out.println(Double.doubleToRawLongBits(Math.exp(x))); } } }"""


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def jvm_exp(xs: list[float]) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "JvmExp.java").write_text(JAVA_EXP)
        subprocess.run(["javac", "JvmExp.java"], cwd=tmp, check=True)
        out = subprocess.run(
            ["java", "-cp", tmp, "JvmExp", *map(str, map(_bits, xs))],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    return [struct.unpack("<d", struct.pack("<q", int(v)))[0] for v in out]


def main(specs: list[str]) -> None:
    if not ARX.is_file():
        sys.exit(f"ARX 3.9.2 is missing: {ARX} (../shared/arx must sit beside the repository)")
    rows = []
    for spec in specs:
        got = json.loads(
            subprocess.run(
                [str(ARX), "--dp-params-only", spec], check=True, capture_output=True, text=True
            ).stdout
        )
        for mode, key in (("fixed", "without_search_budget"), ("searched", "data_dependent")):
            r = got[key]
            ea = r["epsilon_anonymization"]
            bounds = [math.nextafter(-ea, -math.inf), math.nextafter(-ea, math.inf)]
            rows.append(
                {
                    "epsilon": got["epsilon"],
                    "delta": got["delta"],
                    "mode": mode,
                    "search_budget": r.get("search_budget"),
                    "epsilon_anonymization": ea,
                    "k": r["k"],
                    "beta": r["beta"],
                    "arx_seconds": round(r["time_s"], 2),
                    "jvm_exp_of_bounds": jvm_exp(bounds),
                }
            )
    record = {"arx_version": "3.9.2", "command": COMMAND, "points": rows}
    OUT.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or GRID)
