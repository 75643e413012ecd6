"""SafePub's data-dependent search for (ε, δ)-differential privacy (docs/design.md §4e, ARX's
``DataDependentEDDPAlgorithm``): the DP score functions of the quality models (`scores`), the
exponential mechanism's walk over pivots (`pivots`) and the decision it releases (`decide`). The
model's parameters, keys, sampler and mechanism are the privacy model's (`core.privacy.dp`)."""
