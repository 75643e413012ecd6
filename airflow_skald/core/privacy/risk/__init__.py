"""Re-identification risk (docs/design.md §4c): ARX's population-uniqueness estimators, k-map's derived
k', and the risk analysis of a table, all from class sizes (mergeable counts)."""
