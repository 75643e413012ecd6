"""Checking a release from the release alone: `skald verify` (the last step of every run),
`skald audit`, and the files a release keeps for the check (ADR 0059). Imports `write` (file
names, manifest schema) and `count`, never `report`."""
