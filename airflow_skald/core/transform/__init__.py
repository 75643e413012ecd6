"""How records are transformed beyond one generalisation node for all (docs/design.md §4f), one
package per transformation, each registered in `registry` (ADR 0060, 0067, 0072, 0074, 0075):
`suppression` (the classes the models refuse suppressed, up to a limit; every run),
`research_subset` (a population table's flagged records released, their classes' population
counted for δ-presence and exact k-map), `local_recoding` (the suppressed records recoded at
nodes of their own, step by step), `microaggregation` (a QID released as an aggregate of its
values over the record's class), `pseudonyms` (direct identifiers as keyed pseudonyms) and
`differential_privacy` (SafePub's sample, search and report). The privacy models
(`core.privacy`) say which classes may be released, the quality models (`core.quality`)
which node is best; a transformation decides what each record becomes."""
