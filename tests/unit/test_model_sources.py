"""Each model and transformation names its source in its module's first lines (issue 42 item 7),
as ARX's criteria name theirs: ARX's class it follows (``KAnonymity``, `MetricMDNMLoss`) or the
paper, by author and year (Sweeney 2002).

The privacy and quality models are the registries' (a model added there is checked with no edit
here); the transformations are the modules of ``core.transform``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import airflow_skald.core.transform as transform
from airflow_skald.core.privacy.registry import MODELS as PRIVACY
from airflow_skald.core.quality.registry import MODELS as QUALITY

#: ARX, then within a few words a class or method in backticks: ARX's ``DPresence``
ARX_CLASS = re.compile(r"\bARX\b[^`]{0,60}`{1,2}[\w/.]*[A-Z][a-z]\w*")
#: a name, then within the same clause a year: Sweeney 2002, El Emam et al. 2009
PAPER = re.compile(r"\b[A-Z][a-z]+\b[^;()]{0,80}?\b(19[5-9]\d|20[0-4]\d)\b")


def first_lines(module) -> str:
    """The first paragraph of the module's docstring, on one line."""
    return " ".join((inspect.getdoc(module) or "").split("\n\n")[0].split())


def modules() -> dict[str, object]:
    found = [inspect.getmodule(cls) for cls in (*PRIVACY, *QUALITY.values())]
    found += [
        importlib.import_module(f"{transform.__name__}.{info.name}")
        for info in pkgutil.iter_modules(transform.__path__)
        if not info.name.startswith("_") and info.name != "registry"
    ]
    return {m.__name__: m for m in found}


def test_every_model_and_transformation_names_its_source():
    found = modules()
    assert len(found) >= 20  # today 12 privacy models, 8 quality models, 2 transformations
    missing = [
        name
        for name, module in found.items()
        if not (ARX_CLASS.search(first_lines(module)) or PAPER.search(first_lines(module)))
    ]
    assert not missing, (
        "name the source (ARX's ``Class`` or Author YEAR) in the first lines of: "
        + (", ".join(missing))
    )


def test_the_rule_tells_a_source_from_none():
    named = (
        "k-anonymity (Sweeney 2002; ARX's ``KAnonymity``): every kept class has k records.",
        "DM* as the paper (El Emam et al. 2009) defines it.",
        "ARX's Loss (`MetricMDNMLoss`, its GUI's default): per QID, ...",
    )
    unnamed = (
        "k-anonymity: every kept class has at least k records (monotone with suppression).",
        "ARX's DM*: sum over ALL classes (suppressed ones too) of |E|^2 (docs/design.md §4d).",
    )
    assert all(ARX_CLASS.search(t) or PAPER.search(t) for t in named)
    assert not any(ARX_CLASS.search(t) or PAPER.search(t) for t in unnamed)
