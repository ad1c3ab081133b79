"""Optional reranking of the top fused candidates by a cross-encoder.

Off by default. A `Reranker` scores ``(query, candidate text)`` pairs;
`CrossEncoderReranker` wraps a sentence-transformers ``CrossEncoder`` loaded
only from a local folder the user names (never from a hub), importing torch
lazily on the first call. `run_rerank` runs a reranker in a worker thread with
a timeout and, on timeout or error, either falls back to the input order and
says why (``on_error="fallback"``) or raises `RerankerError`
(``on_error="raise"``).

A Python thread cannot be killed: a timed-out call keeps running in its
(daemon) worker until it returns. While it does, further calls with the same
reranker fall back at once ("still busy") instead of piling up threads.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from core.embedding import prefer_passive_openmp, quiet_transformers
from core.errors import RerankerError

OnError = Literal["fallback", "raise"]
ON_ERROR_CHOICES: tuple[str, ...] = ("fallback", "raise")
DEFAULT_TIMEOUT_S = 2.0


@runtime_checkable
class Reranker(Protocol):
    """Scores candidates against a query; higher is better."""

    def rerank(self, query: str, candidates: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        """``candidates`` are ``(id, text)``; returns ``(id, score)`` for each, best first."""
        ...


@dataclass(frozen=True)
class RerankOutcome:
    """The result of `run_rerank`.

    ``order`` holds the candidate ids, best first: the reranker's order
    (score descending, then id) when ``reranked``, else the input order.
    ``scores`` are the reranker's scores parallel to ``order``, or None when it
    fell back. ``reason`` says why it fell back (None when reranked).
    """

    order: tuple[str, ...]
    reranked: bool
    reason: str | None
    scores: tuple[float, ...] | None = None
    seconds: float = 0.0


# --------------------------------------------------------------------------- cross-encoder

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


class CrossEncoderReranker:
    """A `Reranker` over a local sentence-transformers CrossEncoder folder.

    The folder is checked at construction (exists, readable, has
    ``config.json``) without importing torch; the model is loaded on the
    first `rerank`, once per process per (folder, device), with
    ``local_files_only``. Scores are ``CrossEncoder.predict``'s, with the
    model's default activation (a sigmoid of the logit for a single-label
    model); only their order matters.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        max_length: int | None = None,
    ) -> None:
        path = Path(folder).expanduser()
        hint = "point --reranker at a local cross-encoder folder (with config.json, tokenizer and weights)"
        if not path.exists():
            raise RerankerError(f"reranker folder {path} does not exist; {hint}")
        if not path.is_dir():
            raise RerankerError(f"reranker path {path} is not a folder; {hint}")
        try:
            names = {entry.name for entry in os.scandir(path)}
        except OSError as exc:
            raise RerankerError(
                f"cannot read reranker folder {path}: {exc.strerror or exc}; {hint}"
            ) from exc
        if "config.json" not in names:
            raise RerankerError(f"reranker folder {path} has no config.json; {hint}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.folder = path.resolve()
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({str(self.folder)!r})"

    def load(self) -> Any:
        key = (str(self.folder), self.device)
        with _MODELS_LOCK:
            model = _MODELS.get(key)
            if model is not None:
                return model
            prefer_passive_openmp()
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:
                raise RerankerError(
                    f"reranking needs sentence-transformers ({exc}); install it with "
                    "`pip install sentence-transformers`, or turn reranking off"
                ) from exc
            quiet_transformers()
            try:
                model = CrossEncoder(
                    str(self.folder),
                    device=self.device,
                    local_files_only=True,
                    max_length=self.max_length,
                )
            except Exception as exc:
                raise RerankerError(
                    f"could not load the cross-encoder from {self.folder}: {type(exc).__name__}: {exc}; "
                    "check that it is a complete cross-encoder folder, or turn reranking off"
                ) from exc
            _MODELS[key] = model
            return model

    def rerank(self, query: str, candidates: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        items = list(candidates)
        if not items:
            return []
        model = self.load()
        try:
            raw = model.predict(
                [(query, text) for _, text in items],
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        except Exception as exc:
            raise RerankerError(
                f"cross-encoder {self.folder} failed: {type(exc).__name__}: {exc}; turn reranking off "
                "or point --reranker at another model"
            ) from exc
        scores = [float(value) for value in raw.reshape(len(items), -1)[:, 0]]
        ranked = [(doc_id, score) for (doc_id, _), score in zip(items, scores, strict=True)]
        ranked.sort(key=lambda pair: (-pair[1], pair[0]))
        return ranked


# --------------------------------------------------------------------------- running with a timeout

_BUSY: set[int] = set()
_BUSY_LOCK = threading.Lock()


def _validate(
    reranker: Reranker, result: object, candidate_ids: list[str]
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Check a reranker's output covers the candidates exactly once with finite scores."""
    if not isinstance(result, Sequence) or isinstance(result, str | bytes):
        raise RerankerError(
            f"{reranker!r} returned {type(result).__name__}, not a list of (id, score)"
        )
    expected = set(candidate_ids)
    pairs: list[tuple[str, float]] = []
    seen: set[str] = set()
    for item in result:
        try:
            doc_id, score = item
            score = float(score)
        except (TypeError, ValueError):
            raise RerankerError(
                f"{reranker!r} returned {item!r}, not an (id, score) pair"
            ) from None
        if doc_id not in expected:
            raise RerankerError(f"{reranker!r} returned id {doc_id!r}, which is not a candidate")
        if doc_id in seen:
            raise RerankerError(f"{reranker!r} returned id {doc_id!r} twice")
        if not math.isfinite(score):
            raise RerankerError(f"{reranker!r} gave {doc_id!r} the non-finite score {score}")
        seen.add(doc_id)
        pairs.append((doc_id, score))
    missing = expected - seen
    if missing:
        raise RerankerError(f"{reranker!r} dropped candidates {sorted(missing)!r}")
    pairs.sort(key=lambda pair: (-pair[1], pair[0]))
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def run_rerank(
    reranker: Reranker,
    query: str,
    candidates: Sequence[tuple[str, str]],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_error: OnError = "fallback",
) -> RerankOutcome:
    """Rerank ``candidates`` (``(id, text)``, in the input order) in a worker thread.

    Returns the reranked order, or, on timeout, error, or invalid output
    (unknown, repeated or missing ids, non-finite scores), the input order with
    ``reranked=False`` and the reason; with ``on_error="raise"`` those raise
    `RerankerError` instead. An empty candidate list returns an empty,
    not-reranked outcome without calling the reranker.
    """
    if on_error not in ON_ERROR_CHOICES:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR_CHOICES)}, got {on_error!r}")
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not (math.isfinite(timeout_s) and timeout_s > 0)
    ):
        raise ValueError(
            f"timeout_s must be a positive finite number of seconds, got {timeout_s!r}"
        )
    items = [(str(doc_id), str(text)) for doc_id, text in candidates]
    input_order = tuple(doc_id for doc_id, _ in items)
    if len(set(input_order)) != len(input_order):
        raise ValueError("candidates contain a repeated id")
    started = time.perf_counter()

    def fail(reason: str, cause: BaseException | None = None) -> RerankOutcome:
        if on_error == "raise":
            raise RerankerError(reason) from cause
        return RerankOutcome(
            order=input_order,
            reranked=False,
            reason=f"{reason}; kept the input order",
            seconds=time.perf_counter() - started,
        )

    if not items:
        return RerankOutcome(order=(), reranked=False, reason="no candidates to rerank")
    token = id(reranker)
    with _BUSY_LOCK:
        if token in _BUSY:
            return fail(f"{reranker!r} is still busy with an earlier call that timed out")
        _BUSY.add(token)

    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = reranker.rerank(query, list(items))
        except BaseException as exc:
            box["error"] = exc
        finally:
            with _BUSY_LOCK:
                _BUSY.discard(token)
            done.set()

    threading.Thread(target=work, name="ranklens-rerank", daemon=True).start()
    if not done.wait(timeout_s):
        return fail(f"{reranker!r} did not answer within {timeout_s:g} s")
    if "error" in box:
        exc = box["error"]
        return fail(f"{reranker!r} failed: {type(exc).__name__}: {exc}", exc)
    try:
        order, scores = _validate(reranker, box.get("result"), list(input_order))
    except RerankerError as exc:
        return fail(str(exc), exc)
    return RerankOutcome(
        order=order,
        reranked=True,
        reason=None,
        scores=scores,
        seconds=time.perf_counter() - started,
    )
