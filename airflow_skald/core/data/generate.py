"""Synthetic medical dataset of the SKALD paper (SPEC section 8), written as chunk files.

The paper evaluates SKALD on 125 chunks of 1M synthetic patient records; this module rebuilds
that dataset so the experiments can be rerun at any size without faker or a per-row Python loop:
every column is drawn with numpy and its strings are taken from pools or built as raw bytes.

Reproducibility is the main design constraint. Random numbers come from independent streams
keyed by ``(seed, block, column)`` where a block is a fixed run of ``_BLOCK_ROWS`` consecutive
rows (``SeedSequence(seed, spawn_key=(block, stream))``, i.e. the child ``[block][stream]`` of
``SeedSequence(seed).spawn``). Hence a row's content depends only on the seed and its global row
number: the same rows come out whatever ``chunk_rows`` is (so "one input cut into different
chunks" can be tested directly), a smaller dataset is a prefix of a larger one, and each chunk is
generated and written alone, with memory bounded by one chunk.

So that the QID domains (and thus the lattice) do not depend on the sample, a few fixed rows are
forced: age 19 and 85 and BMI 12.0 and 36.0 occur within the first 1000 rows, and each of the
1347 PIN codes occurs once within the first 100 000 rows (1.35 % of those rows; a negligible
share at the paper's scale). All other values follow the distributions documented by the
constants below.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import yaml

from airflow_skald.core.data.clinical import clinical_config_dict, clinical_table, dataset_io
from airflow_skald.core.errors import DataError

__all__ = [
    "BLOOD_GROUP_HIERARCHY",
    "COLUMNS",
    "HEALTH_CONDITIONS",
    "HEALTH_CONDITION_HIERARCHY",
    "PROFESSION_HIERARCHY",
    "chunk_table",
    "example_criteria",
    "generate_dataset",
    "paper_config_dict",
    "pin_code_pool",
]

COLUMNS: tuple[str, ...] = (
    "patient_id",
    "name",
    "address",
    "blood_group",
    "profession",
    "age",
    "bmi",
    "pin_code",
    "health_condition",
)

#: Rows per random-number block. Part of the data definition: changing it changes the data.
_BLOCK_ROWS = 1 << 16
#: Fixed seed of the PIN-code pool, so the pool (hence the encoded domain) never varies.
_PIN_POOL_SEED = 560_001
#: Year the patient ids' birth year-month is counted back from (the paper's sample is 2024).
_REFERENCE_YEAR = 2024

# Random stream ids, one per drawn quantity (never reuse or renumber: that changes the data).
_S_FIRST, _S_LAST, _S_HOUSE_KIND, _S_HOUSE_A, _S_HOUSE_B, _S_HOUSE_C = 0, 1, 2, 3, 4, 5
_S_STREET, _S_STREET_KIND, _S_BLOOD, _S_PROFESSION, _S_AGE, _S_BMI = 6, 7, 8, 9, 10, 11
_S_PIN, _S_CONDITION, _S_BIRTH_MONTH, _S_VISIT = 12, 13, 14, 15

# Blood groups with India-like ABO/Rh frequencies (O+ and B+ about a third each).
_BLOOD_FREQ: dict[str, float] = {
    "A+": 0.220,
    "A-": 0.013,
    "B+": 0.320,
    "B-": 0.020,
    "AB+": 0.080,
    "AB-": 0.007,
    "O+": 0.320,
    "O-": 0.020,
}
BLOOD_GROUP_HIERARCHY: dict[str, list[str]] = {bg: [bg.rstrip("+-")] for bg in _BLOOD_FREQ}

# Profession -> (domain, sector) and relative frequency: tech-heavy city, many teachers/nurses.
_PROFESSIONS: dict[str, tuple[str, str, float]] = {
    "Doctor": ("Healthcare", "Service", 5.0),
    "Nurse": ("Healthcare", "Service", 8.0),
    "Pharmacist": ("Healthcare", "Service", 4.0),
    "Lab Technician": ("Healthcare", "Service", 3.0),
    "School Teacher": ("Education", "Service", 10.0),
    "Professor": ("Education", "Service", 3.0),
    "Librarian": ("Education", "Service", 1.5),
    "Education Counsellor": ("Education", "Service", 2.0),
    "Graphic Designer": ("Creative", "Non-Service", 4.0),
    "Writer": ("Creative", "Non-Service", 2.5),
    "Musician": ("Creative", "Non-Service", 2.0),
    "Mixed Media Artist": ("Creative", "Non-Service", 1.0),
    "Software Engineer": ("Engineering", "Non-Service", 16.0),
    "Data Scientist": ("Engineering", "Non-Service", 5.0),
    "Project Manager": ("Engineering", "Non-Service", 7.0),
    "Product Manager": ("Engineering", "Non-Service", 4.0),
}
PROFESSION_HIERARCHY: dict[str, list[str]] = {
    p: [domain, sector] for p, (domain, sector, _) in _PROFESSIONS.items()
}

# Adult age pyramid: flat to 30, then thinning out; piecewise linear through these knots.
_AGE_MIN, _AGE_MAX = 19, 85
_AGE_KNOTS_X = (19, 30, 40, 50, 60, 70, 80, 85)
_AGE_KNOTS_Y = (1.0, 1.0, 0.9, 0.75, 0.55, 0.32, 0.12, 0.05)

# BMI in tenths (120..360 = 12.0..36.0): log-normal shape (right-skewed), median 24.2.
_BMI_MIN_T, _BMI_MAX_T = 120, 360
_BMI_MEDIAN, _BMI_SIGMA = 24.2, 0.16

# Health condition (the sensitive attribute): one primary chronic condition per patient (or
# none), 30 values whose prevalence depends on age and BMI. Each entry gives the weight per 100
# patients of age 20, 30, .., 80 (linear in between, flat beyond; empirical-looking, loosely
# after Indian prevalence surveys) and the factors for the BMI bands <18.5, 18.5-25, 25-30 and
# >=30 (diabetes, hypertension, gout rise with BMI; tuberculosis, anaemia, osteoporosis are
# commoner in the underweight). Over the age pyramid ~43 % have no chronic condition (62 % of
# the under-30s, 14 % of the over-60s), hypertension ~10 % and diabetes ~6 % follow, and the
# shares fall off Zipf-like to ten conditions rarer than 0.6 %, five of them rarer than 0.3 %.
# Hypertension, diabetes, arthritis, cataract, dementia rise with age; allergies, asthma,
# eczema, migraine, anxiety are commoner young. So the small classes of fine generalisations
# hold one or two distinct conditions and young classes are dominated by one value: l-diversity
# has something to refuse. Order: most frequent first. (Never reorder or retune without
# meaning to: the table is part of the data definition, like the random streams.)
_CONDITION_AGES = (20, 30, 40, 50, 60, 70, 80)
_BMI_BAND_EDGES_T = (185, 250, 300)  # BMI in tenths: <18.5, 18.5-24.9, 25-29.9, >=30
_CONDITIONS: dict[str, tuple[tuple[float, ...], tuple[float, float, float, float]]] = {
    "No Chronic Condition": ((80, 66, 50, 33, 20, 12, 8), (0.9, 1.15, 0.9, 0.6)),
    "Hypertension": ((1.2, 3.5, 9, 16, 21, 23, 22), (0.6, 0.8, 1.2, 1.8)),
    "Diabetes": ((0.6, 2, 6, 11, 14, 14, 12), (0.5, 0.7, 1.2, 2.2)),
    "Allergic Rhinitis": ((9, 8, 6, 4, 2.5, 1.5, 1), (1, 1, 1, 1)),
    "Asthma": ((7, 5.5, 4.5, 4, 3.5, 3.5, 3), (0.9, 0.9, 1.1, 1.4)),
    "GERD": ((2.5, 3.5, 4, 4, 3.5, 3, 2.5), (0.8, 0.9, 1.1, 1.4)),
    "Anxiety": ((5, 4.5, 3.5, 2.5, 1.5, 1, 0.8), (1.2, 1, 1, 1)),
    "Hypothyroidism": ((1.2, 2.5, 3.5, 3.5, 3, 2.5, 2), (0.9, 1, 1.1, 1.2)),
    "Hyperlipidaemia": ((0.3, 1.2, 3, 4.5, 4.5, 4, 3), (0.5, 0.8, 1.2, 1.6)),
    "Arthritis": ((0.1, 0.3, 1.2, 3, 6, 9, 11), (0.7, 0.8, 1.1, 1.6)),
    "Migraine": ((3.5, 4, 3.5, 2, 1, 0.5, 0.3), (1, 1, 1, 1)),
    "Anaemia": ((3.5, 3, 2.5, 2, 1.8, 2, 2.5), (2, 1, 0.9, 0.8)),
    "Depression": ((2.5, 2.5, 2.3, 2, 1.8, 1.8, 2.2), (1.2, 1, 1, 1.2)),
    "Chronic Back Pain": ((0.8, 1.6, 2.4, 2.8, 2.8, 2.4, 2), (1, 0.9, 1.1, 1.3)),
    "Coronary Artery Disease": ((0.02, 0.1, 0.5, 1.6, 3.5, 5, 6), (0.8, 0.8, 1.1, 1.5)),
    "Eczema": ((2.5, 1.6, 1.1, 0.8, 0.6, 0.5, 0.5), (1, 1, 1, 1)),
    "COPD": ((0.05, 0.1, 0.3, 0.8, 2, 3.5, 4.5), (1.5, 1, 0.9, 1)),
    "Cataract": ((0.02, 0.05, 0.1, 0.4, 1.6, 4.5, 7), (1, 1, 1, 1)),
    "Chronic Kidney Disease": ((0.05, 0.1, 0.25, 0.6, 1.3, 2.5, 4), (1, 0.9, 1.1, 1.3)),
    "Gout": ((0.1, 0.25, 0.6, 1, 1.2, 1.2, 1.1), (0.5, 0.8, 1.2, 1.8)),
    "Tuberculosis": ((0.7, 0.7, 0.6, 0.6, 0.6, 0.6, 0.5), (3, 1, 0.7, 0.6)),
    "Osteoporosis": ((0.01, 0.03, 0.1, 0.4, 1.3, 2.5, 4), (2, 1, 0.8, 0.7)),
    "Psoriasis": ((0.5, 0.6, 0.6, 0.6, 0.5, 0.4, 0.4), (1, 1, 1, 1.3)),
    "Epilepsy": ((0.45, 0.4, 0.35, 0.3, 0.3, 0.3, 0.3), (1, 1, 1, 1)),
    "Atrial Fibrillation": ((0.01, 0.02, 0.05, 0.15, 0.5, 1.2, 2.5), (1, 1, 1.1, 1.3)),
    "Dementia": ((0.002, 0.005, 0.01, 0.05, 0.3, 1.3, 4), (1.3, 1, 0.9, 0.9)),
    "Hepatitis B": ((0.3, 0.3, 0.3, 0.25, 0.2, 0.15, 0.1), (1, 1, 1, 1)),
    "HIV": ((0.15, 0.25, 0.25, 0.15, 0.08, 0.04, 0.02), (2, 1, 0.8, 0.8)),
    "Parkinson's Disease": ((0.002, 0.005, 0.01, 0.04, 0.15, 0.5, 1), (1, 1, 1, 1)),
    "Multiple Sclerosis": ((0.03, 0.05, 0.05, 0.04, 0.03, 0.02, 0.01), (1, 1, 1, 1)),
}
HEALTH_CONDITIONS: tuple[str, ...] = tuple(_CONDITIONS)
#: The conditions by ICD-10 chapter (a hierarchy for hierarchical t-closeness, SPEC section 3
#: form: value -> [level 1]); "No Chronic Condition" is a chapter of its own.
HEALTH_CONDITION_HIERARCHY: dict[str, list[str]] = {
    "No Chronic Condition": ["No Condition"],
    "Hypertension": ["Circulatory"],
    "Diabetes": ["Endocrine"],
    "Allergic Rhinitis": ["Respiratory"],
    "Asthma": ["Respiratory"],
    "GERD": ["Digestive"],
    "Anxiety": ["Mental"],
    "Hypothyroidism": ["Endocrine"],
    "Hyperlipidaemia": ["Endocrine"],
    "Arthritis": ["Musculoskeletal"],
    "Migraine": ["Nervous"],
    "Anaemia": ["Blood"],
    "Depression": ["Mental"],
    "Chronic Back Pain": ["Musculoskeletal"],
    "Coronary Artery Disease": ["Circulatory"],
    "Eczema": ["Skin"],
    "COPD": ["Respiratory"],
    "Cataract": ["Eye"],
    "Chronic Kidney Disease": ["Genitourinary"],
    "Gout": ["Musculoskeletal"],
    "Tuberculosis": ["Infectious"],
    "Osteoporosis": ["Musculoskeletal"],
    "Psoriasis": ["Skin"],
    "Epilepsy": ["Nervous"],
    "Atrial Fibrillation": ["Circulatory"],
    "Dementia": ["Mental"],
    "Hepatitis B": ["Infectious"],
    "HIV": ["Infectious"],
    "Parkinson's Disease": ["Nervous"],
    "Multiple Sclerosis": ["Nervous"],
}

# PIN codes: (3-digit prefix, number of codes, highest last-3-digit value). Karnataka-like:
# Bengaluru (560) dense and most frequent, then its surroundings (561-563), then the rest.
_PIN_PREFIXES: tuple[tuple[int, int, int], ...] = (
    (560, 100, 110),
    (561, 25, 200),
    (562, 50, 130),
    (563, 35, 140),
    (570, 50, 150),
    (571, 70, 160),
    (572, 80, 170),
    (573, 70, 160),
    (574, 60, 150),
    (575, 30, 100),
    (576, 70, 160),
    (577, 120, 260),
    (580, 30, 90),
    (581, 90, 200),
    (582, 50, 130),
    (583, 60, 150),
    (584, 50, 130),
    (585, 80, 180),
    (586, 50, 130),
    (587, 40, 120),
    (590, 30, 90),
    (591, 107, 230),
)
_N_PIN_CODES = 1347
#: PIN popularity: city codes weigh _PIN_CITY_WEIGHT, others 1, each times a log-normal factor.
_PIN_CITY_WEIGHT, _PIN_SIGMA = 10.0, 0.3
#: Rows where each pool code is forced once: row = start + stride * pool_index (< 100 000).
_PIN_FORCE_START, _PIN_FORCE_STRIDE = 37, 74
#: Fixed rows (all below 1000) forcing the domain ends of age and BMI: (rows, values).
_AGE_FORCED = (np.array([211, 733]), np.array([_AGE_MIN, _AGE_MAX]))
_BMI_FORCED = (np.array([389, 947]), np.array([_BMI_MIN_T, _BMI_MAX_T]))


def _words(text: str) -> tuple[str, ...]:
    """Split a space-separated pool literal (long pools read better as prose)."""
    return tuple(text.split())


_FIRST_NAMES = _words(
    "Aarav Aditi Akash Alka Amit Ananya Anil Anjali Arjun Asha Bhavna Chandani Deepak Devika "
    "Divya Ekaraj Farhan Gauri Harish Ishaan Jack Kavya Kiran Lakshmi Madhav Meera Mohan Nakul "
    "Neha Nikhil Pooja Pradeep Priya Rahul Rajesh Ravi Rekha Rohan Sahil Sanjay Shreya Sneha "
    "Sunil Suresh Tanvi Uma Varun Vidya Vikram Zara"
)
_LAST_NAMES = _words(
    "Agarwal Bahl Banerjee Bhat Chatterjee Das Desai Gowda Gupta Hegde Iyer Jain Joshi Kamath "
    "Kapoor Khan Kulkarni Kumar Lanka Mehta Menon Mishra Murthy Nadig Naidu Nair Pandey Parikh "
    "Patel Pillai Prabhakar Rao Reddy Sastry Sen Shankar Sharma Shetty Singh Sinha Srinivasan "
    "Sule Thakur Trivedi Varma Verma Yadav"
)
_STREET_NAMES = _words(
    "Bahl Brigade Church Ganesh Gandhi Hosur Indira Jayanagar Kala Kanakapura Lalbagh Malleswaram "
    "Mysore Nadig Nehru Palace Rajaji Residency Richmond Sadashiv Sampige Sarjapur "
    "Shivaji Sule Tagore Tilak Ulsoor Vittal Whitefield"
)
_STREET_KINDS = ("Road", "Marg", "Chowk", "Circle", "Nagar", "Street", "Layout", "Cross", "Zila")

_CHUNK_FILE = re.compile(r"^chunk-\d{5,}\.(parquet|csv)$")


def pin_code_pool() -> np.ndarray:
    """The 1347 distinct PIN codes, sorted; fixed (own seed), so the encoded domain never varies."""
    rng = np.random.default_rng(_PIN_POOL_SEED)
    codes = [
        prefix * 1000 + np.sort(rng.choice(np.arange(1, top + 1), size=count, replace=False))
        for prefix, count, top in _PIN_PREFIXES
    ]
    pool = np.concatenate(codes).astype(np.int64)
    assert pool.size == _N_PIN_CODES and np.unique(pool).size == _N_PIN_CODES
    return pool


def _pin_weights(pool: np.ndarray) -> np.ndarray:
    """Weight per pool code: the city (Bengaluru, 560xxx) codes are ~8x as likely as the others,
    each code with mild log-normal variation (a realistic spread; the paper's nodes keep PIN
    codes at width 32-128, which a heavily skewed Zipf law would never allow)."""
    rng = np.random.default_rng(_PIN_POOL_SEED + 1)
    city = pool < 561_000
    return np.where(city, _PIN_CITY_WEIGHT, 1.0) * rng.lognormal(0.0, _PIN_SIGMA, pool.size)


def _age_weights() -> np.ndarray:
    """Relative weight of each age 19..85 from the piecewise-linear pyramid knots."""
    ages = np.arange(_AGE_MIN, _AGE_MAX + 1)
    return np.interp(ages, _AGE_KNOTS_X, _AGE_KNOTS_Y)


def _bmi_weights() -> np.ndarray:
    """Relative weight of each BMI tenth 12.0..36.0: a log-normal density, right-skewed."""
    x = np.arange(_BMI_MIN_T, _BMI_MAX_T + 1) / 10.0
    z = np.log(x / _BMI_MEDIAN) / _BMI_SIGMA
    return np.exp(-0.5 * z * z) / x


class _Sampler:
    """Exact inverse-CDF sampling, ``searchsorted(cdf, u, "right")``, without a binary search.

    A guide table over ``cells`` (a power of 2) equal cells of [0, 1) gives each u the first
    candidate index; as a cell holds at most ``steps`` CDF points, that many branch-free
    corrections give the exact answer (u * cells and cell / cells are exact in binary floating
    point). With 2-d weights (segments, values) it holds one distribution per segment, with
    guide and CDF flattened, and each row inverts the CDF of its own segment.
    """

    def __init__(self, weights: np.ndarray, cells: int = 1 << 16) -> None:
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))  # every segment positive
        cdf = np.cumsum(w, axis=1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1.0
        n_seg, self.n_values = cdf.shape
        edges = np.arange(cells + 1, dtype=np.float64) / cells
        guide = np.stack([np.searchsorted(row, edges, side="right") for row in cdf])
        self.cells, self.steps = cells, int(np.max(np.diff(guide, axis=1)))
        local = np.minimum(guide[:, :-1], self.n_values - 1)
        self.guide = (local + self.n_values * np.arange(n_seg)[:, None]).ravel()
        self.cdf = cdf.ravel()

    def __call__(self, u: np.ndarray, segment: np.ndarray | None = None) -> np.ndarray:
        cell = (u * self.cells).astype(np.int64)
        idx = self.guide[cell if segment is None else segment * self.cells + cell]
        for _ in range(self.steps):
            idx += self.cdf[idx] <= u
        return idx if segment is None else idx - segment * self.n_values


def _condition_weights() -> np.ndarray:
    """Weight of each condition per (age, BMI band) segment, ``segment = (age - 19) * 4 + band``:
    the age profile (linear between the knots) times the BMI band's factor."""
    ages = np.arange(_AGE_MIN, _AGE_MAX + 1, dtype=np.float64)
    by_age = np.stack([np.interp(ages, _CONDITION_AGES, p) for p, _ in _CONDITIONS.values()], 1)
    by_bmi = np.array([f for _, f in _CONDITIONS.values()]).T  # (bands, conditions)
    return (by_age[:, None, :] * by_bmi[None, :, :]).reshape(-1, len(_CONDITIONS))


