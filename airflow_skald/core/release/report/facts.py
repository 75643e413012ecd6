"""Reading the page's facts: the manifest with the run record laid over it, and what the
sections ask of it (metrics, privacy models, per-chunk mode)."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.text import esc

#: the quality metrics the manifest reports, in the report's order, with what each measures
METRICS = (
    ("dm_star", "DM* (paper: kept |E|² + s²)"),
    ("dm_star_arx", "DM* (ARX: all classes |E|²)"),
    ("dm", "DM, discernibility (kept |E|² + N·s)"),
    ("precision", "precision (Sweeney, 1 = no generalisation)"),
)


#: figures a privacy model reaches over the kept classes (other keys are its settings)
FIGURES = {
    "min_class_size": "smallest class",
    "min_distinct": "smallest distinct count",
    "min_entropy_l": "smallest entropy l",
    "max_recursive_ratio": "largest recursive (c,l) ratio",
    "max_distance": "largest distance",
}


#: rows of long per-chunk / per-class tables shown (all are in the manifest)
MAX_ROWS = 50


def page_facts(manifest: Mapping, run: Mapping | None) -> dict:
    """The manifest with the run record's timings, memory and identity laid over it."""
    facts = dict(manifest)
    if run:
        facts.update({k: v for k, v in run.items() if v is not None})
    return facts


def quality_metrics(m: Mapping) -> dict:
    """The metrics, from a `quality` section ({"dm_star": ...}) or today's flat keys."""
    flat = {name: m[name] for name, _ in METRICS if name in m}
    section = m.get("quality")
    return {**flat, **section} if isinstance(section, Mapping) else flat


def models_of(m: Mapping) -> list[dict]:
    """Each privacy model with its settings (and the figure reached, when the manifest has it)."""
    models = m.get("privacy_models") or (m.get("privacy") or {}).get("models") or []
    return [d for d in models if isinstance(d, Mapping)]


def split_model(model: Mapping) -> tuple[dict, dict]:
    """(settings, figures) of one model: figures are the min_/max_ keys, settings the rest."""
    settings, figures = {}, {}
    for key, value in model.items():
        if key == "model":
            continue
        (figures if key in FIGURES or key.startswith(("min_", "max_")) else settings)[key] = value
    return settings, figures


def is_per_chunk(m: Mapping) -> bool:
    return m.get("mode") == "per_chunk"


def report_title(m: Mapping) -> str:
    return "SKALD per-chunk baseline report" if is_per_chunk(m) else "SKALD release report"


def model_names(m: Mapping) -> list[str]:
    return [str(d.get("model")) for d in models_of(m) if d.get("model")]


def criteria_words(m: Mapping) -> str:
    """What a node must pass, in words: "k" alone, else the models' names."""
    names = model_names(m)
    return "k" if names in ([], ["k-anonymity"]) else esc(", ".join(names))
