"""The catalog facade: register tools or skills, search them, explain a score.

`ToolCatalog` and `SkillCatalog` keep a BM25 index (always) and, when
constructed with ``method="semantic"`` or ``"hybrid"``, an embedding index
over the same projection text. ``search`` is BM25-only (it raises on a
semantic/hybrid catalog); ``search_with`` runs any method synchronously;
``search_async`` wraps it for async callers (it does not yield to the event
loop while embedding the query).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from core.analysis import DEFAULT_ANALYZER, Analyzer
from core.bm25 import BM25Index
from core.catalog import Catalog, Skill, Tool, load_catalog, parse_tool, require_items
from core.embedding import (
    Embedder,
    EmbeddingCache,
    EmbeddingSpec,
    embed_with_cache,
    make_embedder,
    rank_by_cosine,
)
from core.errors import QueryError
from core.fusion import DEFAULT_DEPTH, DEFAULT_RRF_K, reciprocal_rank_fusion
from core.projection import Part, skill_parts, tool_parts
from core.rerank import Reranker, run_rerank
from core.text import did_you_mean
from core.trace import ORIGINS, Origin, Trace, TraceEvent, TraceHit

METHODS = ("bm25", "semantic", "hybrid")
RRF_K = DEFAULT_RRF_K  # hybrid fuses with fusion's defaults: k = 60,
HYBRID_DEPTH = DEFAULT_DEPTH  # and each arm to depth max(100, top_k)
ARMS = ("bm25", "semantic")
ProgressCallback = Callable[[int, int], None]


def _no_terms_reason(query: str) -> str:
    if not query.strip():
        return "the query is empty"
    return "the query has no searchable words (empty, or only stop words)"


def _share(rank: int | None) -> float:
    """The RRF share of an arm rank within the fusion depth (0 outside it)."""
    return 1.0 / (RRF_K + rank) if rank is not None and rank < HYBRID_DEPTH else 0.0


def _arms(contributions: Mapping[int, Any]) -> tuple[ArmScore, ...]:
    """ArmScores of a fused hit, in ARMS order; an arm that missed the hit has rank None."""
    out = []
    for i, name in enumerate(ARMS):
        c = contributions.get(i)
        out.append(ArmScore(name, c.rank, c.raw_score, c.share) if c else ArmScore(name, None, None, 0.0))
    return tuple(out)


def _is_embedder(obj: object) -> bool:
    return all(hasattr(obj, a) for a in ("embed_documents", "embed_query", "fingerprint", "dimension"))


def _check_floors(floors: Mapping[str, float] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for arm, value in (floors or {}).items():
        if arm not in ("bm25", "semantic"):
            raise QueryError(f"relevance floors are per arm: 'bm25' or 'semantic', got {arm!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise QueryError(f"the {arm} floor must be a number, got {value!r}")
        out[arm] = float(value)
    return out


def parse_floors(values: Iterable[str] | None, *, bare_arm: str | None = None) -> dict[str, float]:
    """The ``--floor`` option: ``["bm25=5", "semantic=0.3"]`` -> ``{"bm25": 5.0, "semantic": 0.3}``.

    With ``bare_arm``, a bare number is that arm's floor (``eval --floor 3`` means
    ``--floor bm25=3``). Raises QueryError naming the bad value and the form to write.
    """
    floors: dict[str, float] = {}
    for value in values or ():
        arm, sep, number = value.partition("=")
        if not sep and bare_arm is not None:
            arm, number = bare_arm, value
        try:
            floor = float(number)
        except ValueError:
            floor = math.nan
        if (not sep and bare_arm is None) or not math.isfinite(floor):
            raise QueryError(
                f"--floor {value!r}: write ARM=NUMBER, e.g. --floor bm25=5 or --floor semantic=0.35"
            )
        arm = arm.strip()
        if arm not in ARMS:
            raise QueryError(
                f"--floor {value!r}: unknown arm {arm!r}{did_you_mean(arm, ARMS)}; valid arms: {', '.join(ARMS)} "
                "(bm25 raw score, semantic cosine)"
            )
        floors[arm] = floor
    return floors


def check_method(method: str) -> str:
    """Return ``method`` if valid, else raise QueryError listing the valid ones."""
    if method not in METHODS:
        raise QueryError(f"unknown search method {method!r}; valid methods: {', '.join(METHODS)}")
    return method


def check_top_k(top_k: int) -> int:
    """Return ``top_k`` if it is a non-negative integer, else raise QueryError."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise QueryError(f"top_k must be a whole number >= 0, got {top_k!r}")
    return top_k


