"""Counting a release's (or a dataset's) equivalence classes: the one step every check reads
(ADR 0059)."""
