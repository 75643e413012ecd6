"""Zayatz's model as ARX computes it (issue 44 item 3, ADR 0042): the hypergeometric pmf is
commons-math 3.6.1's (the jar ARX 3.9.2 ships), recorded here with the Java program that made
the values and run again where Java and ARX's jars are beside the repository; the bounds that
decide most prefixes never give another verdict than the estimate itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from adult_files import ROOT

from airflow_skald.core.privacy.population_uniqueness import PopulationUniqueness
from airflow_skald.core.privacy.risk.analysis import PopulationModel
from airflow_skald.core.privacy.risk.estimators import Histograms, zayatz
from airflow_skald.core.privacy.risk.hypergeometric import probability_one
from airflow_skald.core.privacy.risk.zayatz_bounds import FAILS, HOLDS, UNDECIDED, decide

RECORDED = ROOT / "tests" / "data" / "arx_answers" / "commons-math-hypergeometric-one.json"
JAR = ROOT.parent / "shared" / "arx" / "lib" / "commons-math3-3.6.1.jar"
JAVA = """import org.apache.commons.math3.distribution.HypergeometricDistribution;
import java.io.*;
public class HypergeometricOne {
  public static void main(String[] a) throws Exception {
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = r.readLine()) != null) {
      String[] t = line.trim().split(" ");
      int N = Integer.parseInt(t[0]), K = Integer.parseInt(t[1]), n = Integer.parseInt(t[2]);
      double v = new HypergeometricDistribution(null, N, K, n).probability(1);
      System.out.println(Double.doubleToRawLongBits(v));
    }
  }
}
"""


def _cases() -> list[tuple[int, int, int]]:
    """(population, class size, records): Adult-like and extreme ones, every support edge."""
    rng = np.random.default_rng(44)
    out = []
    for total in (10, 57, 1000, 30162, 301620, 317238626, 2**31 - 1):
        for _ in range(150):
            n = int(
                rng.integers(1, total + 1)
                if rng.random() < 0.3
                else min(total, rng.integers(1, 40_000))
            )
            k = int(
                rng.integers(1, min(total, 40_000) + 1)
                if rng.random() < 0.5
                else rng.integers(1, min(total, 50) + 1)
            )
            out.append((total, k, n))
        out += [(total, 1, 1), (total, 1, total), (total, total, 1), (total, min(total, 2), total)]
    return out  # fmt: skip


def _commons_math(cases: list[tuple[int, int, int]], tmp) -> list[float]:
    (tmp / "HypergeometricOne.java").write_text(JAVA)
    done = subprocess.run(
        ["java", "-cp", str(JAR), str(tmp / "HypergeometricOne.java")],
        input="".join(f"{t} {k} {n}\n" for t, k, n in cases),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return np.array([int(x) for x in done.stdout.split()], dtype=np.int64).view(np.float64)


def test_pmf_is_commons_math(tmp_path):
    """Within 4e-15 of commons-math's value (numpy's log and exp against Java's FastMath: the
    last bit or two), its zeros outside the support and its NaN exact; bit for bit in most
    cases."""
    recorded = json.loads(RECORDED.read_text())
    cases = [tuple(c) for c in recorded["cases"]]
    assert cases == _cases(), "the cases changed: record again (see the file's 'how')"
    want = np.array(recorded["bits"], dtype=np.int64).view(np.float64)
    if JAR.is_file() and shutil.which("java"):  # ARX's own jar, live
        assert np.array_equal(_commons_math(cases, tmp_path), want, equal_nan=True)
    arr = np.array(cases)
    got = np.concatenate([probability_one(int(t), arr[arr[:, 0] == t, 1], arr[arr[:, 0] == t, 2])
                          for t in dict.fromkeys(arr[:, 0])])  # fmt: skip
    assert np.array_equal(got == 0, want == 0)
    assert np.array_equal(np.isnan(got), np.isnan(want))  # e.g. N = K, n = 1: 0 log(0 / 0)
    nz = (want != 0) & ~np.isnan(want)
    assert np.all(np.abs(got[nz] - want[nz]) <= 4e-15 * want[nz])
    assert np.mean(got == want) > 0.95


def _histogram(rng) -> np.ndarray:
    sizes = np.r_[np.ones(int(rng.integers(5, 400)), dtype=np.int64),
                  rng.geometric(float(rng.uniform(0.05, 0.6)), int(rng.integers(1, 600))) + 1]  # fmt: skip
    if rng.random() < 0.3:
        sizes = np.r_[sizes, rng.integers(100, 2000, 3)]
    return np.sort(sizes)


@pytest.mark.parametrize("seed", range(12))
def test_bounds_never_contradict_the_estimate(seed):
    """Every prefix the bounds decide has the estimate's verdict, thresholds placed at, just
    above and just below the estimates themselves (the hardest places), small and large
    populations."""
    rng = np.random.default_rng(seed)
    sizes = _histogram(rng)
    values, counts = np.unique(sizes, return_counts=True)
    ones = int(counts[0])
    for population in (sizes.sum() * 1.5, sizes.sum() * 10, 317_238_626.0, 5e9):
        prefixes = np.arange(ones)
        left = np.tile(counts, (ones, 1))
        left[:, 0] -= prefixes
        share = zayatz(Histograms(values, left, population)) / population
        decided, limits = (
            0,
            [*share[:: max(1, ones // 7)], *(share[:: max(1, ones // 5)] * (1 + 1e-12))],
        )
        for limit in limits:
            limit = float(np.nextafter(limit, 0)) if rng.random() < 0.5 else float(limit)
            verdict = decide(values, counts, population, prefixes, limit)
            truth = np.where((share > 0) & (share <= limit), HOLDS, FAILS)
            known = verdict != UNDECIDED
            assert np.array_equal(verdict[known], truth[known]), (population, limit)
            decided += int(known.sum())
        if population >= 1e8:  # a large population: the bounds decide nearly every prefix
            assert decided >= 0.9 * ones * len(limits)


@pytest.mark.parametrize("seed", range(6))
def test_zayatz_holds_as_its_estimate(seed):
    """The model's verdict on every candidate prefix (the bounds where they decide) is the
    estimate's on that prefix (after the prefix leaves no class of size 1: it holds)."""
    rng = np.random.default_rng(100 + seed)
    sizes = _histogram(rng)
    for population in (int(sizes.sum() * 2), 317_238_626):
        model = PopulationUniqueness(
            Fraction(1, 10**4), "zayatz", PopulationModel(population=population)
        )
        prefixes = np.arange(sizes.size + 1)
        ones = int(np.count_nonzero(sizes == 1))
        share = model.uniques(sizes, np.minimum(prefixes, ones - 1))
        for limit in (share[ones // 3], share[ones // 2], Fraction(1, 10**4)):
            model = PopulationUniqueness(
                Fraction(float(limit)), "zayatz", PopulationModel(population=population)
            )
            want = (prefixes >= ones) | ((share > 0) & (share <= float(limit)))
            assert np.array_equal(model.holds(sizes, prefixes), want)
