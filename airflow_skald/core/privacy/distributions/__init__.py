"""l-diversity and t-closeness over per-class distributions of one sensitive attribute (docs/design.md §4b).

Pure numpy, no I/O. A node's classes and the counts of the sensitive attribute's values in each
class are held sparsely as a `ClassValues` (one row per non-empty (class, value) pair, rows in
(class, value) order, the form `histogram.grouped` returns for a key `class * m + value`).
Each criterion returns a `Verdict`: a bool mask of the classes that satisfy it and a figure per
class (distinct count, entropy l, recursive ratio, distance).

Exactness: every decision is exact, as docs/design.md §4b asks (ARX decides in doubles and can differ on
exact ties; we do not). Each criterion is evaluated for all classes at once in float64, with an
error bound per class that is well above float64's worst case; the few classes whose float
figure lies within that bound of the threshold are decided again exactly: t-closeness by the
same vectorised formulas over Python ints (numpy object arrays), entropy l by integer or
adaptive-precision arithmetic (`entropy_passes_exact`, one Python call per such class), the
others in int64 or Python ints directly. Products such as `N * n` reach 1e18 at 1e9 records,
so nothing exact is computed in int64 unless it provably fits.

Semantics follow ARX's criteria classes (DistinctLDiversity, EntropyLDiversity,
RecursiveCLDiversity, EqualDistanceTCloseness, OrderedDistanceTCloseness,
HierarchicalDistanceTCloseness), with two deliberate differences: ties are decided exactly, and
every product is exact where ARX multiplies Java ints (its hierarchical EMD computes
`count * total` in 32-bit ints, which overflows beyond ~46 thousand records squared).
"""

from airflow_skald.core.privacy.distributions.class_values import (
    FLOOR_MARGIN,
    WORST_IS_SMALLEST,
    ClassValues,
    Verdict,
    most_at_risk,
    suppression_floor,
    worst_figure,
)
from airflow_skald.core.privacy.distributions.closeness import (
    EmdHierarchy,
    t_equal,
    t_hierarchical,
    t_ordered,
)
from airflow_skald.core.privacy.distributions.diversity import (
    distinct_l,
    entropy_l,
    entropy_l_is,
    entropy_passes_exact,
    factor,
    recursive_cl,
)

__all__ = [
    "FLOOR_MARGIN",
    "WORST_IS_SMALLEST",
    "ClassValues",
    "EmdHierarchy",
    "Verdict",
    "distinct_l",
    "entropy_l",
    "entropy_l_is",
    "entropy_passes_exact",
    "factor",
    "most_at_risk",
    "recursive_cl",
    "suppression_floor",
    "t_equal",
    "t_hierarchical",
    "t_ordered",
    "worst_figure",
]