class _Tables:
    """Pools and samplers built once per run (cheap, but not worth redoing per chunk)."""

    def __init__(self) -> None:
        self.names = pa.array([f"{f} {la}" for f in _FIRST_NAMES for la in _LAST_NAMES])
        self.streets = pa.array([f"{s} {k}" for s in _STREET_NAMES for k in _STREET_KINDS])
        # House numbers "001".."999", then "1/100".."99/999" (indexed in chunk_table).
        houses = [f"{a:03d}" for a in range(1, 1000)]
        houses += [f"{b}/{c}" for b in range(1, 100) for c in range(100, 1000)]
        self.houses = pa.array(houses)
        self.blood = pa.array(list(_BLOOD_FREQ))
        self.blood_sampler = _Sampler(np.array(list(_BLOOD_FREQ.values())))
        self.professions = pa.array(list(_PROFESSIONS))
        self.profession_sampler = _Sampler(np.array([w for _, _, w in _PROFESSIONS.values()]))
        self.age_sampler = _Sampler(_age_weights())
        self.bmi_sampler = _Sampler(_bmi_weights())
        self.pins = pin_code_pool()
        self.pin_sampler = _Sampler(_pin_weights(self.pins))
        self.conditions = pa.array(list(_CONDITIONS))
        self.condition_sampler = _Sampler(_condition_weights(), cells=1 << 10)


