"""The run configuration as a whole (`run_config`: the validated config a run reads, from YAML,
a dict or per-run overrides) and the privacy policy it asks for (`policy`)."""
