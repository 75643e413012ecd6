"""The distributions of the SKALD paper's synthetic medical dataset (docs/design.md §8): its
columns, the frequencies and pools each column is drawn from, and the hierarchies of its QIDs.

Every constant here is part of the data definition: changing one changes the data. So that the
QID domains (and thus the lattice) do not depend on the sample, a few fixed rows are forced: age
19 and 85 and BMI 12.0 and 36.0 occur within the first 1000 rows, and each of the 1347 PIN codes
occurs once within the first 100 000 rows (1.35 % of those rows; a negligible share at the
paper's scale). All other values follow the distributions documented by the constants below.
"""

from __future__ import annotations

import numpy as np

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
#: Fixed seed of the PIN-code pool, so the pool (hence the encoded domain) never varies.
_PIN_POOL_SEED = 560_001
#: Year the patient ids' birth year-month is counted back from (the paper's sample is 2024).
REFERENCE_YEAR = 2024

# Blood groups with India-like ABO/Rh frequencies (O+ and B+ about a third each).
BLOOD_FREQ: dict[str, float] = {
    "A+": 0.220,
    "A-": 0.013,
    "B+": 0.320,
    "B-": 0.020,
    "AB+": 0.080,
    "AB-": 0.007,
    "O+": 0.320,
    "O-": 0.020,
}
BLOOD_GROUP_HIERARCHY: dict[str, list[str]] = {bg: [bg.rstrip("+-")] for bg in BLOOD_FREQ}

# Profession -> (domain, sector) and relative frequency: tech-heavy city, many teachers/nurses.
PROFESSIONS: dict[str, tuple[str, str, float]] = {
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
    p: [domain, sector] for p, (domain, sector, _) in PROFESSIONS.items()
}

# Adult age pyramid: flat to 30, then thinning out; piecewise linear through these knots.
AGE_MIN, _AGE_MAX = 19, 85
_AGE_KNOTS_X = (19, 30, 40, 50, 60, 70, 80, 85)
_AGE_KNOTS_Y = (1.0, 1.0, 0.9, 0.75, 0.55, 0.32, 0.12, 0.05)

