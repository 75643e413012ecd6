"""The check of a locally recoded release (docs/design.md §4f; ARX 3.9's
``ARXResult.optimizeIterativeFast`` and ``optimizeIterative``), read back from its written
classes: every released class belongs to a step (its QID labels are labels of that step's
node: the global node first, then each step's in order), every step's classes pass that step's
privacy models (bound to the step's records, as the step was searched), and the records
released plus the records suppressed (all-"*" rows, including those a step released at the top
node, and rows dropped) are the input's records.

The release's own check (`release.check.verify.verify_release`) re-checks the models that judge
a class by itself (k, l, k-map's k': `privacy.class_local`) over all classes at once; the models
that compare a class with a distribution or judge the classes together (t-closeness,
b-likeness, d-disclosure, average risk) are judged here, step by step: by the run
(`verify_steps`) and by `skald verify` from the steps the release keeps (`verify_recorded`,
reached through the transformation's `judged_policy` and `recheck` hooks). `skald audit` of a
recoded release judges the class-local models only (`audited_models`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.data.hierarchies import TOP_LABEL as TOP
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.privacy.class_local import CLASS_LOCAL, class_local, split_local
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.privacy.registry import bind_models
from airflow_skald.core.transform.counted import CountedClasses, JudgedRelease
from airflow_skald.core.transform.encoded import EncodedDimension
from airflow_skald.core.transform.local_recoding.recorded import (
    RecordedStep,
    read_recoding_steps,
)
from airflow_skald.core.transform.local_recoding.steps import step_sensitive


def fitting_steps(
    classes: CountedClasses, dims: Sequence[EncodedDimension], nodes: Sequence[Sequence[int]]
) -> np.ndarray:
    """(steps, written tuples): whether the tuple's QID labels are labels of the step's node
    (a tuple may carry the labels of several nodes: equal labels at several levels)."""
    out = np.ones((len(nodes), classes.sizes.size), dtype=bool)
    for s, node in enumerate(nodes):
        for j, (d, level) in enumerate(zip(dims, node, strict=True)):
            names = set(d.labels(int(level), np.arange(d.cards[int(level)])))
            known = np.asarray([x in names for x in classes.labels[j]], dtype=bool)
            out[s] &= known[classes.codes[:, j]] if known.size else False
    return out


def verify_steps(
    classes: CountedClasses,
    dims: Sequence[EncodedDimension],
    policy: PrivacyPolicy,
    sensitive: Mapping[str, Any],
    decision: Any,
    n_records: int,
) -> dict:
    """Check a locally recoded release as the module says; VerificationError naming the step
    and the model when it does not hold. `policy`: the run's (the global node's; its models
    are bound again to each step's records), `sensitive` phase 1's statistics of the
    criteria attributes."""
    steps = [s for s in decision.steps if not s.at_top]
    nodes = [tuple(decision.node), *(s.node for s in steps)]
    n_qids = len(dims)
    star = _all_stars(classes, n_qids)
    fits = fitting_steps(classes, dims, nodes) & ~star
    lost = ~star & ~fits.any(axis=0)
    if lost.any():
        raise VerificationError(
            f"{int(lost.sum())} released class(es) carry labels of no step's node"
        )
    suppressed = int(classes.sizes[star].sum()) + (n_records - classes.n_rows)
    released = int(classes.sizes[~star].sum())
    if released + suppressed != n_records:
        raise VerificationError(
            f"released ({released}) and suppressed ({suppressed}) records are not the "
            f"{n_records} input records"
        )
    _, kept = classes.tables(n_qids, policy.attributes, sensitive)
    order = _kept_order(classes, n_qids, star)  # `kept`'s classes among the written tuples
    fits = fits[:, ~star][:, order]
    dists = [s.distributions for s in steps]
    policies = [policy] + [_bound(policy.models, sensitive, d, n_records) for d in dists]
    figures = judge_steps(kept, fits, policies, nodes, dists)
    return {"steps_checked": figures, "released": released, "suppressed": suppressed}


def judge_steps(
    kept: ClassTable,
    fits: np.ndarray,
    policies: Sequence[PrivacyPolicy],
    nodes: Sequence[Any],
    distributions: Sequence[Mapping[str, Sequence[int]]],
) -> list[dict]:
    """Judge each step's classes under its own models: `fits` (steps, kept classes) says
    which step released records of which class (step 0: the global node), `distributions`
    each later step's records per value. A class passes when one of its steps keeps it;
    VerificationError naming the step and the model for the first that does not."""
    fits = fits.copy()
    passes = np.zeros(kept.n_classes, dtype=bool)
    figures = []
    for s, dist in enumerate(distributions, start=1):  # a class holds at most its step's records
        for a, counts in dist.items():
            cv, limit = kept.values[a], np.asarray(counts, dtype=np.int64)
            over = cv.count > limit[cv.value]
            fits[s] &= np.bincount(cv.cls[over], minlength=kept.n_classes) == 0
    for s, (node, step_policy) in enumerate(zip(nodes, policies, strict=True)):
        index = np.flatnonzero(fits[s])
        table = kept.subset(fits[s])
        judged = PrivacyPolicy(step_policy.models, Fraction(1)).judge(table)
        passes[index[judged.kept]] = True
        figures.append({"step": s, "node": _shown(node), "classes": int(index.size)})
    if not passes.all():  # the first failing class, judged by its first step: the reason
        c = int(np.flatnonzero(~passes)[0])
        s = int(np.flatnonzero(fits[:, c])[0]) if fits[:, c].any() else 0
        where = f"local recoding step {s} (node {_shown(nodes[s])})"
        one = kept.subset(np.arange(kept.n_classes) == c)
        broken = policies[s].check_release(one, where) or [f"{where}: a class fails its models"]
        raise VerificationError(f"{broken[0]} ({int((~passes).sum())} class(es) in all)")
    return figures


def _shown(node: Any) -> Any:
    return dict(node) if isinstance(node, Mapping) else [int(x) for x in node]


def verify_recorded(
    classes: CountedClasses,
    n_qids: int,
    policy: PrivacyPolicy,
    sensitive: Mapping[str, Any],
    recorded: Sequence[RecordedStep],
    n_records: int,
) -> list[dict]:
    """`skald verify` of a locally recoded release from the steps it keeps
    (`recoding_steps.json`): every step's classes under the run's models bound to that
    step's records, as the run checked them."""
    _, kept = classes.tables(n_qids, policy.attributes, sensitive)
    fits = np.zeros((len(recorded), kept.n_classes), dtype=bool)
    for s, step in enumerate(recorded):
        fits[s, step.classes] = True
    dists = [step.distributions for step in recorded[1:]]
    policies = [policy] + [_bound(policy.models, sensitive, d, n_records) for d in dists]
    return judge_steps(kept, fits, policies, [r.node for r in recorded], dists)


