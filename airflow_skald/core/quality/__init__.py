"""Quality models (SPEC §4d), one module each, listed in ``registry``: the search minimises the
configured objective; the manifest reports every model's score. ``reported`` holds the figures
SPEC §5 lists beside DM* (`REPORTED`). This package file imports nothing, so the settings
table can read ``quality.settings`` (the objective names) without loading the models."""
