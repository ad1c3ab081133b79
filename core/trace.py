"""Search traces: every search a catalog runs, with who asked and what came back.

A `Trace` is attached to a `ToolCatalog` or `SkillCatalog` (``trace=``); each
search then records a `TraceEvent` with its origin: ``direct`` for host code
calling the catalog, ``agent`` for searches made through the capability tools
(eager recall included). `core.capabilities.CapabilityHost` attaches one trace
to the catalogs it serves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Origin = Literal["direct", "agent"]
ORIGINS: tuple[str, ...] = ("direct", "agent")


@dataclass(frozen=True)
class TraceHit:
    """One ranked item of a traced search."""

    id: str
    score: float
    rank: int


@dataclass(frozen=True)
class TraceEvent:
    """One search: who asked (`origin`), what, how, what came back and how long it took."""

    query: str
    method: str
    hits: tuple[TraceHit, ...]
    duration_ms: float
    origin: Origin
    timestamp: float
    target: Literal["tools", "skills"] = "tools"
    top_k: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with camelCase-free flat keys."""
        return {
            "query": self.query,
            "method": self.method,
            "hits": [{"id": h.id, "score": h.score, "rank": h.rank} for h in self.hits],
            "duration_ms": self.duration_ms,
            "origin": self.origin,
            "timestamp": self.timestamp,
            "target": self.target,
            "top_k": self.top_k,
        }


class Trace:
    """An append-only log of `TraceEvent`s.

    Args:
        clock: returns the wall-clock timestamp of events (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._events: list[TraceEvent] = []

    def record(self, event: TraceEvent) -> None:
        self._events.append(event)

    @property
    def events(self) -> tuple[TraceEvent, ...]:
        return tuple(self._events)

    def by_origin(self, origin: Origin) -> tuple[TraceEvent, ...]:
        return tuple(e for e in self._events if e.origin == origin)

    def clear(self) -> None:
        self._events.clear()

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(tuple(self._events))

    def __len__(self) -> int:
        return len(self._events)
