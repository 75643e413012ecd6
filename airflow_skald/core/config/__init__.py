"""The run configuration: the settings table, safe YAML loading, the validated config."""
