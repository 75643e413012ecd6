"""How records are transformed beyond one generalisation node for all (docs/design.md §4f), one module
per transformation: `local_recoding` (the suppressed records recoded at nodes of their own,
step by step) and `microaggregation` (a QID released as an aggregate of its values over the
record's class). The privacy models (`core.privacy`) say which classes may be released, the
quality models (`core.quality`) which node is best; a transformation decides what each record
becomes."""
