"""What the passes and the engines ask a transformation (ARX's ``isLocalRecodingSupported()``
style: the capability answers live on the transformation, not in lists kept elsewhere), from
phase 1 to the parts phase 3 writes (ADR 0060).

When each hook is called:

- ``aggregated`` / ``out_of_lattice`` (phases 1 and 2, the lattice): QIDs it releases as
  their class's aggregate (counted per class) and those it takes out of the lattice;
- capability answers, while the config is checked and a run is planned:
  ``arx_dp_refusal`` (what ARX does not run with differential privacy, asked before the
  models are), ``dp_refusal`` (why it cannot run under differential privacy),
  ``engine_refusal`` / ``supports_engine`` (why an engine cannot run it),
  ``per_chunk_refusal`` (why the per-chunk baseline cannot run a config),
  ``hides_input_facts`` (the manifest states no fact over every input record);
- ``row_sample`` / ``search_key`` (phases 2 and 3, and phase 2's search): the run's keyed
  draws, from the run's secret and token (`KeyedRun`): the rows a sample keeps and the
  search's stream (None: the run draws nothing);
- ``release_part`` (phase 3, each part): a part's table, after suppression, before the
  QIDs' labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # no pyarrow at import (DAG parsing imports the config)
    import pyarrow as pa


class KeyedRun(Protocol):
    """What a transformation reads of a run to key its draws (`passes.state.Run`)."""

    config: Any
    token: str

    def secret(self) -> bytes:
        """The run's key for its draws (ConfigError, one line, when there is none)."""
        ...

    def chunks(self) -> Sequence[Any]:
        """The input's chunks, as phase 0 listed them."""
        ...


class EngineHooks:
    """What the passes and the engines ask of a transformation (see the module's docstring
    for when each hook is called); every default adds nothing and refuses nothing."""

    def aggregated(self) -> Mapping[str, Any]:
        """QIDs it releases as an aggregate over their class (phases 1 and 2 count their
        values per class), each with its setting."""
        return {}

    def out_of_lattice(self) -> tuple[Any, ...]:
        """QIDs (`QidSpec`s) it takes out of the generalisation lattice, released beside the
        classes the others form."""
        return ()

    def arx_dp_refusal(self) -> str | None:
        """What it is called when ARX refuses it with differential privacy, or None."""
        return None

    def dp_refusal(self, unbounded: str) -> str | None:
        """Why it cannot run under differential privacy (`unbounded`: what no (epsilon,
        delta) bounds), or None."""
        return None

    def engine_refusal(self, engine: str) -> str | None:
        """The setting `engine` does not run (its refusal names it), or None."""
        return None

    def supports_engine(self, engine: str) -> bool:
        return self.engine_refusal(engine) is None

    @classmethod
    def per_chunk_refusal(cls, config: Any) -> str | None:
        """Why the per-chunk baseline (every chunk anonymised alone, ``--per-chunk``) cannot
        run `config` (a `SkaldConfig`) when it asks for this transformation, or None."""
        return None

    @classmethod
    def hides_input_facts(cls, config: Any) -> bool:
        """The manifest of `config`'s release states no fact over every input record (a
        built hierarchy's hash of its level-0 values, phase 1's flags of a date QID)."""
        return False

    @classmethod
    def row_sample(cls, run: KeyedRun) -> Any:
        """The rows the run's keyed sample keeps (a `RowSample`), or None: every row."""
        return None

    @classmethod
    def search_key(cls, run: KeyedRun) -> int | None:
        """The key of the search's random stream, or None: the search draws nothing."""
        return None

    def release_part(self, table: pa.Table) -> pa.Table:
        return table