@dataclass(frozen=True)
class ArmScore:
    """One retrieval arm's view of a hit (on hybrid hits, and in semantic/hybrid explanations).

    Attributes:
        method: "bm25" or "semantic".
        rank: 0-based rank in that arm, or None when the arm did not return it.
        score: the arm's raw score (BM25 score or cosine), or None.
        share: the arm's Reciprocal Rank Fusion share 1 / (60 + rank), or 0.
    """

    method: str
    rank: int | None
    score: float | None
    share: float


@dataclass(frozen=True)
class Hit:
    """One ranked result. ``rank`` is 0-based; ``arms`` is filled for hybrid results."""

    id: str
    score: float
    rank: int
    arms: tuple[ArmScore, ...] = ()


@dataclass(frozen=True)
class SearchResult(Sequence[Hit]):
    """The hits of one search, plus why it returned what it did.

    Behaves as a sequence of `Hit`. ``reason`` is set when the result is empty
    for a reason the user should see (no query terms, relevance floor, ...);
    ``notes`` carries non-fatal events (a reranker that timed out, ...).
    """

    hits: tuple[Hit, ...]
    method: str
    query: str
    reason: str | None = None
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, i):  # type: ignore[override]
        return self.hits[i]

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def ids(self) -> list[str]:
        """The hit ids in rank order."""
        return [h.id for h in self.hits]


@dataclass(frozen=True)
class TermExplanation:
    """One query token's part in one item's BM25 score.

    Attributes:
        term: the index term (stemmed).
        word: the query word it came from.
        tf: occurrences of the term in the item's projection.
        df: items in the catalog containing the term.
        idf, dl, avgdl: the BM25 inputs, as scored (float32 values).
        contribution: idf times the saturated tf part, tf * (k1 + 1) / (tf + norm);
            the contributions add up to the score.
        fields: projection paths where the term occurs in this item.
    """

    term: str
    word: str
    tf: int
    df: int
    idf: float
    dl: int
    avgdl: float
    contribution: float
    fields: tuple[str, ...]


@dataclass(frozen=True)
class QueryWord:
    """What happened to one query word: ``status`` is one of
    ``matched`` (in this item), ``missing`` (in the catalog, not in this item),
    ``absent`` (in no item of the catalog) or ``stop_word`` (dropped)."""

    word: str
    term: str | None
    status: str


@dataclass(frozen=True)
class Explanation:
    """Why one item scores what it does for one query.

    ``score`` is the BM25 score, equal to the float32 sum of the term
    contributions in query order. ``rank`` is the item's 0-based BM25 rank in
    the whole catalog (None when it matches no query term). ``arms`` holds the
    semantic and fused view when asked for with method semantic or hybrid.
    """

    query: str
    item_id: str
    score: float
    rank: int | None
    terms: tuple[TermExplanation, ...]
    words: tuple[QueryWord, ...]
    method: str = "bm25"
    arms: tuple[ArmScore, ...] = ()
    fused_score: float | None = None

    @property
    def matched(self) -> bool:
        """Whether the item shares at least one term with the query."""
        return any(t.tf for t in self.terms)

    @property
    def stop_words(self) -> tuple[str, ...]:
        """Query words dropped as stop words, each once, in query order."""
        return tuple(dict.fromkeys(w.word for w in self.words if w.status == "stop_word"))

    @property
    def absent_terms(self) -> tuple[str, ...]:
        """Query terms that occur in no item of the catalog."""
        return tuple(dict.fromkeys(w.term for w in self.words if w.status == "absent"))  # type: ignore[misc]

    @property
    def missing_terms(self) -> tuple[str, ...]:
        """Query terms the catalog has but this item lacks."""
        return tuple(dict.fromkeys(w.term for w in self.words if w.status == "missing"))  # type: ignore[misc]


