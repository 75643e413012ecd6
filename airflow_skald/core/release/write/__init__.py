"""Writing a release: the output's lease, the atomic commit, the manifest and its schema,
leftovers of killed runs, the records of replaced releases (ADR 0059). Imports `count`, never
`check` or `report`."""
