"""SafePub's score functions (ARX's ``getScore``) on a hand-made node: 2 QIDs, N = 20 input
records of which n = 16 were sampled, k = 3."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np

from airflow_skald.core.search.safepub.scores import NodeClasses, predecessors, scorer

# classes at node (1, 2): keys = code0 * 3 + code1; sizes 6, 5, 2 (suppressed: < k), 3
KEYS = np.array([0, 4, 5, 7])
SIZES = np.array([6, 5, 2, 3])
KEPT = SIZES >= 3
NODE = (1, 2)


class FakeContext(SimpleNamespace):
    def codes(self, keys, node):
        return [keys // 3, keys % 3]

    def shares(self, i):
        # domain of 4 units; per level, the share numerator of each label
        return 4, [np.array([1, 1, 1, 1]), np.array([2, 1, 1]), np.array([4, 2, 4])]


CTX = FakeContext(dims=[SimpleNamespace(top=2), SimpleNamespace(top=2)])
C = NodeClasses(NODE, SIZES, KEPT, KEYS, n_input=20, n_sampled=16)


def test_dm() -> None:
    kept, n = 14, 20
    expected = -Fraction(n * (n - kept) + 36 + 25 + 9, n * (Fraction(9, 2) + 1))
    assert scorer("dm", CTX, 3)(C) == expected


def test_precision() -> None:
    kept, n = 14, 20
    expected = -(Fraction(kept * 1, 2) + (n - kept) + Fraction(kept * 2, 2) + (n - kept)) / 2 / 2
    assert scorer("precision", CTX, 3)(C) == expected


def test_aecs() -> None:
    assert scorer("aecs", CTX, 3)(C) == 3 + 1
    all_kept = NodeClasses(NODE, SIZES, np.ones(4, bool), KEYS, 16, 16)
    assert scorer("aecs", CTX, 3)(all_kept) == 4


def test_loss() -> None:
    # kept classes: codes (0,0) size 6, (1,1) size 5, (2,1) size 3; QID 0 at level 1, QID 1 at 2
    q0 = Fraction(6 * 2 + 5 * 1 + 3 * 1, 4)
    q1 = Fraction(6 * 4 + 5 * 2 + 3 * 2, 4)
    expected = -(q0 + q1 + 2 * (20 - 14)) / 2 / 2
    assert scorer("loss", CTX, 3)(C) == expected


def test_nu_entropy() -> None:
    # QID 0 (level 1 < top): kept per label 6, 5, 3; QID 1 at its top: every record suppressed
    q0 = 36 + 25 + 9 + 20 * (20 - 14)
    q1 = 20 * 20
    expected = -Fraction(q0 + q1, 20 * 2) / (Fraction(9, 2) + 1)
    assert scorer("nu_entropy", CTX, 3)(C) == expected


def test_predecessors_stop_at_the_root() -> None:
    assert predecessors((1, 2), (0, 0)) == [(0, 2), (1, 1)]
    assert predecessors((1, 2), (1, 2)) == []
