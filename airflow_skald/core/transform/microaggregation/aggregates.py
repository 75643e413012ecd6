"""Microaggregation (Domingo-Ferrer and Mateo-Sanz 2002; docs/design.md §4f): a QID released as an
aggregate of its original values over the record's class instead of a generalised label, as ARX's
`MicroAggregationFunction` (`DistributionAggregateFunction`) computes it.

Where the values come from (ADR 0022): phase 2 counts the attribute's values per root bin,
as it counts a sensitive attribute's for l-diversity (a (class, value) histogram, exactly
additive over chunks and rolled up the root chain with the class counts). After the search the
table is rolled up to the chosen node (`class_source.ClassSource`), which gives every class's
value histogram, so every function is exact and no pass over the data is added: phase 3 looks
each record's class key up in the per-class labels (`Aggregates`). An integer mean is counted
as an exact sum per class bin instead (`encode.class_sums`, `class_means`): no value axis, so
the root and the search are the k-only run's.

ARX's definitions, over the class's non-null values (ARX's `create...()` functions ignore
missing values; a class of nulls only gets ARX's `NULL`):

* `mean`: commons-math's two-pass mean, `x̄ + Σ(x - x̄) / n` with `x̄ = Σx / n`;
* `geometric_mean`: `exp(Σ ln(x + 1) / n) - 1`;
* `median`: the value at 0-based rank `n // 2` of the sorted values when `n` is odd, else the
  mean of ranks `n/2 - 1` and `n/2`;
* `mode`: the most frequent value (ARX breaks a tie by its hash table's bucket order, which
  depends on its dictionary codes and on the order rows were added; here: the smallest value);
* `interval`: `[min, max]`.

An integer QID (every value a whole number: ARX's INTEGER) rounds the mean, the geometric mean
and an even median with Java's `Math.round` (half up); a decimal QID keeps the double, written
as Java's `Double.toString` writes it (ARX's DECIMAL format).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.data.hierarchies import TOP_LABEL as TOP
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.settings.microaggregation import QidMicroaggregation
from airflow_skald.core.transform.encoded import EncodedPlan
from airflow_skald.core.transform.microaggregation.values import ValueDomain

LOOKUP_LIMIT = 1 << 24  # class keys below this are looked up in a table (<= 64 MiB of int32)
NULL = "NULL"  # ARX's DataType.NULL_VALUE: the aggregate of a class of nulls only


# ---------------------------------------------------------------- numbers as ARX writes them
def java_round(x: np.ndarray) -> np.ndarray:
    """Java's `Math.round(double)`: floor(x + 1/2) computed exactly (half up, -2.5 -> -2)."""
    f = np.floor(x)
    return f + ((x - f) >= 0.5)


def java_double_text(x: float) -> str:
    """Java's `Double.toString`: shortest digits; plain between 1e-3 and 1e7, else
    computerised scientific notation (`1.0E7`, `1.5E-4`)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    sign = "-" if x < 0 else ""
    if 1e-3 <= a < 1e7:
        return sign + repr(a)  # plain in this range, with ".0" for a whole number
    mantissa, exponent = _shortest_scientific(a)
    return f"{sign}{mantissa}E{exponent}"


def _shortest_scientific(a: float) -> tuple[str, int]:
    """The fewest significant digits (d.ddd, at least one decimal) that read back as `a`."""
    for places in range(1, 17):
        text = f"{a:.{places}e}"
        if float(text) == a:
            break
    mantissa, exponent = text.split("e")
    whole, _, decimals = mantissa.partition(".")
    return f"{whole}.{decimals.rstrip('0') or '0'}", int(exponent)


def number_text(x: float, integer: bool) -> str:
    """A released number: an integer QID's as a whole number (already rounded), a decimal
    QID's as Java writes a double."""
    if integer:
        return str(int(x))
    return java_double_text(float(x))


