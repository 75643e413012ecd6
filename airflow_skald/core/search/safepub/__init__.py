"""SafePub's data-dependent search for (ε, δ)-differential privacy (docs/design.md §4e, ARX's
``DataDependentEDDPAlgorithm``): the DP score functions of the quality models (`scores`), the
exponential mechanism's walk over pivots (`pivots`) and the decision it releases (`decide`). The
model and its parameters are a privacy model's (`core.privacy.differential_privacy`); the keys,
sampler and mechanism differential privacy's package's (`core.transform.differential_privacy`).
The score functions read the quality models' context, so the walk stays in the search layer
(ADR 0067)."""
