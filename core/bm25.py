"""An incremental, vectorised BM25 index whose scores are the reference engine's, bit for bit.

Scoring (../shared/reference/engine-contract.md, "Scoring"), all in float32:

    idf  = ln(1 + (N - n + 0.5) / (n + 0.5))          ln = the C library's logf (below)
    norm = k1 * ((1 - b) + b * (dl / avgdl))           per document
    part = tf * (k1 + 1) / (tf + norm)
    score = sum over query tokens, in query order, duplicates included, of idf * part

with k1 = 0.9, b = 0.4, avgdl = (total tokens / N) in float64 cast to float32.
The operations and their order are exactly the engine's: numpy's float32
``+ - * /`` are IEEE-rounded like Rust's, and ``ln`` is the C library's
``logf`` (what Rust's ``f32::ln`` calls; glibc's is not correctly rounded in
about 1% of cases, and numpy's float32 ``log`` differs from both).

Layout: documents live in slots; each term has a posting list of (slot, tf)
in growable arrays, so `add` and `remove` touch only the document's own terms.
Removed slots are tombstoned and compacted away once they outnumber the live
ones. A query sums one vectorised contribution array per query token.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from core.analysis import DEFAULT_ANALYZER, Analyzer

K1 = np.float32(0.9)
B = np.float32(0.4)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_K1_PLUS_1 = K1 + _ONE
_ONE_MINUS_B = _ONE - B


def _load_logf():
    """The C library's single-precision ``logf``; a float64 log rounded once if there is none."""
    name = ctypes.util.find_library("m")
    try:
        libm = ctypes.CDLL(name)
        fn = libm.logf
    except (OSError, AttributeError, TypeError):  # pragma: no cover - no C math library
        return lambda x: math.log(x)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


_logf = _load_logf()


