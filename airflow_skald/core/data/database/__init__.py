"""Tables in a database as a run's input (docs/design.md §2a): where a source is, how it is reached
(`connection`), and its extraction into staged Parquet chunks (`extract`)."""
