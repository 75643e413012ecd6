"""What a run leaves, in layers that import only downwards (ADR 0059):

- `count`: records become equivalence classes (the one counting step every check uses);
- `write`: the output's lease, the atomic commit, the manifest and its schema, what a killed
  run leaves, the records of replaced releases;
- `check`: the independent re-check of a written release (`skald verify`, the last step of
  every run), `skald audit`, and the files a release keeps so the check needs nothing else;
- `report`: report.html and its charts;
- `table_release`: a table as the release (write, read back, check, swap in).
"""
