"""The passes' shared floor, below the engines (ADR 0073): a run's state (`state.Run`, `store`),
the chunk path's code (`pipeline`, `parallel`, each pass's `ChunkPass`) and phase 3's result
(`written.Written`). The engines (`core.engine`) read them; the runner and the phases
(`core.run`) call the engines."""

from airflow_skald.core.passes.startup import prepare

prepare()  # a process that runs passes: the start-up costs set aside before numpy and pyarrow
