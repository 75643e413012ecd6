"""The run configuration as a whole (`run_config`: the YAML file read and validated into a
`SkaldConfig`, `skald_config`, with per-run overrides; its `qids` and `locations` sections) and
the privacy policy it asks for (`policy`)."""
