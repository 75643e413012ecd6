"""The quality figures' per-QID rows (docs/design.md §4d; the manifest's
``quality_models.qids``): a QID's level, labels, loss and entropy, and its records per label
before and after generalisation (counts and ranks or generalised labels: never an input value).
Each `to_dict` gives the entry as it was: same keys, same order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabelCounts:
    """The largest labels of one level with their records; the rest summed in `other`."""

    labels: tuple[tuple[str, int], ...]
    other: int
    other_labels: int

    def to_dict(self) -> dict:
        return {
            "labels": [[label, count] for label, count in self.labels],
            "other": self.other,
            "other_labels": self.other_labels,
        }

    @classmethod
    def from_dict(cls, d: dict) -> LabelCounts:
        return cls(
            tuple((str(lab), int(c)) for lab, c in d["labels"]), d["other"], d["other_labels"]
        )


@dataclass(frozen=True)
class QidDistribution:
    """Records per label after generalisation (suppressed records apart) and, unless a DP
    release, before it (at the root's level)."""

    after: LabelCounts
    suppressed: int
    before_level: int | None = None
    before: LabelCounts | None = None

    def to_dict(self) -> dict:
        shown = {}
        if self.before is not None:
            shown = {"before_level": self.before_level, "before": self.before.to_dict()}
        return shown | {"after": self.after.to_dict(), "suppressed": self.suppressed}

    @classmethod
    def from_dict(cls, d: dict) -> QidDistribution:
        before = d.get("before")
        return cls(
            LabelCounts.from_dict(d["after"]),
            d["suppressed"],
            d.get("before_level"),
            LabelCounts.from_dict(before) if before is not None else None,
        )


@dataclass(frozen=True)
class QidFigures:
    """One QID at the chosen node: its level, top level, labels holding records, Loss (None
    under DP when its shares come from the data), ν-entropy and distribution."""

    name: str
    level: int
    top: int
    labels: int
    nu_entropy: float | None
    distribution: QidDistribution
    loss: float | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "level": self.level,
            "top": self.top,
            "labels": self.labels,
            **({} if self.loss is None else {"loss": self.loss}),
            "nu_entropy": self.nu_entropy,
            "distribution": self.distribution.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> QidFigures:
        return cls(
            d["name"],
            d["level"],
            d["top"],
            d["labels"],
            d["nu_entropy"],
            QidDistribution.from_dict(d["distribution"]),
            d.get("loss"),
        )