class _Streams:
    """Uniform [0, 1) draws for global rows [start, stop), keyed by (seed, block, stream).

    ``Generator.random`` fills sequentially, so a block's first j values never depend on how
    many are drawn: slicing a block is exact and rows are independent of the chunking.
    """

    def __init__(self, seed: int, start: int, stop: int) -> None:
        self.seed, self.start, self.stop = seed, start, stop

    def uniform(self, stream: int) -> np.ndarray:
        parts = []
        for block in range(self.start // _BLOCK_ROWS, (self.stop - 1) // _BLOCK_ROWS + 1):
            base = block * _BLOCK_ROWS
            lo, hi = max(self.start, base) - base, min(self.stop, base + _BLOCK_ROWS) - base
            seq = np.random.SeedSequence(self.seed, spawn_key=(block, stream))
            parts.append(np.random.Generator(np.random.PCG64(seq)).random(hi)[lo:])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def choice(self, stream: int, sampler: _Sampler) -> np.ndarray:
        """Indices drawn by inverse CDF."""
        return sampler(self.uniform(stream))

    def integers(self, stream: int, low: int, high: int) -> np.ndarray:
        """Uniform integers in [low, high]."""
        return low + (self.uniform(stream) * (high - low + 1)).astype(np.int64)

    def force(self, values: np.ndarray, rows: np.ndarray, forced: np.ndarray) -> None:
        """Overwrite values at the given global rows where they fall inside this range."""
        inside = (rows >= self.start) & (rows < self.stop)
        values[rows[inside] - self.start] = forced[inside]


def _patient_ids(number: np.ndarray, birth_yymm: np.ndarray, visit: np.ndarray) -> pa.Array:
    """``P{number:07d}-{yymm:04d}-{visit}`` built as raw bytes (faster than string kernels).

    ``number`` is ascending (consecutive rows), so it splits into runs of equal digit count,
    each a fixed-width byte matrix.
    """
    powers = [10**j for j in range(7, 19)]
    cuts = np.unique(np.searchsorted(number, powers))
    bounds = np.unique(np.r_[0, cuts[(cuts > 0) & (cuts < number.size)], number.size])
    data, lengths = [], []
    for lo, hi in itertools.pairwise(bounds.tolist()):
        width = max(7, len(str(int(number[lo]))))
        m = np.empty((hi - lo, width + 8), dtype=np.uint8)
        m[:, 0] = ord("P")
        _digits(m, 1, width, number[lo:hi])
        m[:, width + 1] = m[:, width + 6] = ord("-")
        _digits(m, width + 2, 4, birth_yymm[lo:hi])
        m[:, width + 7] = ord("0") + visit[lo:hi]
        data.append(m.ravel())
        lengths.append(np.full(hi - lo, width + 8, dtype=np.int64))
    offsets = np.zeros(number.size + 1, dtype=np.int32)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return pa.StringArray.from_buffers(
        number.size, pa.py_buffer(offsets), pa.py_buffer(np.concatenate(data))
    )


def _digits(m: np.ndarray, col: int, width: int, values: np.ndarray) -> None:
    """Write values as zero-padded decimal ASCII into columns [col, col + width) of m."""
    v = values.astype(np.int64, copy=True)
    for j in range(col + width - 1, col - 1, -1):
        m[:, j] = ord("0") + v % 10
        v //= 10


def _join(*parts: pa.Array | str, sep: str = "") -> pa.Array:
    """Element-wise string concatenation (scalars broadcast)."""
    return pc.binary_join_element_wise(*parts, sep)


def chunk_table(seed: int, start: int, stop: int, tables: _Tables | None = None) -> pa.Table:
    """The dataset's global rows [start, stop) as an Arrow table (columns in ``COLUMNS`` order)."""
    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop, got start={start}, stop={stop}")
    t = tables or _Tables()
    s = _Streams(seed, start, stop)
    row = np.arange(start, stop, dtype=np.int64)

    age = _AGE_MIN + s.choice(_S_AGE, t.age_sampler)
    s.force(age, *_AGE_FORCED)
    bmi_t = _BMI_MIN_T + s.choice(_S_BMI, t.bmi_sampler)
    s.force(bmi_t, *_BMI_FORCED)
    pin_idx = s.choice(_S_PIN, t.pin_sampler)
    force_rows = _PIN_FORCE_START + _PIN_FORCE_STRIDE * np.arange(_N_PIN_CODES, dtype=np.int64)
    s.force(pin_idx, force_rows, np.arange(_N_PIN_CODES))

    # Condition depends on age and BMI band: each row inverts its (age, band) segment's CDF.
    band = np.searchsorted(np.array(_BMI_BAND_EDGES_T), bmi_t, side="right")
    segment = (age - _AGE_MIN) * (len(_BMI_BAND_EDGES_T) + 1) + band
    condition = t.condition_sampler(s.uniform(_S_CONDITION), segment)

    # Patient id "P0000001-9112-1": row number, birth year-month (from age), visit digit.
    birth_yymm = ((_REFERENCE_YEAR - age) % 100) * 100 + s.integers(_S_BIRTH_MONTH, 1, 12)
    patient_id = _patient_ids(row + 1, birth_yymm, s.integers(_S_VISIT, 1, 3))
    name_idx = s.integers(_S_FIRST, 0, len(_FIRST_NAMES) - 1) * len(_LAST_NAMES)
    name_idx += s.integers(_S_LAST, 0, len(_LAST_NAMES) - 1)
    # Address "052, Kala Road" (60 %) or "15/402, Ganesh Chowk" (40 %): index into t.houses.
    house_idx = np.where(
        s.uniform(_S_HOUSE_KIND) < 0.6,
        s.integers(_S_HOUSE_A, 1, 999) - 1,
        999 + (s.integers(_S_HOUSE_B, 1, 99) - 1) * 900 + s.integers(_S_HOUSE_C, 100, 999) - 100,
    )
    street_idx = s.integers(_S_STREET, 0, len(_STREET_NAMES) - 1) * len(_STREET_KINDS)
    street_idx += s.integers(_S_STREET_KIND, 0, len(_STREET_KINDS) - 1)
    address = _join(t.houses.take(house_idx), t.streets.take(street_idx), sep=", ")

    return pa.table(
        [
            patient_id,
            t.names.take(name_idx),
            address,
            t.blood.take(s.choice(_S_BLOOD, t.blood_sampler)),
            t.professions.take(s.choice(_S_PROFESSION, t.profession_sampler)),
            pa.array(age, type=pa.int64()),
            pa.array(bmi_t / 10.0, type=pa.float64()),
            pa.array(t.pins[pin_idx], type=pa.int64()),
            t.conditions.take(condition),
        ],
        names=list(COLUMNS),
    )


def _write_csv(table: pa.Table, path: Path) -> None:
    """CSV with a header and commas; BMI is written as text with one decimal ("25.0", quoted
    like all strings) so that no chunk can look like integers to a type-inferring reader."""
    bmi_t = pc.round(pc.multiply(table["bmi"], 10.0)).cast(pa.int64())
    whole = pc.cast(pc.divide(bmi_t, 10), pa.string())  # integer division
    bmi = _join(whole, pc.cast(pc.remainder(bmi_t, 10), pa.string()), sep=".")
    table = table.set_column(COLUMNS.index("bmi"), "bmi", bmi)
    pacsv.write_csv(table, path)


def paper_config_dict(
    input_path: str | Path, output_path: str | Path, chunk_rows: int, fmt: str = "parquet"
) -> dict[str, Any]:
    """The SPEC section 2 configuration of the paper's experiment, ready for ``yaml.safe_dump``.

    Hierarchies are inline so the config is self-contained; ``fmt`` is the input format.
    """
    return {
        **dataset_io(input_path, output_path, chunk_rows, fmt),
        "direct_identifiers": ["patient_id", "name", "address"],
        "sensitive_attributes": ["health_condition"],
        "quasi_identifiers": [
            {
                "name": "blood_group",
                "type": "categorical",
                "hierarchy": {k: list(v) for k, v in BLOOD_GROUP_HIERARCHY.items()},
            },
            {
                "name": "profession",
                "type": "categorical",
                "hierarchy": {k: list(v) for k, v in PROFESSION_HIERARCHY.items()},
            },
            {"name": "age", "type": "numerical", "min_width": 1},
            {"name": "bmi", "type": "numerical", "min_width": 0.1, "widths": [0.1, 1, 2, 4, 8]},
            {"name": "pin_code", "type": "numerical", "min_width": 1, "encode": True},
        ],
        "privacy": {"k": 50, "suppression_limit": 0.01},
        "memory": {"histogram_bins": None},
        "qid_priority": ["age", "bmi", "pin_code", "blood_group", "profession"],
        "suppressed_records": "mask",
    }


def example_criteria() -> dict[str, list[dict[str, Any]]]:
    """The ``privacy`` keys of an l-diversity criterion on the paper's sensitive attribute
    (SPEC section 4b), to merge into `paper_config_dict`'s ``privacy`` section; the generated
    skald.yaml carries them as a commented example."""
    return {"l_diversity": [{"attribute": "health_condition", "l": 3, "variant": "distinct"}]}


def _example_comment(config: dict[str, Any]) -> str:
    """The config's privacy section with `example_criteria` added, as YAML comment lines."""
    privacy = {"privacy": {**config["privacy"], **example_criteria()}}
    lines = yaml.safe_dump(privacy, sort_keys=False).splitlines()
    return (
        "\n# Example: k-anonymity and l-diversity on the sensitive attribute together (SPEC 4b).\n"
        "# To use it, replace the privacy section above with:\n"
        + "".join(f"# {line}\n" for line in lines)
    )


def _integer(name: str, value: object, minimum: int) -> int:
    """A plain int >= minimum (numpy integers accepted; bools and floats are mistakes)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return int(value)


def generate_dataset(
    rows: int,
    chunk_rows: int,
    seed: int,
    out_dir: str | Path,
    fmt: str = "parquet",
    *,
    overwrite: bool = False,
    schema: str = "paper",
) -> Path:
    """Write ceil(rows/chunk_rows) chunk files out_dir/chunk-00000.parquet (or .csv) and
    out_dir/skald.yaml; return the yaml path.

    Chunk i holds global rows [i*chunk_rows, min(rows, (i+1)*chunk_rows)). Each file is written
    under a temporary name and renamed when complete. An existing out_dir that is not empty is
    refused (DataError, nothing written) unless `overwrite`: then chunk files of an earlier run
    that are not part of this one are removed, so the folder holds exactly this dataset, and
    skald.yaml is replaced (other files stay). `schema` "clinical" writes the clinical table
    (clinical.py) and its config of rule-built hierarchies instead of the paper's.
    """
    if schema not in ("paper", "clinical"):
        raise ValueError(f"schema must be 'paper' or 'clinical', not {schema!r}")
    rows = _integer("rows", rows, 1)
    chunk_rows = _integer("chunk_rows", chunk_rows, 1)
    seed = _integer("seed", seed, 0)
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"fmt must be 'parquet' or 'csv', not {fmt!r}")

    out = Path(out_dir).resolve()
    if not overwrite and out.is_dir() and any(out.iterdir()):
        raise DataError(
            f"output folder {out_dir} exists and is not empty; pass --overwrite to replace "
            "the dataset in it"
        )
    out.mkdir(parents=True, exist_ok=True)
    tables = _Tables()
    written: set[str] = set()
    for i in range(-(-rows // chunk_rows)):
        start = i * chunk_rows
        stop = min(rows, start + chunk_rows)
        if schema == "clinical":
            table = clinical_table(seed, start, stop)
        else:
            table = chunk_table(seed, start, stop, tables)
        final = out / f"chunk-{i:05d}.{fmt}"
        tmp = out / f".{final.name}.tmp"
        try:
            if fmt == "parquet":
                pq.write_table(table, tmp)
            elif schema == "clinical":
                pacsv.write_csv(table, tmp)
            else:
                _write_csv(table, tmp)
            os.replace(tmp, final)  # readers never see half a file
        finally:
            tmp.unlink(missing_ok=True)
        written.add(final.name)
    for stale in out.iterdir():
        if _CHUNK_FILE.match(stale.name) and stale.name not in written:
            stale.unlink()

    make_config = clinical_config_dict if schema == "clinical" else paper_config_dict
    config = make_config(".", f"../{out.name}-anonymised", chunk_rows, fmt)
    yaml_path = out / "skald.yaml"
    tmp = out / ".skald.yaml.tmp"
    text = yaml.safe_dump(config, sort_keys=False)
    if schema == "paper":
        text += _example_comment(config)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, yaml_path)
    return yaml_path
