"""The assembler: the page's sections in the report's order, and writing `report.html`."""

from __future__ import annotations

import logging

from airflow_skald.core.release.report.at_risk import at_risk_html
from airflow_skald.core.release.report.audit import audit_html
from airflow_skald.core.release.report.facts import page_facts, report_title
from airflow_skald.core.release.report.format import page, section_html
from airflow_skald.core.release.report.header import cards_html, header_html
from airflow_skald.core.release.report.lattice import lattice_html
from airflow_skald.core.release.report.locations import locations_html
from airflow_skald.core.release.report.nodes import nodes_html
from airflow_skald.core.release.report.plots import build_plots
from airflow_skald.core.release.report.privacy import privacy_html
from airflow_skald.core.release.report.quality import quality_html, quality_models_html
from airflow_skald.core.release.report.risk import risk_analysis_html, risk_html
from airflow_skald.core.release.report.runtime import run_identity_html, timings_html
from airflow_skald.core.release.report.utility import all_top_html, utility_html
from airflow_skald.core.release.write.commit import REPORT, write_bytes_atomic
from airflow_skald.core.transform import registry as transform_registry

log = logging.getLogger("airflow_skald")


def render_report(manifest: dict, run: dict | None = None) -> str:
    """The report's HTML, from the manifest and (when given) the run record only."""
    m = page_facts(manifest, run)
    plots = build_plots(m)
    return page(
        report_title(m),
        [
            header_html(m),
            cards_html(m),
            locations_html(m),
            all_top_html(m),
            nodes_html(m),
            *_transformations(m, after="nodes"),
            privacy_html(m),
            *_transformations(m, after="privacy"),
            quality_html(m, plots),
            quality_models_html(m),
            utility_html(m),
            risk_html(m),
            risk_analysis_html(m, plots),
            at_risk_html(m),
            lattice_html(m),
            run_identity_html(m),
            timings_html(m, plots),
            audit_html(m, with_run_record=bool(run)),
        ],
    )


def _transformations(m: dict, after: str) -> list[str]:
    """The transformations' own sections that follow the shared section `after`."""
    return [section_html(s) for s in transform_registry.report_sections(m, after)]


def write_report(manifest: dict, folder: str, run: dict | None = None) -> str | None:
    """Write `report.html` into the (staging) release folder; a failure only logs a warning."""
    target = folder.rstrip("/") + "/" + REPORT
    try:
        write_bytes_atomic(target, render_report(manifest, run).encode("utf-8"))
    except Exception as exc:  # the release is verified already: a report bug must not lose it
        log.warning("report.html not written: %s", exc)
        return None
    return target