# BMI in tenths (120..360 = 12.0..36.0): log-normal shape (right-skewed), median 24.2.
BMI_MIN_T, _BMI_MAX_T = 120, 360
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
BMI_BAND_EDGES_T = (185, 250, 300)  # BMI in tenths: <18.5, 18.5-24.9, 25-29.9, >=30
CONDITIONS: dict[str, tuple[tuple[float, ...], tuple[float, float, float, float]]] = {
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
HEALTH_CONDITIONS: tuple[str, ...] = tuple(CONDITIONS)
#: The conditions by ICD-10 chapter (a hierarchy for hierarchical t-closeness, docs/design.md §3
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
N_PIN_CODES = 1347
#: PIN popularity: city codes weigh _PIN_CITY_WEIGHT, others 1, each times a log-normal factor.
_PIN_CITY_WEIGHT, _PIN_SIGMA = 10.0, 0.3
#: Rows where each pool code is forced once: row = start + stride * pool_index (< 100 000).
PIN_FORCE_START, PIN_FORCE_STRIDE = 37, 74
#: Fixed rows (all below 1000) forcing the domain ends of age and BMI: (rows, values).
AGE_FORCED = (np.array([211, 733]), np.array([AGE_MIN, _AGE_MAX]))
BMI_FORCED = (np.array([389, 947]), np.array([BMI_MIN_T, _BMI_MAX_T]))


def _words(text: str) -> tuple[str, ...]:
    """Split a space-separated pool literal (long pools read better as prose)."""
    return tuple(text.split())


FIRST_NAMES = _words(
    "Aarav Aditi Akash Alka Amit Ananya Anil Anjali Arjun Asha Bhavna Chandani Deepak Devika "
    "Divya Ekaraj Farhan Gauri Harish Ishaan Jack Kavya Kiran Lakshmi Madhav Meera Mohan Nakul "
    "Neha Nikhil Pooja Pradeep Priya Rahul Rajesh Ravi Rekha Rohan Sahil Sanjay Shreya Sneha "
    "Sunil Suresh Tanvi Uma Varun Vidya Vikram Zara"
)
LAST_NAMES = _words(
    "Agarwal Bahl Banerjee Bhat Chatterjee Das Desai Gowda Gupta Hegde Iyer Jain Joshi Kamath "
    "Kapoor Khan Kulkarni Kumar Lanka Mehta Menon Mishra Murthy Nadig Naidu Nair Pandey Parikh "
    "Patel Pillai Prabhakar Rao Reddy Sastry Sen Shankar Sharma Shetty Singh Sinha Srinivasan "
    "Sule Thakur Trivedi Varma Verma Yadav"
)
STREET_NAMES = _words(
    "Bahl Brigade Church Ganesh Gandhi Hosur Indira Jayanagar Kala Kanakapura Lalbagh Malleswaram "
    "Mysore Nadig Nehru Palace Rajaji Residency Richmond Sadashiv Sampige Sarjapur "
    "Shivaji Sule Tagore Tilak Ulsoor Vittal Whitefield"
)
STREET_KINDS = ("Road", "Marg", "Chowk", "Circle", "Nagar", "Street", "Layout", "Cross", "Zila")


def pin_code_pool() -> np.ndarray:
    """The 1347 distinct PIN codes, sorted; fixed (own seed), so the encoded domain never varies."""
    rng = np.random.default_rng(_PIN_POOL_SEED)
    codes = [
        prefix * 1000 + np.sort(rng.choice(np.arange(1, top + 1), size=count, replace=False))
        for prefix, count, top in _PIN_PREFIXES
    ]
    pool = np.concatenate(codes).astype(np.int64)
    assert pool.size == N_PIN_CODES and np.unique(pool).size == N_PIN_CODES
    return pool


def pin_weights(pool: np.ndarray) -> np.ndarray:
    """Weight per pool code: the city (Bengaluru, 560xxx) codes are ~8x as likely as the others,
    each code with mild log-normal variation (a realistic spread; the paper's nodes keep PIN
    codes at width 32-128, which a heavily skewed Zipf law would never allow)."""
    rng = np.random.default_rng(_PIN_POOL_SEED + 1)
    city = pool < 561_000
    return np.where(city, _PIN_CITY_WEIGHT, 1.0) * rng.lognormal(0.0, _PIN_SIGMA, pool.size)


def age_weights() -> np.ndarray:
    """Relative weight of each age 19..85 from the piecewise-linear pyramid knots."""
    ages = np.arange(AGE_MIN, _AGE_MAX + 1)
    return np.interp(ages, _AGE_KNOTS_X, _AGE_KNOTS_Y)


def bmi_weights() -> np.ndarray:
    """Relative weight of each BMI tenth 12.0..36.0: a log-normal density, right-skewed."""
    x = np.arange(BMI_MIN_T, _BMI_MAX_T + 1) / 10.0
    z = np.log(x / _BMI_MEDIAN) / _BMI_SIGMA
    return np.exp(-0.5 * z * z) / x


def condition_weights() -> np.ndarray:
    """Weight of each condition per (age, BMI band) segment, ``segment = (age - 19) * 4 + band``:
    the age profile (linear between the knots) times the BMI band's factor."""
    ages = np.arange(AGE_MIN, _AGE_MAX + 1, dtype=np.float64)
    by_age = np.stack([np.interp(ages, _CONDITION_AGES, p) for p, _ in CONDITIONS.values()], 1)
    by_bmi = np.array([f for _, f in CONDITIONS.values()]).T  # (bands, conditions)
    return (by_age[:, None, :] * by_bmi[None, :, :]).reshape(-1, len(CONDITIONS))