Item = TypeVar("Item", Tool, Skill)


class _Catalog(Generic[Item]):
    """Shared machinery of `ToolCatalog` and `SkillCatalog`."""

    _item_type: type
    _kind: str

    def __init__(
        self,
        items: Iterable[Item] = (),
        *,
        method: str = "bm25",
        analyzer: Analyzer | None = None,
        model: EmbeddingSpec | str | Embedder | None = None,
        cache_dir: str | Path | None = None,
        persistent_cache: bool = True,
        progress: ProgressCallback | None = None,
        floors: Mapping[str, float] | None = None,
        reranker: Reranker | None = None,
        rerank_depth: int = 20,
        rerank_timeout_s: float = 2.0,
        rerank_on_error: str = "fallback",
        trace: Trace | None = None,
    ) -> None:
        self.method = check_method(method)
        self.trace = trace
        self.analyzer = analyzer or DEFAULT_ANALYZER
        self.floors = _check_floors(floors)
        self.reranker = reranker
        self.rerank_depth = rerank_depth
        self.rerank_timeout_s = rerank_timeout_s
        self.rerank_on_error = rerank_on_error
        self._index = BM25Index(self.analyzer)
        self._items: dict[str, Item] = {}
        self._lock = threading.RLock()
        self.progress = progress  # (done, total) callback while embedding; None for none
        # Dense state exists only for semantic/hybrid catalogs: a BM25 catalog
        # loads no model and holds no vectors (and never imports torch).
        self._embedder: Embedder | None = None
        self._ecache: EmbeddingCache | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._matrix: tuple[list[str], np.ndarray] | None = None
        if self.method != "bm25":
            self._embedder = model if _is_embedder(model) else make_embedder(model)  # type: ignore[arg-type]
            self._ecache = EmbeddingCache.for_embedder(
                self._embedder, cache_dir=cache_dir, persistent=persistent_cache
            )
        elif model is not None and not isinstance(model, str | EmbeddingSpec) and not _is_embedder(model):
            raise QueryError(f"model must be a spec string, EmbeddingSpec or Embedder, got {type(model).__name__}")
        self.register(items)

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model of a semantic/hybrid catalog (None for BM25)."""
        return self._embedder

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        """The embedding cache of a semantic/hybrid catalog (None for BM25)."""
        return self._ecache

    # -- items -----------------------------------------------------------------

    def _parts(self, item: Item) -> list[Part]:
        raise NotImplementedError

    def projection_text(self, item: Item) -> str:
        """The text the index sees for an item."""
        return " ".join(p.text for p in self._parts(item))

    def _coerce(self, item: Any, position: int) -> Item:
        if isinstance(item, self._item_type):
            return item  # type: ignore[return-value]
        if isinstance(item, Mapping):
            return self._from_mapping(dict(item), position)
        raise QueryError(
            f"{self._kind} #{position} is a {type(item).__name__}; register "
            f"{self._item_type.__name__} objects or dicts with at least a name"
        )

    def _from_mapping(self, data: dict[Any, Any], position: int) -> Item:
        from pydantic import ValidationError

        try:
            data.setdefault("id", data.get("name"))
            return self._item_type.model_validate(data)  # type: ignore[attr-defined, no-any-return]
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(map(str, error["loc"]))
            name = repr(data.get("name"))
            name = name if len(name) <= 60 else name[:60] + "..."
            raise QueryError(
                f"{self._kind} #{position} ({name}) is not a valid "
                f"{self._item_type.__name__}: {field}: {error['msg']}"
            ) from None

    def register(self, items: Item | Iterable[Item]) -> list[str]:
        """Add or replace one item or many; returns the ids whose projection changed.

        Re-registering an unchanged item does nothing. Only the changed items'
        terms are touched in the BM25 index, and (semantic/hybrid) only their
        texts are embedded, in one batch, through the embedding cache. If
        embedding fails, `EmbedderError` is raised and nothing is registered.
        A tool given as a dict is checked like one read from a file
        (`core.catalog.parse_tool`); a bad one raises `CatalogError` naming it.
        """
        if isinstance(items, self._item_type | Mapping):
            items = [items]  # type: ignore[list-item]
        elif not isinstance(items, Iterable):
            raise QueryError(
                f"register() takes a {self._item_type.__name__} or a dict, or an iterable of "
                f"them; got {type(items).__name__}"
            )
        batch: dict[str, Item] = {}
        for i, item in enumerate(items):
            coerced = self._coerce(item, i)
            batch.pop(coerced.id, None)  # a later item of the same id wins
            batch[coerced.id] = coerced
        with self._lock:
            changed = [
                item_id
                for item_id, item in batch.items()
                if item_id not in self._items or self._parts(self._items[item_id]) != self._parts(item)
            ]
            texts = {item_id: self.projection_text(batch[item_id]) for item_id in changed}
            if self._embedder is not None and changed:
                vectors = embed_with_cache(
                    self._embedder, [texts[i] for i in changed], self._ecache, self.progress
                )
                for item_id, vector in zip(changed, vectors, strict=True):
                    self._vectors[item_id] = vector
                self._matrix = None
            self._items.update(batch)
            self._index.add_many((item_id, texts[item_id]) for item_id in changed)
        return changed

    def unregister(self, item_id: str) -> None:
        """Remove an item; raises QueryError naming it when it is not registered."""
        with self._lock:
            if item_id not in self._items:
                raise self._unknown(item_id)
            del self._items[item_id]
            self._index.remove(item_id)
            if self._vectors.pop(item_id, None) is not None:
                self._matrix = None

    def get(self, item_id: str) -> Item:
        """The registered item with this id; QueryError when there is none."""
        try:
            return self._items[item_id]
        except KeyError:
            raise self._unknown(item_id) from None

    def _unknown(self, item_id: str) -> QueryError:
        """The error for an id that is not registered: the id, the closest ids, the fix."""
        hint = did_you_mean(str(item_id), self._items)
        return QueryError(
            f"no {self._kind} {item_id!r} is registered{hint}. Fix: use an id from the catalog; "
            f"ids are listed by `ranklens search CATALOG QUERY` and in the catalog file"
        )

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> list[Item]:
        """Registered items in registration order."""
        return list(self._items.values())

    @property
    def profile(self) -> str:
        """The analyzer profile the index was built with."""
        return self._index.profile

    @property
    def index(self) -> BM25Index:
        """The BM25 index (read-only use)."""
        return self._index

    # -- search ----------------------------------------------------------------

    def _bm25(self, query: str, top_k: int) -> SearchResult:
        terms = self.analyzer.analyze(query)
        reason = _no_terms_reason(query) if not terms else None
        ranked = self._index.search_terms(terms, top_k)
        if terms and not ranked and top_k:
            reason = f"no {self._kind} shares a word with the query"
        ranked, floor_reason = self._apply_floor("bm25", ranked)
        hits = tuple(Hit(i, s, r) for r, (i, s) in enumerate(ranked))
        return self._finish(SearchResult(hits, "bm25", query, reason or floor_reason))

    def search(self, query: str, top_k: int = 10, *, origin: Origin = "direct") -> SearchResult:
        """Synchronous BM25 search: matching items only, best first, ties by id."""
        check_top_k(top_k)
        if self.method != "bm25":
            raise QueryError(
                f"search() is BM25-only, but this catalog was constructed with "
                f"method={self.method!r}; use `await catalog.search_async(query, top_k)`"
            )
        return self.search_with(query, top_k, "bm25", origin=origin)

    async def search_async(
        self, query: str, top_k: int = 10, method: str | None = None, *, origin: Origin = "direct"
    ) -> SearchResult:
        """Search with any method; ``method`` overrides the catalog's default for this call."""
        return self.search_with(query, top_k, method, origin=origin)

    def search_with(
        self, query: str, top_k: int = 10, method: str | None = None, *, origin: Origin = "direct"
    ) -> SearchResult:
        """Synchronous search with any method (what `search_async` runs).

        With a `trace` attached, records the search as a `TraceEvent` of the
        given ``origin`` ("direct" for host code, "agent" for the capability tools).
        """
        if origin not in ORIGINS:
            raise QueryError(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
        if self.trace is None:
            return self._run(query, top_k, method)
        timestamp = self.trace.clock()
        started = time.perf_counter()
        result = self._run(query, top_k, method)
        self.trace.record(
            TraceEvent(
                query=query,
                method=result.method,
                hits=tuple(TraceHit(h.id, float(h.score), h.rank) for h in result),
                duration_ms=(time.perf_counter() - started) * 1000.0,
                origin=origin,
                timestamp=timestamp,
                target=f"{self._kind}s",  # type: ignore[arg-type]
                top_k=top_k,
            )
        )
        return result

    def _run(self, query: str, top_k: int, method: str | None) -> SearchResult:
        check_top_k(top_k)
        method = check_method(method or self.method)
        if method == "bm25":
            return self._bm25(query, top_k)
        if self._embedder is None:
            raise QueryError(
                f"{method} search needs embeddings, and this catalog was constructed with "
                f"method={self.method!r}, which loads no model; construct it with "
                f'method="semantic" or method="hybrid"'
            )
        if not query.strip():
            return SearchResult((), method, query, _no_terms_reason(query))
        if method == "semantic":
            return self._finish(self._semantic(query, top_k))
        return self._finish(self._hybrid(query, top_k))

    def _dense_matrix(self) -> tuple[list[str], np.ndarray]:
        with self._lock:
            if self._matrix is None:
                # Rows in id order, not registration order: a BLAS matrix-vector product
                # can round a row differently depending on its position, and the same
                # tools loaded in another order must score the same, bit for bit.
                ids = sorted(self._vectors)
                dim = self._embedder.dimension if self._embedder else 0
                mat = np.stack([self._vectors[i] for i in ids]) if ids else np.zeros((0, dim), np.float32)
                self._matrix = (ids, mat)
            return self._matrix

    def _semantic_ranking(self, query: str, depth: int) -> list[tuple[str, float]]:
        ids, mat = self._dense_matrix()
        qvec = self._ecache.embed_query(self._embedder, query)  # type: ignore[union-attr, arg-type]
        return rank_by_cosine(qvec, mat, ids, depth, ids_sorted=True)  # rows are in id order

    def _semantic(self, query: str, top_k: int) -> SearchResult:
        ranked, floor_reason = self._apply_floor("semantic", self._semantic_ranking(query, top_k))
        hits = tuple(Hit(i, s, r) for r, (i, s) in enumerate(ranked))
        return SearchResult(hits, "semantic", query, floor_reason)

    def _hybrid(self, query: str, top_k: int) -> SearchResult:
        depth = max(HYBRID_DEPTH, top_k)
        bm25, bm_reason = self._apply_floor(
            "bm25", self._index.search_terms(self.analyzer.analyze(query), depth)
        )
        sem, sem_reason = self._apply_floor("semantic", self._semantic_ranking(query, depth))
        fused = reciprocal_rank_fusion([bm25, sem], rrf_k=RRF_K, depth=depth, k=top_k)
        hits = tuple(
            Hit(f.id, f.score, r, _arms(f.arms))
            for r, f in enumerate(fused)
        )
        reason = None if hits else (bm_reason and sem_reason and f"{bm_reason}; {sem_reason}")
        return SearchResult(hits, "hybrid", query, reason)

    def _apply_floor(
        self, arm: str, ranked: list[tuple[str, float]]
    ) -> tuple[list[tuple[str, float]], str | None]:
        floor = self.floors.get(arm)
        if floor is None or not ranked:
            return ranked, None
        kept = [(i, s) for i, s in ranked if s >= floor]
        if kept:
            return kept, None
        return kept, (
            f"no {self._kind} reached the {arm} relevance floor {floor:g} "
            f"(best {arm} score {ranked[0][1]:.4g})"
        )

    def _finish(self, result: SearchResult) -> SearchResult:
        """Apply the optional reranker to the top of a result."""
        if self.reranker is None or not result.hits:
            return result
        head = result.hits[: self.rerank_depth]
        outcome = run_rerank(
            self.reranker,
            result.query,
            [(h.id, self.projection_text(self._items[h.id])) for h in head],
            timeout_s=self.rerank_timeout_s,
            on_error=self.rerank_on_error,  # type: ignore[arg-type]
        )
        if not outcome.reranked:
            note = f"reranker not applied: {outcome.reason}; kept the {result.method} order"
            return replace(result, notes=(*result.notes, note))
        by_id = {h.id: h for h in head}
        scores = outcome.scores or ()
        reordered = [
            replace(by_id[i], score=float(sc), rank=r)
            for r, (i, sc) in enumerate(zip(outcome.order, scores, strict=True))
        ]
        rest = [replace(h, rank=len(reordered) + j) for j, h in enumerate(result.hits[len(head):])]
        note = f"top {len(head)} reranked by {type(self.reranker).__name__} in {outcome.seconds * 1000:.0f} ms"
        return replace(result, hits=tuple(reordered + rest), notes=(*result.notes, note))

    # -- explanation -----------------------------------------------------------

    def term_fields(self, item: Item) -> dict[str, tuple[str, ...]]:
        """For each index term of an item, the projection paths it occurs in."""
        out: dict[str, list[str]] = {}
        for part in self._parts(item):
            for term in self.analyzer.analyze(part.text):
                paths = out.setdefault(term, [])
                if part.path not in paths:
                    paths.append(part.path)
        return {t: tuple(p) for t, p in out.items()}

    def explain(self, query: str, item_id: str, method: str = "bm25") -> Explanation:
        """Per query term: tf, df, idf, dl, avgdl, contribution and matched fields.

        Works for any registered item, inside the top k or not. The
        contributions add up (float32, query order) to the item's BM25 score.
        With ``method="semantic"`` or ``"hybrid"`` (on a catalog that has
        embeddings) ``arms`` also gives each arm's rank, raw score and RRF
        share 1 / (60 + rank), and ``fused_score`` their sum.
        """
        check_method(method)
        item = self.get(item_id)
        tokens = self.analyzer.tokens(query)
        terms = [t.term for t in tokens if t.term is not None]
        with self._lock:
            stats, score = self._index.explain_terms(terms, item_id)
            rank = self._index.rank_of(terms, item_id)
        fields = self.term_fields(item)
        words: list[QueryWord] = []
        explained: list[TermExplanation] = []
        it = iter(stats)
        for tok in tokens:
            if tok.term is None:
                words.append(QueryWord(tok.word, None, "stop_word"))
                continue
            st = next(it)
            status = "matched" if st.tf else ("missing" if st.df else "absent")
            words.append(QueryWord(tok.word, tok.term, status))
            explained.append(
                TermExplanation(
                    st.term, tok.word, st.tf, st.df, st.idf, st.dl, st.avgdl,
                    st.contribution, fields.get(st.term, ()),
                )
            )
        exp = Explanation(query, item_id, score, rank, tuple(explained), tuple(words))
        if method == "bm25":
            return exp
        if self._embedder is None:
            raise QueryError(
                f"a {method} explanation needs embeddings; construct the catalog with "
                f'method="semantic" or method="hybrid"'
            )
        arms = self._arm_ranks(query, item_id, rank, score)
        fused = sum(a.share for a in arms) if method == "hybrid" else None
        return replace(exp, method=method, arms=arms, fused_score=fused)

    def _arm_ranks(
        self, query: str, item_id: str, bm25_rank: int | None, bm25_score: float
    ) -> tuple[ArmScore, ...]:
        """Each arm's full-catalog rank of one item, its raw score and RRF share."""
        ids, _ = self._dense_matrix()
        ranking = self._semantic_ranking(query, len(ids))
        sem_rank = next((r for r, (i, _) in enumerate(ranking) if i == item_id), None)
        sem_score = ranking[sem_rank][1] if sem_rank is not None else None
        return (
            ArmScore("bm25", bm25_rank, bm25_score if bm25_rank is not None else None, _share(bm25_rank)),
            ArmScore("semantic", sem_rank, sem_score, _share(sem_rank)),
        )


class ToolCatalog(_Catalog[Tool]):
    """A searchable catalog of tools.

    Args:
        items: tools to register at once (positional: ``ToolCatalog(tools)``).
        method: the default search method, "bm25" (default), "semantic" or "hybrid".
        analyzer: the analysis chain (default: the reference engine's).
        model: embedding model of a semantic/hybrid catalog (spec string, `EmbeddingSpec`
            or `Embedder`; default: the bundled all-MiniLM-L6-v2).
        cache_dir, persistent_cache: where embeddings are cached on disk.
        progress: ``(done, total)`` callback while embedding.
        floors: relevance floors per arm, e.g. ``{"bm25": 5.0, "semantic": 0.3}``.
        reranker, rerank_depth, rerank_timeout_s, rerank_on_error: the optional reranker.
        trace: a `core.trace.Trace` recording every search.
    """

    _item_type = Tool
    _kind = "tool"

    def _parts(self, item: Tool) -> list[Part]:
        return tool_parts(item.name, item.description, item.input_schema, item.output_schema)

    def _from_mapping(self, data: dict[Any, Any], position: int) -> Tool:
        # The loaders' checks (schema depth, cycles, non-finite numbers, sizes), so a
        # dict registered here is held to the same rules as a tool read from a file.
        return parse_tool(data, f"{self._kind} #{position}")

    @property
    def tools(self) -> list[Tool]:
        """Registered tools in registration order."""
        return self.items


class SkillCatalog(_Catalog[Skill]):
    """A searchable catalog of skills (name, description and tags are indexed; the body is not)."""

    _item_type = Skill
    _kind = "skill"

    def _parts(self, item: Skill) -> list[Part]:
        return skill_parts(item.name, item.description, item.tags)

    @property
    def skills(self) -> list[Skill]:
        """Registered skills in registration order."""
        return self.items


def catalog_for(
    catalog: Catalog, *, method: str = "bm25", **options: Any
) -> ToolCatalog | SkillCatalog:
    """A searchable catalog for a loaded `Catalog`: its tools, or its skills when it has only skills."""
    if catalog.skills and not catalog.tools:
        return SkillCatalog(catalog.skills, method=method, **options)
    return ToolCatalog(catalog.tools, method=method, **options)


def open_catalog(
    path: str | Path, *, method: str = "bm25", **options: Any
) -> ToolCatalog | SkillCatalog:
    """Load a catalog file or skills folder and index it (see `catalog_for`).

    Raises CatalogError when the file has no tools and no skills.
    """
    check_method(method)
    return catalog_for(require_items(load_catalog(path), path), method=method, **options)
