"""The lattice search equals a brute-force search on many generated lattices (issue 13).

Generated predicates are monotone (up-sets) with, optionally, a non-monotone full predicate on
top; losses are bounded from below by a monotone bound, with many ties. The reference scores
every node and picks the least (loss, precision, priority levels) exactly as docs/design.md §4 says.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_skald.core.lattice import (
    HIGHEST_FIRST,
    HIGHEST_FIRST_CLIMBING,
    LOWEST_FIRST,
    MONOTONE,
    PARTLY_MONOTONE,
    Lattice,
    best_by_precision,
    fitting_nodes,
    search_optimal,
    static_rank,
)


def _tie_key(node: tuple[int, ...], tops, priority) -> tuple:
    cost = sum((Fraction(lv, t) for lv, t in zip(node, tops, strict=True) if t), Fraction(0))
    return (cost, tuple(node[p] for p in priority))


def _up_closure(lattice: Lattice, values: np.ndarray, op) -> np.ndarray:
    """values[i] combined (op: max / or) over every node below i: a monotone array."""
    out = values.reshape(lattice.shape).copy()
    for axis in range(out.ndim):
        op.accumulate(out, axis=axis, out=out)
    return out.reshape(-1)


@st.composite
def problems(draw):
    d = draw(st.integers(1, 5))
    tops = tuple(draw(st.lists(st.integers(0, 4), min_size=d, max_size=d)))
    lower = tuple(draw(st.integers(0, t)) for t in tops)
    lattice = Lattice(lower, tops)
    n = len(lattice)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # a monotone pass predicate: the up-closure of a few random generators (maybe none)
    gens = np.zeros(n, dtype=bool)
    gens[rng.integers(0, n, draw(st.integers(0, 4)))] = True
    mono = _up_closure(lattice, gens, np.logical_or)
    scale = draw(st.sampled_from([1, 3, 10**6, 2**70]))  # 2**70: bounds beyond int64
    base = rng.integers(0, 6, n).astype(object)  # exact Python ints, also beyond int64
    bound = _up_closure(lattice, base * scale, np.maximum)
    loss = bound + rng.integers(0, 4, n).astype(object) * scale  # >= any bound below it
    if draw(st.booleans()):  # a non-monotone part of the predicate (entropy-l, t-closeness...)
        full = mono & (rng.random(n) < draw(st.sampled_from([0.3, 0.7, 1.0])))
        all_monotone = False
    else:
        full, all_monotone = mono, True
    priority = draw(st.permutations(list(range(d))))
    no_bound = draw(st.booleans()) and draw(st.booleans())
    return lattice, tops, list(priority), mono, full, loss, bound, all_monotone, no_bound


@settings(max_examples=400, deadline=None)
@given(problems())
def test_search_equals_brute_force(problem):
    lattice, tops, priority, mono, full, loss, bound, all_monotone, no_bound = problem
    calls = []

    def evaluate(i: int, best_loss=None):
        calls.append(i)
        b = None if no_bound else int(bound[i])
        return bool(mono[i]), bool(full[i]), int(loss[i]), b

    predicate = MONOTONE if all_monotone else PARTLY_MONOTONE
    out = search_optimal(lattice, evaluate, tops, priority, predicate=predicate)
    passing = [i for i in range(len(lattice)) if full[i]]
    if not passing:
        assert out.best is None
    else:
        expected = min(
            passing,
            key=lambda i: (int(loss[i]), _tie_key(lattice.node(i), tops, priority)),
        )
        assert out.best == expected
    assert len(calls) == len(set(calls)) == out.evaluated  # no node evaluated twice
    assert out.passing <= len(passing) or all_monotone
    assert out.evaluated + out.pruned <= len(lattice)


@settings(max_examples=200, deadline=None)
@given(
    problems(),
    st.integers(0, 2**32 - 1),
    st.sampled_from([None, LOWEST_FIRST, HIGHEST_FIRST, HIGHEST_FIRST_CLIMBING]),
)
def test_search_orders_with_node_bounds_equal_brute_force(problem, seed, order):
    """Per-node bounds known in advance (node-only quality models) with every search order:
    lowest first, highest alive first, and climbing to failing nodes first (`climb_fails`);
    the answer is the brute force's and no node is evaluated twice."""
    lattice, tops, priority, mono, full, loss, bound, all_monotone, no_bound = problem
    rng = np.random.default_rng(seed)
    scale = max(1, max(int(x) for x in loss) // 8)
    below = rng.integers(0, 3, len(loss))
    node_bounds = np.asarray(
        [max(0, int(x) - int(r) * scale) for x, r in zip(loss, below, strict=True)], dtype=object
    )
    node_bounds = node_bounds.astype(np.int64 if scale < 2**40 else np.float64)
    if node_bounds.dtype == np.float64:  # floats never above the exact bound
        node_bounds = node_bounds - np.abs(node_bounds) * 1e-9
    calls = []

    def evaluate(i: int, best_loss=None):
        calls.append(i)
        b = None if no_bound else int(bound[i])
        return bool(mono[i]), bool(full[i]), int(loss[i]), b

    out = search_optimal(
        lattice,
        evaluate,
        tops,
        priority,
        predicate=MONOTONE if all_monotone else PARTLY_MONOTONE,
        node_bounds=node_bounds,
        order=order,
    )
    passing = [i for i in range(len(lattice)) if full[i]]
    if not passing:
        assert out.best is None
    else:
        key = lambda i: (int(loss[i]), _tie_key(lattice.node(i), tops, priority))  # noqa: E731
        assert out.best == min(passing, key=key)
    assert len(calls) == len(set(calls)) == out.evaluated


def test_search_prunes_by_bound_and_tags():
    """Most of a large lattice is never evaluated when bounds and tags decide it."""
    lattice = Lattice((0,) * 6, (4, 3, 4, 2, 5, 3))
    heights = lattice.heights
    rng = np.random.default_rng(7)
    bound = _up_closure(lattice, rng.integers(0, 5, len(lattice)), np.maximum) + heights * 10
    loss = bound + rng.integers(0, 15, len(lattice))
    mono = heights >= 3

    def evaluate(i: int, best_loss=None):
        return bool(mono[i]), bool(mono[i]), int(loss[i]), int(bound[i])

    out = search_optimal(lattice, evaluate, (4, 3, 4, 2, 5, 3), list(range(6)))
    passing = np.flatnonzero(mono)
    tie = [(int(loss[i]), _tie_key(lattice.node(i), (4, 3, 4, 2, 5, 3), range(6))) for i in passing]
    assert out.best == passing[min(range(len(tie)), key=tie.__getitem__)]
    assert out.evaluated < len(lattice) // 10, out.evaluated


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 50), min_size=1, max_size=5), min_size=1, max_size=5),
    st.integers(1, 10**6),
    st.data(),
)
def test_root_choice_matches_brute_force(cards, limit, data):
    """The RAM root: complying nodes by exact products, best precision, ties by priority."""
    cards = [sorted(c, reverse=True) for c in cards]  # coarser levels have fewer bins
    tops = [len(c) - 1 for c in cards]
    lattice = Lattice((0,) * len(cards), tuple(tops))
    priority = data.draw(st.permutations(list(range(len(cards)))))
    fits = fitting_nodes(lattice, cards, limit)
    nodes = list(itertools.product(*[range(len(c)) for c in cards]))
    expected_fits = [
        math.prod(c[lv] for c, lv in zip(cards, nd, strict=True)) <= limit for nd in nodes
    ]
    assert fits.tolist() == expected_fits
    root = best_by_precision(lattice, np.flatnonzero(fits), tops, priority)
    complying = [nd for nd, ok in zip(nodes, expected_fits, strict=True) if ok]
    if not complying:
        assert root is None
    else:
        assert lattice.node(root) == min(complying, key=lambda nd: _tie_key(nd, tops, priority))
    rank = static_rank(lattice, tops, priority)
    order = sorted(range(len(nodes)), key=lambda i: _tie_key(nodes[i], tops, priority))
    assert rank[order].tolist() == list(range(len(nodes)))


def test_fitting_nodes_exact_at_the_limit():
    """Products near 2^60 are decided exactly, not by float rounding."""
    big = 2**30 + 1
    lattice = Lattice((0, 0), (1, 1))
    cards = [[big, 1], [big, 1]]
    assert fitting_nodes(lattice, cards, big * big).tolist() == [True, True, True, True]
    assert fitting_nodes(lattice, cards, big * big - 1).tolist() == [False, True, True, True]


def test_lattice_slices_match_masks():
    lattice = Lattice((1, 0, 2), (3, 2, 4))
    nodes = lattice.nodes
    for i in range(len(lattice)):
        assert lattice.node(i) == tuple(int(x) for x in nodes[i])
        assert lattice.index(lattice.node(i)) == i
        assert lattice.above(i).tolist() == np.all(nodes >= nodes[i], axis=1).tolist()
        assert lattice.below(i).tolist() == np.all(nodes <= nodes[i], axis=1).tolist()
        succ = [
            j
            for j in range(len(lattice))
            if (nodes[j] - nodes[i]).sum() == 1 and (nodes[j] >= nodes[i]).all()
        ]
        assert sorted(lattice.successors(i)) == succ
    assert lattice.heights.tolist() == nodes.sum(axis=1).tolist()
