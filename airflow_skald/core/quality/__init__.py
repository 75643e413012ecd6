"""Quality models (docs/design.md §4d), one module each, listed in ``registry``: the search minimises the
configured objective; the manifest reports every model's score. ``reported`` holds the figures
docs/design.md §5 lists beside DM* (`REPORTED`). The objective names and the `quality:` settings value
live in ``core.settings.quality``, below the models."""
