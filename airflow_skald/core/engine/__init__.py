"""Where the three passes run (docs/design.md §2b, ADR 0050): one seam, several engines.

`base.Engine` names what the passes ask of wherever the data lives (phase 1's statistics, the
root histogram, the written release and its class table); `registry` finds an engine by the
name the `execution:` setting gives (`settings.ExecutionSettings`); `chunks.ChunkEngine`, the
chunk reader, is the first engine.
"""
