"""Entropy l-diversity with the Grassberger estimator, as ARX 3.9.2 computes it
(`org.deidentifier.arx.criteria.EntropyLDiversity`, `EntropyEstimator.GRASSBERGER`;
P. Grassberger, "Entropy estimates from insufficient samplings", arXiv:physics/0307138, 2003).

ARX replaces the logarithm of the Shannon estimate by Grassberger's G:
`H = G(n) - (1/n) sum_i n_i G(n_i)`, and a class passes when it has at least l distinct values
and `sum_i n_i G(n_i) <= n (G(n) - ln l)` (ARX's `isAnonymous`, in doubles). G is ARX's own:
for n <= 100 a table of G at even n (G(2j+1) = G(2j), G(1) its first entry, all as ARX
writes them); above 100, n made even, `ln n + m (1/24 - m (7/960 - m 31/8064))` with
`m = 1 / ((n/2) * (n/2))`, where ARX multiplies Java ints: the product wraps modulo 2^32 beyond
n = 92,681 (and is 0, m infinite, at every multiple of 131,072); we compute the same doubles.

One difference, on purpose (ADR 0043): ARX adds the terms in its hash table's bucket order and
returns false as soon as the partial sum exceeds the bound. G(1) < 0, so a later singleton
value could bring the sum back under it; we decide the whole sum, as the estimator defines it.
"""

from __future__ import annotations

import math

import numpy as np

from airflow_skald.core.privacy.distributions.class_values import ClassValues, Verdict

#: ARX's G_PRECOMPUTED: G(1), G(2), G(4), ..., G(100), digit for digit
_G_TABLE = np.array(
    [
        -1.2703628454614782, 0.7296371545385218, 1.3963038212051886, 1.7963038212051885,
        2.0820181069194743, 2.3042403291416966, 2.4860585109598783, 2.639904664806032,
        2.7732379981393653, 2.8908850569628948, 2.9961482148576315, 3.091386310095727,
        3.178342831834857, 3.2583428318348573, 3.3324169059089312, 3.4013824231503107,
        3.4658985521825687, 3.5265046127886293, 3.5836474699314866, 3.6377015239855406,
        3.6889835752675917, 3.7377640630724698, 3.7842756909794466, 3.8287201354238913,
        3.871273326913253, 3.912089653443865, 3.951305339718375, 3.9890411887749786,
        4.025404825138615, 4.060492544436861, 4.094390849521607, 4.127177734767508,
        4.1589237665135395, 4.18969299728277, 4.219543743551427, 4.248529250797804,
        4.276698264882311, 4.304095525156284, 4.33076219182295, 4.356736217796977,
        4.382052673493179, 4.40674403151787, 4.430840417060039, 4.454369828824745,
        4.477358334571871, 4.49983024468423, 4.521808266662253, 4.543313643006339,
        4.564366274585286, 4.5849848312863175, 4.605186851488337,
    ]
)  # fmt: skip
_S1, _S2, _S3 = 1.0 / 24, 7.0 / 960, 31.0 / 8064
ESTIMATORS = ("shannon", "grassberger")


def grassberger_g(n: np.ndarray) -> np.ndarray:
    """ARX's G(n) for counts n >= 1 (int64), element-wise, the doubles ARX computes."""
    n = np.asarray(n, dtype=np.int64)
    even = n - n % 2
    out = np.empty(n.shape, dtype=np.float64)
    small = n <= 100
    out[small] = _G_TABLE[even[small] // 2]
    big = even[~small]
    half = (big // 2).astype(np.uint64)
    square = (half * half).astype(np.uint32).astype(np.int32)  # Java's int product
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = 1.0 / square.astype(np.float64)
        out[~small] = np.log(big.astype(np.float64)) + m * (_S1 - m * (_S2 - m * _S3))
    return out


def entropy_l_grassberger(cv: ClassValues, ell: int) -> Verdict:
    """Grassberger entropy l-diversity of every class at once. Figure: exp of the class's
    Grassberger entropy estimate (its "effective number of values"; nan for an empty class)."""
    n = cv.sizes()
    m = cv.distinct()
    c = cv.count.astype(np.int64)
    s = cv.class_sum(c.astype(np.float64) * grassberger_g(c))  # sum n_i G(n_i)
    g_n = grassberger_g(np.maximum(n, 1))
    nf = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bound = nf * (g_n - math.log(ell))
        figure = np.where(n > 0, np.exp(g_n - s / nf), np.nan)
    ok = (n > 0) & (m >= math.ceil(ell)) & ~(bound < s)
    return Verdict(ok, figure)