# ---------------------------------------------------------------- one attribute's values
def aggregate_labels(
    function: str, classes: ClassValues, domain: ValueDomain
) -> tuple[np.ndarray, list[str]]:
    """Each class's released value: (label index per class (int32), the distinct labels)."""
    numbers = domain.numbers[classes.value]
    known = ~np.isnan(numbers)
    cls, x, w = classes.cls[known], numbers[known], classes.count[known]
    n_classes = classes.n_classes
    present = np.zeros(n_classes, dtype=bool)
    present[cls] = True
    starts = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]]) if cls.size else cls
    owners = cls[starts]
    if function == "interval":
        ends = np.r_[starts[1:], cls.size] - 1
        pairs = np.stack([x[starts], x[ends]], axis=1) if owners.size else np.zeros((0, 2))
        uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
        labels = [
            f"[{number_text(a, domain.integer)}, {number_text(b, domain.integer)}]"
            for a, b in uniq.tolist()
        ]
    else:
        result = _FUNCTIONS[function](x, w, starts)
        if domain.integer and function in ("mean", "geometric_mean", "median"):
            result = java_round(result)
        uniq, inv = np.unique(result, return_inverse=True)
        labels = [number_text(v, domain.integer) for v in uniq.tolist()]
    index = np.full(n_classes, len(labels), dtype=np.int32)
    index[owners] = inv.reshape(-1).astype(np.int32)
    if not present.all():
        labels.append(NULL)
    return index, labels


