"""What a release is still good for (docs/design.md §5 "Utility analysis", issue 31 item 3).

One concept per module: `settings` (the `utility:` section), `sample` (a reproducible sample
of the same records of both tables, drawn over chunks), `summary` (per-QID statistics before
and after, exact over chunks), `collect` (what phase 3 gathers per chunk, mergeable across
workers), `classify` (scikit-learn's classifiers trained on the original and on the release,
over the same folds), `top` (QIDs generalised away for every record) and `analyse` (the
manifest's `utility` section from the merged partials).
"""