def idf(n_docs: int, df: int) -> np.float32:
    """Lucene idf in float32, never negative: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    x = _ONE + (np.float32(n_docs) - np.float32(df) + _HALF) / (np.float32(df) + _HALF)
    return np.float32(_logf(float(x)))


def doc_norm(dl: np.ndarray, avgdl: np.float32) -> np.ndarray:
    """k1 * ((1 - b) + b * (dl / avgdl)), elementwise in float32, in that order."""
    return K1 * (_ONE_MINUS_B + B * (dl.astype(np.float32) / avgdl))


def term_part(tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """tf * (k1 + 1) / (tf + norm), elementwise in float32."""
    tf = tf.astype(np.float32)
    return (tf * _K1_PLUS_1) / (tf + norm)


def average_length(total_tokens: int, n_docs: int) -> np.float32:
    """avgdl: computed in float64, then cast to float32."""
    return np.float32(total_tokens / n_docs) if n_docs else np.float32(0.0)


@dataclass(frozen=True)
class TermStat:
    """One query token's share of one document's score.

    ``contribution`` is idf * part for this token; the contributions of all
    tokens of a query, added in query order in float32, are the score exactly.
    """

    term: str
    tf: int
    df: int
    idf: float
    dl: int
    avgdl: float
    contribution: float


class BM25Index:
    """BM25 over analysed documents, updated in place by `add` and `remove`.

    Args:
        analyzer: the chain used for documents and queries alike; its profile
            is recorded in `profile`.

    Thread-safe: mutation and scoring take one lock; the small accessors
    (`df`, `avgdl`, `len`) read without it.
    """

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer or DEFAULT_ANALYZER
        self.profile = self.analyzer.profile
        self._lock = threading.RLock()
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._post_slots: list[array] = []  # term id -> slots ('i')
        self._post_tf: list[array] = []  # term id -> tf ('i'), aligned with slots
        self._df: list[int] = []  # term id -> live document count
        self._slot_of: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._slot_terms: list[np.ndarray | None] = []  # unique term ids per slot
        self._dl = array("i")
        self._alive = array("b")
        self._dead = 0
        self._total_tokens = 0
        self._norm: np.ndarray | None = None  # cached per-slot norm, reset on change

    # -- size and membership -------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    def total_tokens(self) -> int:
        """Tokens of all live documents after stop-word removal."""
        return self._total_tokens

    @property
    def avgdl(self) -> np.float32:
        """Average document length (float32, as scored)."""
        return average_length(self._total_tokens, len(self._slot_of))

    def df(self, term: str) -> int:
        """How many live documents contain ``term``."""
        tid = self._term_ids.get(term)
        return 0 if tid is None else self._df[tid]

    # -- mutation --------------------------------------------------------------

    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``, replacing any document of that id."""
        self.add_terms(doc_id, self.analyzer.analyze(text))

    def add_terms(self, doc_id: str, terms: Sequence[str]) -> None:
        """Index already analysed terms under ``doc_id`` (replacing)."""
        with self._lock:
            if doc_id in self._slot_of:
                self._remove_locked(doc_id)
            self._add_locked(doc_id, terms)

    def add_many(self, docs: Iterable[tuple[str, str]]) -> None:
        """Index many (id, text) pairs; a later pair replaces an earlier one of the same id."""
        analyze = self.analyzer.analyze
        with self._lock:
            for doc_id, text in docs:
                if doc_id in self._slot_of:
                    self._remove_locked(doc_id)
                self._add_locked(doc_id, analyze(text))

    def remove(self, doc_id: str) -> None:
        """Remove a document; raises KeyError naming it when it is not indexed."""
        with self._lock:
            if doc_id not in self._slot_of:
                raise KeyError(f"no document {doc_id!r} in the index")
            self._remove_locked(doc_id)
            if self._dead > 1024 and self._dead > len(self._slot_of):
                self._compact_locked()

    def _term_id(self, term: str) -> int:
        tid = self._term_ids.get(term)
        if tid is None:
            tid = len(self._terms)
            self._term_ids[term] = tid
            self._terms.append(term)
            self._post_slots.append(array("i"))
            self._post_tf.append(array("i"))
            self._df.append(0)
        return tid

    def _add_locked(self, doc_id: str, terms: Sequence[str]) -> None:
        slot = len(self._slot_ids)
        counts = Counter(terms)
        tids = np.empty(len(counts), dtype=np.int32)
        for i, (term, tf) in enumerate(counts.items()):
            tid = self._term_id(term)
            tids[i] = tid
            self._post_slots[tid].append(slot)
            self._post_tf[tid].append(tf)
            self._df[tid] += 1
        self._slot_of[doc_id] = slot
        self._slot_ids.append(doc_id)
        self._slot_terms.append(tids)
        self._dl.append(len(terms))
        self._alive.append(1)
        self._total_tokens += len(terms)
        self._norm = None

    def _remove_locked(self, doc_id: str) -> None:
        slot = self._slot_of.pop(doc_id)
        tids = self._slot_terms[slot]
        if tids is not None:
            for tid in tids.tolist():
                self._df[tid] -= 1
        self._slot_ids[slot] = None
        self._slot_terms[slot] = None
        self._alive[slot] = 0
        self._total_tokens -= self._dl[slot]
        self._dead += 1
        self._norm = None

    def _compact_locked(self) -> None:
        """Drop tombstoned slots and renumber the live ones."""
        alive = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
        new_slot = np.cumsum(alive, dtype=np.int64) - 1
        for tid in range(len(self._terms)):
            slots = np.frombuffer(self._post_slots[tid], dtype=np.int32)
            tfs = np.frombuffer(self._post_tf[tid], dtype=np.int32)
            keep = alive[slots]
            new_slots = array("i", new_slot[slots[keep]].astype(np.int32).tobytes())
            new_tfs = array("i", tfs[keep].tobytes())
            del slots, tfs
            self._post_slots[tid] = new_slots
            self._post_tf[tid] = new_tfs
        live = np.flatnonzero(alive).tolist()
        dl = np.frombuffer(self._dl, dtype=np.int32)[alive].copy()
        self._slot_ids = [self._slot_ids[s] for s in live]
        self._slot_terms = [self._slot_terms[s] for s in live]
        self._slot_of = {doc_id: i for i, doc_id in enumerate(self._slot_ids)}  # type: ignore[misc]
        self._dl = array("i", dl.tobytes())
        self._alive = array("b", b"\x01" * len(live))
        self._dead = 0
        self._norm = None

    # -- scoring ---------------------------------------------------------------

    def _norms(self) -> np.ndarray:
        if self._norm is None:
            dl = np.frombuffer(self._dl, dtype=np.int32)
            if self._total_tokens:
                self._norm = doc_norm(dl, self.avgdl)
            else:  # no tokens at all: nothing can match, and dl / avgdl would be 0 / 0
                self._norm = np.ones(len(dl), np.float32)
        return self._norm

    def _posting(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """Live (slots, tf) of a term, as fresh arrays."""
        slots = np.frombuffer(self._post_slots[tid], dtype=np.int32).copy()
        tfs = np.frombuffer(self._post_tf[tid], dtype=np.int32).copy()
        if self._dead:
            keep = np.frombuffer(self._alive, dtype=np.int8)[slots].astype(bool)
            slots, tfs = slots[keep], tfs[keep]
        return slots, tfs

    def score_terms(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Scores of every slot for analysed query terms, and which slots matched any."""
        with self._lock:
            n_slots = len(self._slot_ids)
            scores = np.zeros(n_slots, dtype=np.float32)
            matched = np.zeros(n_slots, dtype=bool)
            n_docs = len(self._slot_of)
            if not n_docs:
                return scores, matched
            norms = self._norms()
            for term in terms:
                tid = self._term_ids.get(term)
                if tid is None or not self._df[tid]:
                    continue
                slots, tfs = self._posting(tid)
                w = idf(n_docs, self._df[tid])
                scores[slots] = scores[slots] + w * term_part(tfs, norms[slots])
                matched[slots] = True
            return scores, matched

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        """Ranked (id, score) for a query text: matching documents only, ties by id."""
        return self.search_terms(self.analyzer.analyze(query), top_k)

    def search_terms(self, terms: Sequence[str], top_k: int) -> list[tuple[str, float]]:
        """Ranked (id, score) for analysed query terms."""
        if top_k <= 0:
            return []
        with self._lock:
            scores, matched = self.score_terms(terms)
            cand = np.flatnonzero(matched)
            if len(cand) > top_k:
                # Keep every candidate scoring at least the k-th best, ties included.
                kth = np.partition(scores[cand], len(cand) - top_k)[len(cand) - top_k]
                cand = cand[scores[cand] >= kth]
            ids = self._slot_ids
            ranked = sorted(((ids[s], scores[s]) for s in cand.tolist()), key=_order)
        return [(doc_id, float(score)) for doc_id, score in ranked[:top_k]]

    def rank_of(self, terms: Sequence[str], doc_id: str) -> int | None:
        """0-based rank of a document in the full ranking, or None when it matches nothing."""
        with self._lock:
            slot = self._slot_of[doc_id]
            scores, matched = self.score_terms(terms)
            if not matched[slot]:
                return None
            mine = scores[slot]
            higher = matched & (scores > mine)
            tied = np.flatnonzero(matched & (scores == mine))
            ids = self._slot_ids
            return int(higher.sum()) + sum(1 for s in tied.tolist() if ids[s] < doc_id)  # type: ignore[operator]

    def explain_terms(self, terms: Sequence[str], doc_id: str) -> tuple[list[TermStat], float]:
        """Per query token of one document: tf, df, idf, dl, avgdl and contribution.

        Returns the stats and the score; the score is the float32 sum of the
        contributions in query order, computed by the same functions as `search`.
        """
        with self._lock:
            if doc_id not in self._slot_of:
                raise KeyError(f"no document {doc_id!r} in the index")
            slot = self._slot_of[doc_id]
            n_docs = len(self._slot_of)
            dl = self._dl[slot]
            avgdl = self.avgdl
            norm = self._norms()[slot : slot + 1]
            total = np.zeros(1, dtype=np.float32)
            stats = []
            for term in terms:
                tid = self._term_ids.get(term)
                df = 0 if tid is None else self._df[tid]
                tf = 0
                if df:
                    slots = np.frombuffer(self._post_slots[tid], dtype=np.int32)
                    where = np.flatnonzero(slots == slot)
                    if len(where):
                        tf = int(self._post_tf[tid][int(where[0])])
                    del slots
                w = idf(n_docs, df) if df else np.float32(0.0)
                contribution = np.zeros(1, dtype=np.float32)
                if tf:
                    contribution = w * term_part(np.array([tf], dtype=np.int32), norm)
                    total = total + contribution
                stats.append(
                    TermStat(term, tf, df, float(w), dl, float(avgdl), float(contribution[0]))
                )
            return stats, float(total[0])


def _order(item: tuple[str, np.float32]) -> tuple[float, str]:
    """Sort key: score descending, then id ascending (code-point order = UTF-8 byte order)."""
    return (-float(item[1]), item[0])