def _sizes(w: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(w, starts).astype(np.float64) if starts.size else np.zeros(0)


def _mean(x: np.ndarray, w: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if not starts.size:
        return np.zeros(0)
    n = _sizes(w, starts)
    xbar = np.add.reduceat(x * w, starts) / n
    correction = np.add.reduceat((x - xbar[_run_class(x, starts)]) * w, starts)
    return xbar + correction / n


def _run_class(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each run's class position (0 .. len(starts) - 1)."""
    mask = np.zeros(x.size, dtype=np.int64)
    mask[starts[1:]] = 1
    return np.cumsum(mask)


def _geometric_mean(x: np.ndarray, w: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if not starts.size:
        return np.zeros(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.exp(np.add.reduceat(np.log(x + 1.0) * w, starts) / _sizes(w, starts)) - 1.0


def _median(x: np.ndarray, w: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if not starts.size:
        return np.zeros(0)
    cum = np.cumsum(w)  # runs are in (class, value) order: positions over all classes
    n = np.add.reduceat(w, starts)
    before = cum[starts] - w[starts]  # records of earlier classes
    upper = np.searchsorted(cum, before + n // 2, side="right")
    lower = np.searchsorted(cum, before + (n - 1) // 2, side="right")
    return np.where(n % 2 == 1, x[upper], (x[lower] + x[upper]) / 2.0)


def _mode(x: np.ndarray, w: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if not starts.size:
        return np.zeros(0)
    top = np.maximum.reduceat(w, starts)
    run_class = _run_class(x, starts)
    best = np.flatnonzero(w == top[run_class])  # ascending: the smallest value first
    first = np.unique(run_class[best], return_index=True)[1]
    return x[best[first]]


_FUNCTIONS = {
    "mean": _mean,
    "geometric_mean": _geometric_mean,
    "median": _median,
    "mode": _mode,
}


# ---------------------------------------------------------------- per-class labels, phase 3
@dataclass
class Aggregates:
    """One microaggregated attribute at the chosen node: the class keys (sorted int64, over
    the lattice's QIDs at the node), each class's label index, and the distinct labels. Holds
    values derived from personal data: artifact storage only, never XCom or manifests."""

    name: str
    keys: np.ndarray
    index: np.ndarray
    labels: list[str]

    def labels_of(self, keys: np.ndarray) -> np.ndarray:
        """Each record's label index given its class key at the node (every key is a class
        the counts saw: phase 3 reads the records phase 2 counted)."""
        lut = self._lookup_table()
        if lut is not None:  # a gather beats a binary search per record
            out = lut[keys]
            if out.size and int(out.min()) < 0:
                raise ValueError(f"a record of '{self.name}' is in a class phase 2 did not count")
            return out
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, max(self.keys.size - 1, 0))
        if keys.size and not np.array_equal(self.keys[pos], keys):
            raise ValueError(f"a record of '{self.name}' is in a class phase 2 did not count")
        return self.index[pos]

    def _lookup_table(self) -> np.ndarray | None:
        """Label index by class key, -1 for no class (keys below LOOKUP_LIMIT only); built
        once per pass (every chunk uses the same aggregates)."""
        if not self.keys.size or int(self.keys[-1]) >= LOOKUP_LIMIT:
            return None
        lut = self.__dict__.get("_lut")
        if lut is None:
            lut = np.full(int(self.keys[-1]) + 1, -1, dtype=np.int32)
            lut[self.keys] = self.index
            self.__dict__["_lut"] = lut
        return lut


def aggregates_to_bytes(items: Sequence[Aggregates]) -> bytes:
    buf = io.BytesIO()
    arrays = {}
    for i, a in enumerate(items):
        arrays[f"keys{i}"] = a.keys
        arrays[f"index{i}"] = a.index
        arrays[f"labels{i}"] = np.asarray(a.labels, dtype=np.str_)
        arrays[f"name{i}"] = np.asarray(a.name, dtype=np.str_)
    np.savez(buf, n=np.asarray(len(items)), **arrays)
    return buf.getvalue()


def aggregates_from_bytes(data: bytes) -> list[Aggregates]:
    z = np.load(io.BytesIO(data))
    return [
        Aggregates(
            str(z[f"name{i}"]),
            z[f"keys{i}"].astype(np.int64),
            z[f"index{i}"].astype(np.int32),
            [str(s) for s in z[f"labels{i}"].tolist()],
        )
        for i in range(int(z["n"]))
    ]


# ---------------------------------------------------------------- at the chosen node
def aggregates_at(
    plan: EncodedPlan,
    keys: np.ndarray,
    table: ClassTable,
    functions: Mapping[str, QidMicroaggregation],
) -> list[Aggregates]:
    """Each microaggregated attribute's labels per class of the chosen node: `keys` and `table`
    are the node's classes with the (class, value) tables of the attributes in `functions`
    (`ClassSource.keyed`, rolled up from phase 2's counts), `plan` the counts' plan."""
    out = []
    for name in functions:
        domain = ValueDomain.of_stats(plan.stats.sensitive[name])
        index, labels = aggregate_labels(functions[name].function, table.values[name], domain)
        out.append(Aggregates(name, keys, index, labels))
    return out


def class_means(
    name: str, keys: np.ndarray, sizes: np.ndarray, sums: Histogram, smallest: int
) -> Aggregates:
    """The labels of a QID counted as sums (`encode.class_sums`: an integer mean, no nulls)
    per class of the chosen node: `keys` and `sizes` the node's classes, `sums` the value
    offsets (value - `smallest`) summed per class at the node (a class summing to 0 may be
    absent). Exact: smallest + floor((2S + n) / 2n) rounds S/n half up as Java's `Math.round`
    does, and ARX's double mean is the same number (its error is far below the 1/(2n) that
    separates a mean of n whole numbers from a half)."""
    total = np.zeros(keys.size, dtype=np.int64)
    if sums.n_bins:
        total[np.searchsorted(keys, sums.keys)] = sums.counts
    n = np.asarray(sizes, dtype=np.int64)
    means = (2 * total + n) // (2 * n) + smallest
    uniq, inv = np.unique(means, return_inverse=True)
    labels = [str(int(v)) for v in uniq.tolist()]
    return Aggregates(name, keys, inv.reshape(-1).astype(np.int32), labels)


def release_column(aggregates: Aggregates, keys: np.ndarray, masked: np.ndarray) -> pa.Array:
    """The released column of one chunk: each record's class label (dictionary-encoded, only
    the labels its rows use), `*` in masked (suppressed) rows."""
    index = aggregates.labels_of(keys)
    labels = np.asarray([*aggregates.labels, TOP], dtype=object)
    if masked.size:
        index = index.copy()
        index[masked] = len(aggregates.labels)
    used = np.flatnonzero(np.bincount(index, minlength=labels.size))  # O(rows + labels)
    remap = np.zeros(labels.size, dtype=np.int32)
    remap[used] = np.arange(used.size, dtype=np.int32)
    return pa.DictionaryArray.from_arrays(
        pa.array(remap[index], pa.int32()), pa.array(labels[used].tolist(), pa.string())
    )
