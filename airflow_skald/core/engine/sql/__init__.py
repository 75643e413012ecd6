"""The passes as SQL inside the engine that holds the data (docs/design.md §2b, ADR 0053):
the SQL built with sqlglot per dialect (`dialect`), a session per engine (`session`), the
passes (`domain`, `coding`, `counts`, `release`, `passes`) and what runs today (`support`).
Imported only when a run picks an SQL engine (sqlglot and the engine's driver are extras)."""