def _bound(privacy: Sequence[Any], sensitive: Mapping[str, Any], distributions: Mapping, n: int):
    """The configured models bound to a step's records (its distributions)."""
    bound = bind_models(tuple(privacy), step_sensitive(sensitive, distributions), n)
    return PrivacyPolicy(bound, Fraction(1))


def _kept_order(classes: CountedClasses, n_qids: int, star: np.ndarray) -> np.ndarray:
    """The index, among the non-'*' written classes, of each class of `tables()`' kept table
    (which groups the written tuples by their QID key, in key order)."""
    radices = [max(len(x), 1) for x in classes.labels[:n_qids]]
    keys = keys_of(list(classes.codes[:, :n_qids].T), radices)[~star]
    return np.unique(keys, return_index=True)[1]


def _all_stars(classes: CountedClasses, n_qids: int) -> np.ndarray:
    """The written tuples whose every QID is '*' (suppressed, or released at the top)."""
    star = np.ones(classes.sizes.size, dtype=bool)
    for j in range(n_qids):
        labels = classes.labels[j]
        if TOP not in labels:
            return np.zeros(classes.sizes.size, dtype=bool)
        star &= classes.codes[:, j] == labels.index(TOP)
    return star


#: why `skald verify` leaves a step-relative model of an older release to the run's check
STEP_RELATIVE = (
    "local recoding judges it per step against that step's records, and the release was made "
    "before it kept them (recoding_steps.json); the run checked every step's classes before "
    "it published"
)


