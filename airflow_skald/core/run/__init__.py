"""Orchestration: the one phase runner for the CLI and the operators, per-chunk work, workers, the per-chunk baseline."""
