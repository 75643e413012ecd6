"""The privacy check and figures of a release from its classes (`class_figures`): the one
judgement of written classes, by `skald verify`, the run's own last check and the per-chunk
baseline. Which rows count as suppressed, and whether the release is the top node, is decided
here; whether that many may be is the suppression package's check
(`Suppression.check_suppressed`)."""

from __future__ import annotations

import numpy as np

from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy import ClassTable, Judgement, PrivacyPolicy
from airflow_skald.core.quality.dm import DM
from airflow_skald.core.quality.dm_star import DMStar
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.transform.suppression import Suppression


def class_figures(
    n_star: int | ClassTable,
    kept: np.ndarray | ClassTable,
    n_rows: int,
    n_records: int,
    policy: PrivacyPolicy,
    where: str = "",
    claimed_suppressed: int | None = None,
    at_top: bool = False,
) -> dict:
    """The privacy check and metrics of a release from its all-"*" count and other classes.

    Rows missing from the release were dropped, hence suppressed. The all-"*" records are
    suppressed too, unless they are the only class, satisfy the policy, and the run did not
    claim them suppressed: then the release is the top node (one class). Every other class is
    released, so every model must keep it. `at_top`: the release is the top node's, whose one
    class the sample-based models do not see (docs/design.md §4c), whatever its labels.
    """
    where = where or "release"
    if n_rows > n_records:
        raise VerificationError(f"{where} has {n_rows} rows but {n_records} records were expected")
    dropped = n_records - n_rows
    star = n_star if isinstance(n_star, ClassTable) else ClassTable(np.asarray([n_star], np.int64))
    table = kept if isinstance(kept, ClassTable) else ClassTable(np.asarray(kept, np.int64))
    n_star = star.n_records
    if (
        n_star
        and not table.n_classes
        and not policy.check_release(star, where, top=True)
        and claimed_suppressed != n_star + dropped
    ):
        table, n_suppressed = star, dropped
    else:
        n_suppressed = n_star + dropped
    sizes = table.sizes
    top = table is star or (at_top and table.n_classes <= 1)
    broken = policy.check_release(table, where, top=top)
    if broken:
        raise VerificationError(broken[0])
    allowed = Suppression.check_suppressed(n_suppressed, n_records, policy.suppression_limit, where)
    judged = Judgement(np.ones(sizes.size, bool), n_records, n_suppressed, allowed, True, True)
    scored = Scored(table, judged, (), ())
    return {
        "n_records": n_records,
        "n_rows": n_rows,
        "n_suppressed": n_suppressed,
        "n_equivalence_classes": int(sizes.size),
        "min_class_size": int(sizes.min()) if sizes.size else 0,
        "dm_star": DMStar().value(scored),
        "dm": DM().value(scored),
        "privacy_models": policy.figures(table),
        "sizes": sizes,
        "top": top,  # the release is the top node: its one class is left out of the risk
        "table": table,  # the released classes (with their distributions)
    }
