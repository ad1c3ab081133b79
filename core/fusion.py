"""Reciprocal Rank Fusion: merge ranked runs from several retrieval arms.

A pure function, as in pyserini's fusion: the fusion constant (``rrf_k``), the
depth each run is read to (``depth``) and the length of the output (``k``) are
three separate arguments.

For every id, the fused score is the sum, over the runs it appears in (within
``depth``), of ``1 / (rrf_k + rank)`` with ``rank`` 0-based: the top hit of a
run contributes ``1/60`` with the default ``rrf_k = 60``. Results are ordered
by score descending, then id ascending (Python string order, which for ``str``
is code-point order), and cut to ``k``.

Arithmetic is in Python floats (IEEE float64). A hit's score is
``math.fsum`` of its shares, the correctly rounded sum, so it does not depend
on the order of the runs and two ids with the same multiset of ranks tie
exactly (and are then ordered by id). Each `FusedHit` carries its per-arm
contributions, and ``math.fsum(c.share for c in hit.contributions)`` equals
``hit.score`` exactly: the explanation is computed by the same code as the
score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_RRF_K = 60
DEFAULT_DEPTH = 100
DEFAULT_K = 10


@dataclass(frozen=True)
class ArmContribution:
    """What one arm (run) contributed to a fused hit."""

    arm: int
    """Index of the run in the ``runs`` argument (e.g. 0 = BM25, 1 = semantic)."""
    rank: int
    """0-based position of the id in that run."""
    raw_score: float
    """The score the arm itself gave (BM25 score, cosine, ...), for display only."""
    share: float
    """``1 / (rrf_k + rank)``: this arm's part of the fused score."""


@dataclass(frozen=True)
class FusedHit:
    """One fused result: its id, fused score and the contribution of each arm it appeared in."""

    id: str
    score: float
    contributions: tuple[ArmContribution, ...]
    """Ordered by arm index; arms where the id was absent (or below depth) are missing."""

    @property
    def arms(self) -> dict[int, ArmContribution]:
        """The contributions keyed by arm index."""
        return {c.arm: c for c in self.contributions}


def rrf_share(rank: int, rrf_k: int = DEFAULT_RRF_K) -> float:
    """``1 / (rrf_k + rank)`` for a 0-based rank."""
    return 1.0 / (rrf_k + rank)


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def reciprocal_rank_fusion(
    runs: Sequence[Sequence[tuple[str, float]]],
    *,
    rrf_k: int = DEFAULT_RRF_K,
    depth: int = DEFAULT_DEPTH,
    k: int = DEFAULT_K,
) -> list[FusedHit]:
    """Fuse ranked runs by Reciprocal Rank Fusion.

    ``runs``: one ranked list per arm, best first, each item an ``(id, score)``
    pair; the position in the list is the rank (the scores are only carried
    into the explanation). Each run is read to ``depth`` items. ``rrf_k`` >= 1
    is the fusion constant, ``depth`` >= 0 and ``k`` >= 0 (``k = 0`` returns
    nothing). An id repeated within one run, or a non-string id, raises
    `ValueError` naming it.
    """
    _check_int("rrf_k", rrf_k, 1)
    _check_int("depth", depth, 0)
    _check_int("k", k, 0)
    if isinstance(runs, str | bytes) or not isinstance(runs, Sequence):
        raise ValueError(f"runs must be a sequence of ranked runs, got {type(runs).__name__}")

    contributions: dict[str, list[ArmContribution]] = {}
    for arm, run in enumerate(runs):
        if isinstance(run, str | bytes) or not isinstance(run, Sequence):
            raise ValueError(
                f"run {arm} must be a sequence of (id, score) pairs, got {type(run).__name__}"
            )
        seen: set[str] = set()
        for rank, item in enumerate(run[:depth]):
            try:
                doc_id, raw = item
                raw = float(raw)
            except (TypeError, ValueError):
                raise ValueError(
                    f"run {arm}, rank {rank}: expected an (id, score) pair, got {item!r}"
                ) from None
            if not isinstance(doc_id, str):
                raise ValueError(f"run {arm}, rank {rank}: id must be a string, got {doc_id!r}")
            if doc_id in seen:
                raise ValueError(f"run {arm}: id {doc_id!r} appears more than once (rank {rank})")
            seen.add(doc_id)
            contributions.setdefault(doc_id, []).append(
                ArmContribution(arm=arm, rank=rank, raw_score=raw, share=rrf_share(rank, rrf_k))
            )

    hits = [
        FusedHit(id=doc_id, score=math.fsum(c.share for c in parts), contributions=tuple(parts))
        for doc_id, parts in contributions.items()
    ]
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits[:k]