def judged_policy(
    manifest: Mapping[str, Any] | None, policy: PrivacyPolicy, skipped: list[dict]
) -> tuple[PrivacyPolicy, list[dict]]:
    """`skald verify` of a locally recoded release: the models that judge a class alone are
    re-checked over every class; the step-relative ones step by step from the steps the
    release keeps (`verify_recorded`), or, for a release made before it kept them, listed as
    not re-checked. A recoding that took no step released the global node alone: every model
    is re-checked over every record, as for a release without local recoding."""
    if not manifest or not isinstance(manifest.get("local_recoding"), Mapping):
        return policy, skipped
    if isinstance(manifest.get("recoding_steps"), Mapping):
        return class_local(policy), skipped
    if not manifest["local_recoding"].get("steps"):  # no step: the global node's release,
        return policy, skipped  # every model judged over every record, as the run judged it
    _, listed = split_local(policy.models, STEP_RELATIVE)
    return class_local(policy), [*skipped, *listed]


#: why `skald audit` leaves a step-relative model of a locally recoded release out
BY_STEP = (
    "not checked: local recoding judged it per step against that step's records, which the "
    "release's rows alone do not tell apart; skald verify re-checks every step from the "
    "release's recoding_steps.json"
)


def audited_models(
    manifest: Mapping[str, Any] | None, models: tuple[Any, ...]
) -> tuple[tuple[Any, ...], list[dict]]:
    """`skald audit` of a release that took steps (docs/design.md §4f): the models that judge
    a class alone; the others listed (`BY_STEP`), as each step judged them against its own
    records, not the whole release's."""
    if manifest is None or not (manifest.get("local_recoding") or {}).get("steps"):
        return models, []
    return split_local(models, BY_STEP)


@dataclass(frozen=True)
class RecordedSteps:
    """The steps a release keeps, read and checked against its classes, judged once the
    records are known (`recheck`)."""

    release: JudgedRelease
    recorded: list[RecordedStep]

    def check(self, n_records: int) -> dict[str, Any]:
        r = self.release
        checked = verify_recorded(
            r.classes, r.n_qids, r.policy, r.sensitive, self.recorded, n_records
        )
        return {"steps_checked": checked}


def recheck(release: JudgedRelease) -> RecordedSteps | None:
    """The steps the release keeps (None: its manifest names none); DataError or
    VerificationError, one line, when the file is not the release's."""
    r = release
    recorded = read_recoding_steps(r.path, r.manifest, r.classes, r.n_qids, r.sensitive, r.overall)
    return None if recorded is None else RecordedSteps(release, recorded)


def recoded_figures(
    manifest: dict, classes: CountedClasses, policy: PrivacyPolicy, sensitive: Mapping, n: int
) -> dict:
    """The manifest's `privacy_models` of a locally recoded release: a model that judges a
    class alone reports its figure over every released class (as `skald verify` recomputes
    it); a step-relative one its figure at the global node, marked so."""
    # in label order: the at-risk classes among equal figures are the same whichever engine
    # or chunking listed the classes
    _, kept = classes.in_label_order().tables(n, policy.attributes, sensitive)
    local = class_local(policy)
    over_all = iter(local.figures(kept))
    models = []
    for entry, m in zip(manifest.get("privacy_models", []), policy.models, strict=True):
        if m.name in CLASS_LOCAL:
            models.append(next(over_all))
        else:
            models.append({**entry, "figure_at": "the global node (each step checked alone)"})
    out = {**manifest, "privacy_models": models}
    if "at_risk_classes" in manifest:  # the class-local models' over every released class
        relative = [r for r in manifest["at_risk_classes"] if r.get("model") not in _names(local)]
        out["at_risk_classes"] = [*(c.to_dict() for c in local.at_risk(kept)), *relative]
    return out


def _names(policy: PrivacyPolicy) -> set:
    return {m.describe().get("model") for m in policy.models}
