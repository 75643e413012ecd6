"""QIDs generalised to their top level for every released record: the release keeps nothing of
them. The run logs a warning and the report shows it, naming what would keep them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def all_top(nodes: Iterable[Mapping[str, int]], tops: Mapping[str, int]) -> list[str]:
    """QIDs at their top level in every node that released records (the run's node, and the
    node of every further step when there are any), in `tops`' order."""
    nodes = list(nodes)
    if not nodes:
        return []
    return [q for q, top in tops.items() if all(node.get(q) == top for node in nodes)]


def advice(names: list[str], objective: str | None = None, recoded: bool = False) -> str:
    """One plain sentence: which QIDs are lost, and the ways to keep them (local recoding
    only when the run did not recode already)."""
    if not names:
        return ""
    quoted = ", ".join(f"'{n}'" for n in names)
    one = len(names) == 1
    other = (
        "another objective (quality.objective: loss or nu_entropy count what each QID keeps)"
        if objective in (None, "dm_star", "dm_star_arx", "dm", "aecs")
        else "another objective (quality.objective)"
    )
    weight = f"{names[0]}: 10" if one else ", ".join(f"{n}: 10" for n in names[:2])
    return (
        f"{'QID' if one else 'QIDs'} {quoted} {'is' if one else 'are'} generalised to the top "
        f"('*') for every released record: the release keeps nothing of {'it' if one else 'them'}. "
        f"To keep {'it' if one else 'them'}: a larger weight (quality.weights: {{{weight}}}), "
        + (
            f"or {other}."
            if recoded
            else f"{other}, or local recoding of the suppressed records "
            "(transformation.local_recoding)."
        )
    )
