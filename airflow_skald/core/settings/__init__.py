"""Settings as they enter: the settings table (every per-run setting, its rule, CLI flag and DAG
param; a `setting` each), the parse helpers every config section uses, safe YAML loading and the
quality section's names; below the privacy and quality models that declare their own rows."""
