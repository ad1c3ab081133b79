"""Evaluation: judged queries, ranking metrics, and comparisons between configurations.

A *judgment* says which tools are right for a query, optionally with grades.
A *run* is what a configuration returned: ``{query: [(id, score), ...]}`` in
rank order (the engine's order is taken as is; it already breaks score ties
by id, so metrics never depend on how ties are resolved here).

Metric conventions (top-k cut at ``k``; ``relevant`` = ids with a grade > 0):

- ``hit@k``: 1 when at least one relevant id is in the top k, else 0.
- ``recall@k``: relevant ids in the top k / number of relevant ids.
- ``precision@k``: relevant ids in the top k / k (divided by k even when the
  run returned fewer than k hits, as in TREC).
- ``mrr@k``: 1 / rank of the first relevant id within the top k (1-based), 0
  when none.
- ``ndcg@k``: DCG / ideal DCG with gain = grade and discount log2(rank + 1)
  for a 1-based rank (log2(i + 2) for a 0-based index). With binary judgments
  every gain is 1 and the ideal list has min(|relevant|, k) hits, which is
  the convention of the reference figures in ``../shared/eval/README.md``.
  Grades are taken linearly (gain = grade, not 2**grade - 1).

A metric value is the mean over the queries that have at least one relevant
id. Queries whose correct answer is *no tool* (empty ``relevant``) are kept
out of those means and reported on their own:

- ``no_tool@floor``: the share of no-tool queries the run answered with
  nothing (an empty list, e.g. because a relevance floor removed every hit).
- ``no_tool_margin``: the mean, over no-tool queries, of (the median rank-1
  score of answerable queries whose rank-1 hit is relevant) minus (the no-tool
  query's rank-1 score, 0 when it returned nothing). Positive means no-tool
  queries score below typical correct answers, so a floor between the two
  could reject them; negative means no floor can. It is in the run's own
  score units (raw BM25, cosine, fused RRF), so `compare` gives it a delta
  only between configurations ranked with the same method.

`compare` puts two or more configurations side by side: per-metric deltas
against the first (baseline) configuration with paired bootstrap confidence
intervals, and the queries that got better and worse.

A judged id the catalog lacks scores like a tool that is never retrieved;
`unknown_relevant_ids` finds them, `describe_unknown` words the problem, and
the ``eval`` and ``compare`` commands refuse such a query set (exit 2).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import QueryError, RanklensError
from core.text import did_you_mean, plural

if TYPE_CHECKING:
    from core.catalog import Catalog

Run = dict[str, list[tuple[str, float]]]
"""Query -> ranked (id, score) pairs, best first."""

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called as queries are ranked (or texts embedded)."""

DEFAULT_KS: tuple[int, ...] = (1, 5, 10)
METRIC_NAMES: tuple[str, ...] = ("hit", "recall", "precision", "mrr", "ndcg")
NO_TOOL_METRICS: tuple[str, ...] = ("no_tool@floor", "no_tool_margin")
SCORE_SCALE_METRICS: tuple[str, ...] = ("no_tool_margin",)
"""Metrics measured in the run's own scores (BM25 raw score, cosine, RRF fused score):
two configurations' values are comparable only when they rank with the same method.
Every other metric is a rank-based share or mean, comparable across methods."""
DEFAULT_COMPARE_METRICS: tuple[str, ...] = ("hit@1", "hit@5", "recall@5", "mrr@10", "ndcg@10")
METHODS: tuple[str, ...] = ("bm25", "semantic", "hybrid")
RUN_FORMAT = "ranklens-run/1"


# --------------------------------------------------------------------------- judgments


@dataclass(frozen=True)
class Judgment:
    """One judged query.

    Attributes:
        query: the query text, as a user would type it.
        relevant: id -> grade. The list form of the file gives grade 1 to each
            id. Ids with grade 0 are judged *not* relevant. A judgment with no
            positive grade is a no-tool query.
        note: free text from the query set (why these tools, what it tests).
        extra: any other keys of the line (e.g. ``source_id``), kept verbatim.
        line: the 1-based line of the query-set file it was read from (None when
            it was built in code); messages about the judgment cite it. Not part
            of equality.
    """

    query: str
    relevant: dict[str, float] = field(default_factory=dict)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False, repr=False)

    @property
    def relevant_ids(self) -> frozenset[str]:
        """Ids with a positive grade."""
        return frozenset(i for i, g in self.relevant.items() if g > 0)

    @property
    def is_no_tool(self) -> bool:
        """True when no tool is a right answer."""
        return not self.relevant_ids


def _line_error(path: Path | str, lineno: int, problem: str, fix: str) -> RanklensError:
    return QueryError(f"{path}:{lineno}: {problem}. Fix: {fix}")


_LINE_FORMAT = '{"query": "...", "relevant": ["tool_id", ...] or {"tool_id": grade}, "note": "..."}'


def parse_judgment(data: object, where: str = "<input>") -> Judgment:
    """Validate one decoded query-set line; ``where`` prefixes error messages."""
    if not isinstance(data, dict):
        raise QueryError(
            f"{where}: expected a JSON object, got {type(data).__name__}. Fix: write one object "
            f"per line: {_LINE_FORMAT}"
        )
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise QueryError(
            f"{where}: 'query' must be a non-empty string, got {query!r}. Fix: add the text a "
            f"user would type, e.g. {_LINE_FORMAT}"
        )
    raw = data.get("relevant", None)
    relevant: dict[str, float] = {}
    if raw is None:
        raise QueryError(
            f"{where}: 'relevant' is missing. Fix: list the right tool ids, or write "
            '"relevant": [] when no tool is right'
        )
    if isinstance(raw, list):
        for item in raw:
            if not isinstance(item, str) or not item:
                raise QueryError(
                    f"{where}: every id in 'relevant' must be a non-empty string, got {item!r}. "
                    "Fix: write the tool ids as strings"
                )
            relevant[item] = 1.0
    elif isinstance(raw, dict):
        for key, grade in raw.items():
            if isinstance(grade, bool) or not isinstance(grade, int | float) or not (
                math.isfinite(grade) and grade >= 0
            ):
                raise QueryError(
                    f"{where}: grade of {key!r} must be a number >= 0, got {grade!r}. "
                    'Fix: write grades like {"tool_id": 2} (0 = judged not relevant)'
                )
            relevant[str(key)] = float(grade)
    else:
        raise QueryError(
            f"{where}: 'relevant' must be a list of ids or an object of id -> grade, got "
            f"{type(raw).__name__}. Fix: {_LINE_FORMAT}"
        )
    note = data.get("note", "")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise QueryError(f"{where}: 'note' must be a string, got {note!r}. Fix: quote the note")
    extra = {k: v for k, v in data.items() if k not in ("query", "relevant", "note")}
    return Judgment(query=query, relevant=relevant, note=note, extra=extra)


def load_queries(path: str | Path) -> list[Judgment]:
    """Read a judged query set (JSON Lines, one query per line; blank lines skipped).

    Raises:
        QueryError: naming the file and line, for unreadable files, lines that
            are not JSON objects of the documented shape, and repeated queries.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QueryError(
            f"{path}: query set not found. Fix: pass the path of a .jsonl file with lines like "
            f"{_LINE_FORMAT}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryError(f"{path}: cannot read the query set ({exc}). Fix: save it as UTF-8 text") from None
    return parse_queries_text(text, str(path))


def parse_queries_text(text: str, source: str = "<input>") -> list[Judgment]:
    """A judged query set from JSON Lines text (e.g. an upload), checked like `load_queries`.

    Raises:
        QueryError: naming ``source`` and the line, with the fix.
    """
    judgments: list[Judgment] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _line_error(
                source, lineno, f"not valid JSON ({exc.msg} at column {exc.colno})",
                f"write one JSON object per line: {_LINE_FORMAT}",
            ) from None
        judgment = replace(parse_judgment(data, f"{source}:{lineno}"), line=lineno)
        if judgment.query in first_line:
            raise _line_error(
                source, lineno,
                f"the query {judgment.query!r} already appears on line {first_line[judgment.query]}",
                "merge the two lines into one (a query has one set of relevant ids)",
            )
        first_line[judgment.query] = lineno
        judgments.append(judgment)
    if not judgments:
        raise QueryError(f"{source}: the query set is empty. Fix: add lines like {_LINE_FORMAT}")
    return judgments


# --------------------------------------------------------------------------- judgments vs a catalog


def unknown_relevant_ids(judgments: Iterable[Judgment], known_ids: Iterable[str]) -> dict[str, list[str]]:
    """Query -> the judged ids (any grade) that are not in ``known_ids``, sorted.

    Only queries with at least one unknown id appear, in the query set's order.
    An unknown id scores like a tool that is never retrieved, so a typo or a
    query set written for another catalog silently lowers every metric.
    """
    known = known_ids if isinstance(known_ids, set | frozenset) else set(known_ids)
    out: dict[str, list[str]] = {}
    for j in judgments:
        missing = sorted(i for i in j.relevant if i not in known)
        if missing:
            out[j.query] = missing
    return out


_IDS_FIX = (
    "correct the ids (a catalog's ids are in its file and in the output of "
    "`ranklens search CATALOG QUERY`), or pass the query set written for this catalog"
)


def describe_unknown(
    unknown: Mapping[str, Sequence[str]],
    known_ids: Iterable[str],
    judgments: Sequence[Judgment] = (),
    *,
    source: str = "",
    kind: str = "tool",
    catalog: str = "this catalog",
    hint: str = "",
    limit: int = 5,
) -> str:
    """The message for `unknown_relevant_ids`' result: where each id is, the closest known id, the fix.

    ``judgments`` (the query set) gives each query's line number and the share of
    unknown ids: when most judged ids are unknown, the message says the query set
    is probably for another catalog instead of listing them. ``source`` names the
    query set (its file), ``catalog`` the catalog, ``kind`` "tool" or "skill";
    ``hint`` is appended before the fix. Returns "" when ``unknown`` is empty.
    """
    if not unknown:
        return ""
    known = sorted(set(known_ids))
    lines = {j.query: j.line for j in judgments}
    bad = sorted({i for ids in unknown.values() for i in ids})
    judged = {i for j in judgments for i in j.relevant} | set(bad)
    hint = f" {hint.strip()}" if hint.strip() else ""
    if judgments and len(bad) * 2 > len(judged):
        examples = ", ".join(repr(i) for i in bad[:3]) + (", …" if len(bad) > 3 else "")
        return (
            f"{source + ': ' if source else ''}{len(bad)} of {plural(len(judged), f'judged {kind} id')} "
            f"{'is' if len(bad) == 1 else 'are'} not in {catalog} (e.g. {examples}): the query set is probably for another "
            f"catalog.{hint} Fix: pass the query set written for {catalog} (a bundled sample's "
            "is next to it, NAME.queries.jsonl)"
        )

    by_id: dict[str, list[str]] = {}  # unknown id -> the queries naming it, in order
    for q, ids in unknown.items():
        for i in ids:
            by_id.setdefault(i, []).append(q)

    def where(queries: list[str]) -> str:
        found = [lines[q] for q in queries if lines.get(q)]
        if source and len(found) == len(queries):
            also = found[1:]
            more = f" (also line{'s' if len(also) > 1 else ''} {', '.join(map(str, also))})" if also else ""
            return f"{source}:{found[0]}{more}"
        others = len(queries) - 1
        more = f" (and {plural(others, 'other query', 'other queries')})" if others else ""
        return f"{source + ': ' if source else ''}query {_truncate(queries[0], 60)!r}{more}"

    found = [f"{where(qs)}: unknown {kind} {i!r}{did_you_mean(i, known)}" for i, qs in by_id.items()]
    if len(found) == 1:
        return f"{found[0]} — the query set does not match {catalog}.{hint} Fix: {_IDS_FIX}"
    shown = found[:limit] + ([f"(and {len(found) - limit} more)"] if len(found) > limit else [])
    return (
        f"the query set does not match {catalog}: {plural(len(found), f'judged {kind} id')} "
        "are not in it\n"
        + "".join(f"  {line}\n" for line in shown)
        + (f"{hint.strip()}\n" if hint else "")
        + f"Fix: {_IDS_FIX}"
    )


def check_judgments(
    judgments: Sequence[Judgment],
    known_ids: Iterable[str],
    *,
    source: str = "",
    kind: str = "tool",
    catalog: str = "this catalog",
    hint: str = "",
) -> None:
    """Raise QueryError (see `describe_unknown`) when a judgment names an id ``known_ids`` lacks."""
    known = set(known_ids)
    unknown = unknown_relevant_ids(judgments, known)
    if unknown:
        raise QueryError(describe_unknown(unknown, known, judgments, source=source, kind=kind,
                                          catalog=catalog, hint=hint))


# --------------------------------------------------------------------------- metrics


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")


def hit_at_k(ranked: Sequence[str], relevant: Mapping[str, float] | Iterable[str], k: int) -> float:
    """1.0 when any relevant id is among the first ``k`` ranked ids, else 0.0."""
    _check_k(k)
    rel = _relevant_set(relevant)
    return 1.0 if any(i in rel for i in ranked[:k]) else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, float] | Iterable[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` (0.0 when nothing is relevant)."""
    _check_k(k)
    rel = _relevant_set(relevant)
    if not rel:
        return 0.0
    return len(rel.intersection(ranked[:k])) / len(rel)


def precision_at_k(
    ranked: Sequence[str], relevant: Mapping[str, float] | Iterable[str], k: int
) -> float:
    """Relevant ids among the first ``k``, divided by ``k``."""
    _check_k(k)
    rel = _relevant_set(relevant)
    return sum(1 for i in ranked[:k] if i in rel) / k


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, float] | Iterable[str], k: int) -> float:
    """1 / (1-based rank of the first relevant id within ``k``), 0.0 when none."""
    _check_k(k)
    rank = first_relevant_rank(ranked[:k], relevant)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, float] | Iterable[str], k: int) -> float:
    """Normalised DCG at ``k`` with gain = grade and discount log2(rank + 1), rank 1-based.

    A plain set or list of ids means grade 1 each (binary). A repeated id in
    ``ranked`` earns its gain once. 0.0 when nothing is relevant.
    """
    _check_k(k)
    grades = _grades(relevant)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    seen: set[str] = set()
    dcg = 0.0
    for i, doc in enumerate(ranked[:k]):
        g = grades.get(doc, 0.0)
        if g > 0 and doc not in seen:
            dcg += g / math.log2(i + 2)
        seen.add(doc)
    return dcg / idcg


def first_relevant_rank(
    ranked: Sequence[str], relevant: Mapping[str, float] | Iterable[str]
) -> int | None:
    """1-based rank of the first relevant id in ``ranked``, or None."""
    rel = _relevant_set(relevant)
    for i, doc in enumerate(ranked):
        if doc in rel:
            return i + 1
    return None


_METRIC_FUNCS = {
    "hit": hit_at_k,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "mrr": mrr_at_k,
    "ndcg": ndcg_at_k,
}


def _grades(relevant: Mapping[str, float] | Iterable[str]) -> dict[str, float]:
    if isinstance(relevant, Mapping):
        return {str(k): float(v) for k, v in relevant.items()}
    return dict.fromkeys(relevant, 1.0)


def _relevant_set(relevant: Mapping[str, float] | Iterable[str]) -> frozenset[str]:
    if isinstance(relevant, frozenset):
        return relevant
    if isinstance(relevant, Mapping):
        return frozenset(k for k, v in relevant.items() if v > 0)
    return frozenset(relevant)


def metric_keys(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """The flat relevance metric keys for ``ks``: ``hit@1``, ..., ``ndcg@10``."""
    return [f"{name}@{k}" for name in METRIC_NAMES for k in ks]


def query_metrics(
    ranked: Sequence[str], relevant: Mapping[str, float], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, float]:
    """Every relevance metric for one query, keyed like ``ndcg@10``."""
    return {
        f"{name}@{k}": func(ranked, relevant, k)
        for name, func in _METRIC_FUNCS.items()
        for k in ks
    }


def parse_metric_key(key: str) -> tuple[str, int | None]:
    """Split ``ndcg@10`` into ("ndcg", 10); no-tool keys give (key, None).

    Raises:
        QueryError: listing the valid names.
    """
    if key in NO_TOOL_METRICS:
        return key, None
    name, sep, k = key.partition("@")
    if sep and name in _METRIC_FUNCS and k.isdigit() and int(k) >= 1:
        return name, int(k)
    raise QueryError(
        f"unknown metric {key!r}; valid metrics: {', '.join(METRIC_NAMES)} followed by @k "
        f"(e.g. ndcg@10), or {', '.join(NO_TOOL_METRICS)}"
    )


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class QueryRow:
    """How one query fared.

    Attributes:
        query: the query text.
        relevant: the judged ids with a positive grade, sorted.
        first_rank: 1-based rank of the first relevant id in the run (at any
            depth the run has), None when not found or for a no-tool query.
        metrics: this query's relevance metrics (empty for a no-tool query).
        note: the judgment's note.
        top: the run's first ids (up to 3), for display.
        top_score: the rank-1 score, None when the run returned nothing.
        no_tool: True when no tool is a right answer.
    """

    query: str
    relevant: tuple[str, ...]
    first_rank: int | None
    metrics: dict[str, float]
    note: str
    top: tuple[str, ...]
    top_score: float | None
    no_tool: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "relevant": list(self.relevant),
            "first_rank": self.first_rank,
            "metrics": self.metrics,
            "note": self.note,
            "top": list(self.top),
            "top_score": self.top_score,
            "no_tool": self.no_tool,
        }


@dataclass(frozen=True)
class EvalReport:
    """Aggregate metrics and per-query rows of one run.

    Attributes:
        metrics: flat keys (``hit@1`` ... ``ndcg@10``, and when the query set
            has no-tool queries ``no_tool@floor`` and ``no_tool_margin``).
        rows: one per judged query, in the query set's order.
        ks: the cut-offs used.
    """

    metrics: dict[str, float]
    rows: tuple[QueryRow, ...]
    ks: tuple[int, ...]

    @property
    def n_queries(self) -> int:
        return len(self.rows)

    @property
    def n_answerable(self) -> int:
        return sum(1 for r in self.rows if not r.no_tool)

    @property
    def n_no_tool(self) -> int:
        return sum(1 for r in self.rows if r.no_tool)

    @property
    def sort_metric(self) -> str:
        """The metric `worst` sorts by: ndcg at the largest k."""
        return f"ndcg@{max(self.ks)}"

    def row(self, query: str) -> QueryRow:
        for r in self.rows:
            if r.query == query:
                return r
        raise KeyError(query)

    def worst(self, n: int = 10) -> list[QueryRow]:
        """The ``n`` answerable queries that did worst.

        Ordered by ndcg at the largest k ascending, then first relevant rank
        (not found is worst), then query text, so the order is deterministic.
        """
        key = self.sort_metric
        answerable = [r for r in self.rows if not r.no_tool]
        answerable.sort(
            key=lambda r: (
                r.metrics.get(key, 0.0),
                -(r.first_rank if r.first_rank is not None else math.inf),
                r.query,
            )
        )
        return answerable[: max(n, 0)]

    def to_dict(self, worst: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metrics": self.metrics,
            "queries": self.n_queries,
            "answerable": self.n_answerable,
            "no_tool": self.n_no_tool,
            "ks": list(self.ks),
        }
        if worst is not None:
            out["worst"] = [r.to_dict() for r in self.worst(worst)]
        out["rows"] = [r.to_dict() for r in self.rows]
        return out


def apply_floor(run: Mapping[str, Sequence[tuple[str, float]]], floor: float) -> Run:
    """Drop every hit scoring below ``floor`` (a relevance floor)."""
    return {q: [(i, s) for i, s in hits if s >= floor] for q, hits in run.items()}


def evaluate(
    run: Mapping[str, Sequence[tuple[str, float]]],
    judgments: Sequence[Judgment],
    ks: Sequence[int] = DEFAULT_KS,
) -> EvalReport:
    """Score ``run`` against ``judgments`` (see the module docstring for definitions).

    A judged query missing from the run counts as answered with nothing.
    """
    ks = tuple(sorted(set(ks)))
    if not ks:
        raise QueryError("ks is empty; pass cut-offs such as (1, 5, 10)")
    for k in ks:
        _check_k(k)
    rows: list[QueryRow] = []
    for j in judgments:
        hits = list(run.get(j.query, ()))
        ranked = [i for i, _ in hits]
        top_score = float(hits[0][1]) if hits else None
        rel_ids = j.relevant_ids
        if j.is_no_tool:
            rows.append(
                QueryRow(j.query, (), None, {}, j.note, tuple(ranked[:3]), top_score, True)
            )
            continue
        rows.append(
            QueryRow(
                query=j.query,
                relevant=tuple(sorted(rel_ids)),
                first_rank=first_relevant_rank(ranked, rel_ids),
                metrics=query_metrics(ranked, j.relevant, ks),
                note=j.note,
                top=tuple(ranked[:3]),
                top_score=top_score,
            )
        )
    answerable = [r for r in rows if not r.no_tool]
    metrics: dict[str, float] = {}
    for key in metric_keys(ks):
        metrics[key] = (
            sum(r.metrics[key] for r in answerable) / len(answerable) if answerable else 0.0
        )
    no_tool = [r for r in rows if r.no_tool]
    if no_tool:
        metrics.update(_no_tool_metrics(rows))
    return EvalReport(metrics=metrics, rows=tuple(rows), ks=ks)


def _no_tool_metrics(rows: Sequence[QueryRow]) -> dict[str, float]:
    no_tool = [r for r in rows if r.no_tool]
    correct_top = [
        r.top_score
        for r in rows
        if not r.no_tool and r.first_rank == 1 and r.top_score is not None
    ]
    reference = statistics.median(correct_top) if correct_top else 0.0
    return {
        "no_tool@floor": sum(1 for r in no_tool if r.top_score is None) / len(no_tool),
        "no_tool_margin": sum(reference - (r.top_score or 0.0) for r in no_tool) / len(no_tool),
    }


def _no_tool_answered(row: QueryRow) -> float:
    return 1.0 if row.top_score is None else 0.0


# --------------------------------------------------------------------------- runs


def run_queries(
    catalog: Any,
    judgments: Sequence[Judgment] | Sequence[str],
    top_k: int = 10,
    method: str = "bm25",
    progress: Progress | None = None,
) -> Run:
    """Search ``catalog`` (a `ToolCatalog` or `SkillCatalog`) for every judged query.

    Runs through ``catalog.search_with(q, top_k, method)``, the synchronous
    form of ``search_async``: any method on a catalog that supports it, and it
    works inside a running event loop (Jupyter). ``progress(done, total)`` is
    called after each query.
    """
    if method not in METHODS:
        raise QueryError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise QueryError(f"top_k must be an integer >= 0, got {top_k!r}")
    queries = [j.query if isinstance(j, Judgment) else str(j) for j in judgments]
    run: Run = {}
    for done, q in enumerate(queries, start=1):
        run[q] = [(h.id, float(h.score)) for h in catalog.search_with(q, top_k, method)]
        if progress is not None:
            progress(done, len(queries))
    return run


def _run_chunk(
    path: str, queries: list[str], top_k: int, method: str, skills: bool | None, options: dict[str, Any]
) -> Run:
    """A worker of `run_queries_parallel`: open the catalog, rank its share of the queries."""
    return run_queries(load_search_catalog(path, method, skills, **options), queries, top_k, method)


def run_queries_parallel(
    path: str | Path,
    judgments: Sequence[Judgment] | Sequence[str],
    top_k: int = 10,
    method: str = "bm25",
    *,
    jobs: int = 2,
    skills: bool | None = None,
    catalog: Any = None,
    progress: Progress | None = None,
    embed_progress: Progress | None = None,
    **options: Any,
) -> Run:
    """`run_queries` over ``jobs`` processes; the same run as one process, query for query.

    The queries are cut into ``jobs`` contiguous slices. Each slice but the
    first goes to a fresh worker process (spawned, so no model or lock is
    inherited mid-use) that opens the catalog at ``path`` itself; this process
    ranks the first slice meanwhile, with ``catalog`` (opened from ``path``
    when not given). For semantic and hybrid, this process opens its catalog
    before starting the workers, so they find the embedding cache warm and
    embed nothing. ``options`` (e.g. ``model=``) go to `load_search_catalog`.

    ``progress(done, total)`` counts ranked queries: after each query of this
    process's slice, then as each worker's slice comes back.
    ``embed_progress`` is the embedding ``progress`` of the catalog this
    process opens (workers find the cache warm and report nothing).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise QueryError(f"jobs must be a whole number >= 1, got {jobs!r}")
    queries = [j.query if isinstance(j, Judgment) else str(j) for j in judgments]
    jobs = min(jobs, len(queries)) or 1
    if catalog is None and (jobs == 1 or method != "bm25"):
        catalog = load_search_catalog(path, method, skills, progress=embed_progress, **options)
    if jobs == 1:
        return run_queries(catalog, queries, top_k, method, progress)
    size = -(-len(queries) // jobs)
    chunks = [queries[i : i + size] for i in range(0, len(queries), size)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    total = len(queries)

    def local_progress(done: int, _total: int) -> None:
        if progress is not None:
            progress(done, total)

    with ProcessPoolExecutor(len(chunks) - 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(_run_chunk, str(path), chunk, top_k, method, skills, options)
            for chunk in chunks[1:]
        ]
        if catalog is None:  # BM25: opened here while the workers open theirs
            catalog = load_search_catalog(path, method, skills, progress=embed_progress, **options)
        run = run_queries(catalog, chunks[0], top_k, method, local_progress)
        done = len(chunks[0])
        results: dict[Any, Run] = {}
        for future in as_completed(futures):
            results[future] = future.result()
            done += len(results[future])
            local_progress(done, total)
        for future in futures:  # in query order, whatever order they finished in
            run.update(results[future])
    return run


def save_run(run: Mapping[str, Sequence[tuple[str, float]]], path: str | Path, **meta: Any) -> None:
    """Write a run as JSON: ``{"format", "meta", "run": {query: [[id, score], ...]}}``."""
    data = {
        "format": RUN_FORMAT,
        "meta": meta,
        "run": {q: [[i, s] for i, s in hits] for q, hits in run.items()},
    }
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_run(path: str | Path) -> Run:
    """Read a run written by `save_run` (or a bare ``{query: [[id, score], ...]}`` object)."""
    return load_run_with_meta(path)[0]


def load_run_with_meta(path: str | Path) -> tuple[Run, dict[str, Any]]:
    """A run and its ``meta`` (e.g. ``method``, ``catalog``; {} for a bare run object)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise QueryError(f"{path}: run file not found. Fix: write one with `ranklens eval --run-out`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QueryError(f"{path}: cannot read the run ({exc}). Fix: pass a JSON run file") from None
    meta: dict[str, Any] = {}
    if isinstance(data, dict) and "run" in data and isinstance(data["run"], dict):
        meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
        data = data["run"]
    if not isinstance(data, dict):
        raise QueryError(f"{path}: a run is a JSON object of query -> [[id, score], ...]")
    run: Run = {}
    for q, hits in data.items():
        try:
            run[q] = [(str(i), float(s)) for i, s in hits]
        except (TypeError, ValueError):
            raise QueryError(
                f"{path}: hits of query {q!r} must be a list of [id, score] pairs"
            ) from None
    return run, meta


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class MetricDelta:
    """One metric of one configuration against the baseline.

    ``ci_low``/``ci_high`` bound the paired bootstrap confidence interval of
    ``delta``; ``significant`` is True when that interval excludes 0.

    A score-scale metric (`SCORE_SCALE_METRICS`) of two configurations that rank
    with different methods has no delta: ``delta``, ``ci_low`` and ``ci_high``
    are None, ``note`` says why ("different score scales"), and it is never
    significant and never fails a gate.
    """

    config: str
    metric: str
    baseline: float
    value: float
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    note: str = ""

    @property
    def comparable(self) -> bool:
        """False when the two values are on different score scales (no delta)."""
        return self.delta is not None

    @property
    def significant(self) -> bool:
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0 or self.ci_high < 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "metric": self.metric,
            "baseline": self.baseline,
            "value": self.value,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n": self.n,
            "significant": self.significant,
            "note": self.note,
        }


@dataclass(frozen=True)
class QueryChange:
    """A query whose result changed between the baseline and a configuration.

    ``delta`` is the change of the comparison's key metric (ndcg at the
    largest k); ranks are the 1-based first relevant ranks (None = not found).
    For a no-tool query ``delta`` is +1 when it is now answered with nothing
    and -1 when it no longer is.
    """

    config: str
    query: str
    baseline_rank: int | None
    rank: int | None
    baseline_value: float
    value: float
    no_tool: bool = False

    @property
    def delta(self) -> float:
        return self.value - self.baseline_value

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "query": self.query,
            "baseline_rank": self.baseline_rank,
            "rank": self.rank,
            "baseline_value": self.baseline_value,
            "value": self.value,
            "delta": self.delta,
            "no_tool": self.no_tool,
        }


@dataclass(frozen=True)
class Comparison:
    """Configurations compared against the first one (the baseline).

    Attributes:
        baseline: the baseline configuration's name.
        configs: every configuration's name, baseline first.
        reports: each configuration's `EvalReport`.
        deltas: one `MetricDelta` per (non-baseline configuration, metric).
        better, worse: per non-baseline configuration, the queries whose key
            metric rose / fell, largest change first.
        key_metric: the per-query metric that decides better and worse.
        confidence: the confidence level of the intervals (0.95).
    """

    baseline: str
    configs: tuple[str, ...]
    reports: dict[str, EvalReport]
    deltas: tuple[MetricDelta, ...]
    better: dict[str, tuple[QueryChange, ...]]
    worse: dict[str, tuple[QueryChange, ...]]
    key_metric: str
    confidence: float
    n_boot: int
    seed: int

    def delta(self, config: str, metric: str) -> MetricDelta:
        for d in self.deltas:
            if d.config == config and d.metric == metric:
                return d
        raise KeyError((config, metric))

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "configs": list(self.configs),
            "metrics": {name: rep.metrics for name, rep in self.reports.items()},
            "deltas": [d.to_dict() for d in self.deltas],
            "better": {c: [q.to_dict() for q in v] for c, v in self.better.items()},
            "worse": {c: [q.to_dict() for q in v] for c, v in self.worse.items()},
            "key_metric": self.key_metric,
            "confidence": self.confidence,
            "n_boot": self.n_boot,
            "seed": self.seed,
        }


def _per_query(report: EvalReport, metric: str, queries: Sequence[str]) -> list[float]:
    rows = {r.query: r for r in report.rows}
    if metric == "no_tool@floor":
        return [_no_tool_answered(rows[q]) for q in queries]
    if metric == "no_tool_margin":
        reference = statistics.median(
            [
                r.top_score
                for r in report.rows
                if not r.no_tool and r.first_rank == 1 and r.top_score is not None
            ]
            or [0.0]
        )
        return [reference - (rows[q].top_score or 0.0) for q in queries]
    return [rows[q].metrics[metric] for q in queries]


def paired_bootstrap(
    baseline: Sequence[float],
    other: Sequence[float],
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Mean paired difference ``other - baseline`` and its bootstrap confidence interval.

    Queries are resampled with replacement ``n_boot`` times with a seeded
    ``numpy.random.Generator``; the interval is the percentile interval of
    the resampled mean differences. Returns (delta, low, high).
    """
    import numpy as np

    if len(baseline) != len(other):
        raise QueryError("paired bootstrap needs the same queries on both sides")
    diffs = np.asarray(other, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    if diffs.size == 0:
        return 0.0, 0.0, 0.0
    delta = float(diffs.mean())
    if n_boot < 1:
        return delta, delta, delta
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diffs.size, size=(n_boot, diffs.size))
    means = diffs[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return delta, float(low), float(high)


def compare(
    configs: Mapping[str, Mapping[str, Sequence[tuple[str, float]]] | EvalReport],
    judgments: Sequence[Judgment],
    metrics: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    ks: Sequence[int] = DEFAULT_KS,
    methods: Mapping[str, str | None] | None = None,
) -> Comparison:
    """Compare configurations (runs or reports, by name) against the first one.

    Every configuration is evaluated on the same ``judgments``; deltas use a
    paired bootstrap over queries (answerable queries for relevance metrics,
    no-tool queries for the no-tool metrics). Better/worse queries are decided
    by ndcg at the largest k (answerable queries) and by whether a no-tool
    query is answered with nothing.

    ``methods`` maps each configuration to the method that ranked it (None when
    unknown, e.g. a run file without metadata). With it, a score-scale metric
    (`SCORE_SCALE_METRICS`, e.g. ``no_tool_margin``) gets a delta only between
    configurations known to use the same method; otherwise its delta is None
    (see `MetricDelta`). Without it every delta is computed, as before.
    """
    if len(configs) < 2:
        raise QueryError(
            f"compare needs at least two configurations, got {len(configs)}: "
            f"{', '.join(configs) or 'none'}"
        )
    if not 0 < confidence < 1:
        raise QueryError(f"confidence must be between 0 and 1, got {confidence!r}")
    reports: dict[str, EvalReport] = {}
    for name, value in configs.items():
        reports[name] = value if isinstance(value, EvalReport) else evaluate(value, judgments, ks)
        missing = {j.query for j in judgments} - {r.query for r in reports[name].rows}
        if missing:
            raise QueryError(
                f"the report of {name!r} lacks {plural(len(missing), 'judged query', 'judged queries')} (e.g. "
                f"{sorted(missing)[0]!r}); evaluate every configuration on the same query set"
            )
    names = list(reports)
    base_name = names[0]
    base = reports[base_name]
    for name in names[1:]:
        if reports[name].ks != base.ks:
            raise QueryError(
                f"{name!r} was evaluated at k = {list(reports[name].ks)} but the baseline "
                f"{base_name!r} at k = {list(base.ks)}; evaluate every configuration with the same ks"
            )
    if metrics is None:
        metrics = [m for m in DEFAULT_COMPARE_METRICS if m in base.metrics]
        metrics += [m for m in NO_TOOL_METRICS if m in base.metrics]
    for m in metrics:
        parse_metric_key(m)
    queries = [j.query for j in judgments]
    answerable = [j.query for j in judgments if not j.is_no_tool]
    no_tool = [j.query for j in judgments if j.is_no_tool]
    key_metric = f"ndcg@{max(base.ks)}"
    deltas: list[MetricDelta] = []
    better: dict[str, tuple[QueryChange, ...]] = {}
    worse: dict[str, tuple[QueryChange, ...]] = {}
    for name in names[1:]:
        rep = reports[name]
        for m in metrics:
            qs = no_tool if m in NO_TOOL_METRICS else answerable
            try:
                b_vals = _per_query(base, m, qs)
                o_vals = _per_query(rep, m, qs)
            except KeyError:
                raise QueryError(
                    f"metric {m!r} was not computed for every configuration; evaluate all "
                    "reports with the same ks and query set"
                ) from None
            note = _scale_note(m, methods, base_name, name)
            if note:
                d = lo = hi = None
            else:
                d, lo, hi = paired_bootstrap(b_vals, o_vals, n_boot, seed, confidence)
            deltas.append(
                MetricDelta(
                    config=name,
                    metric=m,
                    baseline=float(sum(b_vals) / len(b_vals)) if b_vals else 0.0,
                    value=float(sum(o_vals) / len(o_vals)) if o_vals else 0.0,
                    delta=d,
                    ci_low=lo,
                    ci_high=hi,
                    n=len(qs),
                    note=note,
                )
            )
        changes: list[QueryChange] = []
        base_rows = {r.query: r for r in base.rows}
        rep_rows = {r.query: r for r in rep.rows}
        for q in queries:
            b_row, o_row = base_rows[q], rep_rows[q]
            if b_row.no_tool:
                b_val, o_val = _no_tool_answered(b_row), _no_tool_answered(o_row)
            else:
                b_val, o_val = b_row.metrics[key_metric], o_row.metrics[key_metric]
            if b_val != o_val or b_row.first_rank != o_row.first_rank:
                changes.append(
                    QueryChange(name, q, b_row.first_rank, o_row.first_rank, b_val, o_val,
                                b_row.no_tool)
                )
        better[name] = tuple(
            sorted(
                (c for c in changes if _improved(c)),
                key=lambda c: (-abs(c.delta), c.query),
            )
        )
        worse[name] = tuple(
            sorted(
                (c for c in changes if _worsened(c)),
                key=lambda c: (-abs(c.delta), c.query),
            )
        )
    return Comparison(
        baseline=base_name,
        configs=tuple(names),
        reports=reports,
        deltas=tuple(deltas),
        better=better,
        worse=worse,
        key_metric=key_metric,
        confidence=confidence,
        n_boot=n_boot,
        seed=seed,
    )


def _scale_note(
    metric: str, methods: Mapping[str, str | None] | None, baseline: str, config: str
) -> str:
    """Why a score-scale metric has no delta between two configurations ("" when it has one)."""
    if methods is None or metric not in SCORE_SCALE_METRICS:
        return ""
    a, b = methods.get(baseline), methods.get(config)
    if a is None or b is None:
        return "unknown score scale"
    return "" if a == b else "different score scales"


def _rank_value(rank: int | None) -> float:
    return math.inf if rank is None else float(rank)


def _improved(c: QueryChange) -> bool:
    if c.delta != 0:
        return c.delta > 0
    return _rank_value(c.rank) < _rank_value(c.baseline_rank)


def _worsened(c: QueryChange) -> bool:
    if c.delta != 0:
        return c.delta < 0
    return _rank_value(c.rank) > _rank_value(c.baseline_rank)


# --------------------------------------------------------------------------- formatting


def _fmt_rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_report(report: EvalReport, worst: int = 10, title: str | None = None) -> str:
    """The metrics table and the worst queries, as plain text."""
    lines = []
    if title:
        lines.append(title)
    lines.append(
        f"{plural(report.n_queries, 'query', 'queries')} ({report.n_answerable} with a right "
        f"tool, {report.n_no_tool} no-tool)"
    )
    lines.append("")
    header = "metric".ljust(10) + "".join(f"@{k}".rjust(9) for k in report.ks)
    lines.append(header)
    for name in METRIC_NAMES:
        lines.append(
            name.ljust(10)
            + "".join(f"{report.metrics[f'{name}@{k}']:.3f}".rjust(9) for k in report.ks)
        )
    if report.n_no_tool:
        lines.append("")
        lines.append(
            f"no-tool queries answered with nothing (no_tool@floor): "
            f"{report.metrics['no_tool@floor']:.3f}"
        )
        lines.append(
            f"rank-1 score margin below correct answers (no_tool_margin): "
            f"{report.metrics['no_tool_margin']:.3f}"
        )
    rows = report.worst(worst)
    if rows:
        lines.append("")
        lines.append(f"worst {plural(len(rows), 'query', 'queries')} (by {report.sort_metric}):")
        lines.append(f"  {'rank':>4}  {report.sort_metric:>8}  query -> top hit (relevant)")
        for r in rows:
            top = r.top[0] if r.top else "(nothing)"
            lines.append(
                f"  {_fmt_rank(r.first_rank):>4}  {r.metrics[report.sort_metric]:8.3f}  "
                f"{_truncate(r.query, 70)!r} -> {top} ({', '.join(r.relevant)})"
            )
            if r.note:
                lines.append(f"{'':18}note: {_truncate(r.note, 90)}")
    return "\n".join(lines)


def format_comparison(comparison: Comparison, n_queries: int = 10) -> str:
    """Per-metric deltas with confidence intervals, then better and worse queries."""
    pct = round(comparison.confidence * 100)
    lines = [f"baseline: {comparison.baseline}"]
    for name in comparison.configs[1:]:
        lines.append("")
        lines.append(f"{name} vs {comparison.baseline}")
        lines.append(
            f"  {'metric':<15}{'baseline':>9}{'value':>9}{'delta':>9}  {pct}% CI"
        )
        for d in comparison.deltas:
            if d.config != name:
                continue
            if d.delta is None or d.ci_low is None or d.ci_high is None:
                lines.append(
                    f"  {d.metric:<15}{d.baseline:9.3f}{d.value:9.3f}{'n/a':>9}  ({d.note})"
                )
                continue
            mark = " *" if d.significant else ""
            lines.append(
                f"  {d.metric:<15}{d.baseline:9.3f}{d.value:9.3f}{d.delta:+9.3f}  "
                f"[{d.ci_low:+.3f}, {d.ci_high:+.3f}]{mark}"
            )
        for label, items in (("better", comparison.better[name]), ("worse", comparison.worse[name])):
            lines.append(f"  {label}: {plural(len(items), 'query', 'queries')}")
            for c in items[:n_queries]:
                if c.no_tool:
                    change = "now answered with nothing" if c.delta > 0 else "no longer empty"
                else:
                    change = (
                        f"rank {_fmt_rank(c.baseline_rank)} -> {_fmt_rank(c.rank)}, "
                        f"{comparison.key_metric} {c.delta:+.3f}"
                    )
                lines.append(f"    {_truncate(c.query, 70)!r}: {change}")
    lines.append("")
    lines.append(
        f"* the {pct}% paired bootstrap interval excludes 0 "
        f"({comparison.n_boot} resamples, seed {comparison.seed})"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def load_search_catalog(
    path: str | Path,
    method: str = "bm25",
    skills: bool | None = None,
    progress: Progress | None = None,
    *,
    judgments: Sequence[Judgment] | None = None,
    queries_source: str = "",
    **options: Any,
) -> Any:
    """Load a catalog file or folder into a `ToolCatalog` (or `SkillCatalog`).

    ``skills=None`` picks skills when the catalog has skills and no tools.
    ``progress(done, total)`` reports the embedding of texts missing from the
    cache (semantic and hybrid). ``options`` (e.g. ``model=``) go to the
    catalog's constructor. With ``judgments`` (read from ``queries_source``),
    every judged id must be in the catalog (`check_judgments`), checked before
    anything is embedded.

    Raises:
        CatalogError: the catalog has no tools and no skills.
        QueryError: ``skills=True`` on a catalog without skills (or ``False``
            on one without tools), or a judged id the catalog lacks.
    """
    from core.search import SkillCatalog, ToolCatalog

    catalog, use_skills = checked_catalog(path, skills, judgments=judgments, queries_source=queries_source)
    if progress is not None:
        options = {**options, "progress": progress}
    if use_skills:
        return SkillCatalog(catalog.skills, method=method, **options)
    return ToolCatalog(catalog.tools, method=method, **options)


def checked_catalog(
    path: str | Path,
    skills: bool | None = None,
    *,
    judgments: Sequence[Judgment] | None = None,
    queries_source: str = "",
) -> tuple[Catalog, bool]:
    """Load a catalog and run `load_search_catalog`'s checks, without building an index.

    Returns the catalog and whether its skills (not its tools) are ranked.
    Raises what `load_search_catalog` raises.
    """
    from core.catalog import load_catalog, require_items

    catalog: Catalog = require_items(load_catalog(path), path)
    use_skills = skills if skills is not None else (not catalog.tools and bool(catalog.skills))
    if use_skills and not catalog.skills:
        raise QueryError(
            f"{path} has no skills, so --skills has nothing to rank. Fix: drop --skills to rank "
            f"its {plural(len(catalog.tools), 'tool')}"
        )
    if not use_skills and not catalog.tools:
        raise QueryError(f"{path} has no tools. Fix: rank its skills (--skills)")
    if judgments is not None:
        items = catalog.skills if use_skills else catalog.tools
        others = catalog.tools if use_skills else catalog.skills
        unknown = unknown_relevant_ids(judgments, {i.id for i in items})
        bad = {i for ids in unknown.values() for i in ids}
        hint = ""
        if bad and bad <= {i.id for i in others}:
            hint = (f"Those ids are the catalog's {'tools' if use_skills else 'skills'}: "
                    f"{'drop' if use_skills else 'pass'} --skills.")
        check_judgments(judgments, [i.id for i in items], source=queries_source,
                        kind="skill" if use_skills else "tool", catalog=str(path), hint=hint)
    return catalog, use_skills


def _catalog_options(args: argparse.Namespace, floors: Mapping[str, float] | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if getattr(args, "model", None):
        options["model"] = args.model
    if floors:
        options["floors"] = dict(floors)
    return options


def parse_eval_floors(values: Sequence[str] | None, method: str) -> dict[str, float]:
    """``eval``'s ``--floor``: ``ARM=SCORE`` like ``search``, or a bare number as the BM25 floor.

    A bare number is kept for compatibility and means ``bm25=NUMBER``, so it is
    accepted with ``--method bm25`` only; a floor on an arm the method does not
    rank with is refused (it would change nothing).

    Raises:
        QueryError: naming the value and the form to write.
    """
    from core.search import parse_floors

    floors = parse_floors(values, bare_arm="bm25")
    bare = [v for v in values or () if "=" not in v]
    if bare and method != "bm25":
        raise QueryError(
            f"--floor {bare[0]}: a bare number is the BM25 floor, kept for --method bm25; with "
            f"--method {method} write the arm: --floor bm25=N and/or --floor semantic=N"
        )
    used = {"bm25": ("bm25",), "semantic": ("semantic",), "hybrid": ("bm25", "semantic")}[method]
    for arm in floors:
        if arm not in used:
            raise QueryError(
                f"--floor {arm}={floors[arm]:g} changes nothing with --method {method}, which "
                f"ranks with {' and '.join(used)} only; pass --method {arm} or --method hybrid, "
                "or drop the floor"
            )
    return floors


def _floor_label(floors: Mapping[str, float]) -> str:
    return ", ".join(f"{arm}={value:g}" for arm, value in sorted(floors.items()))


def parse_fail_under(specs: Sequence[str], example: str = "ndcg@10=0.8") -> dict[str, float]:
    """``["ndcg@10=0.8", ...]`` -> {"ndcg@10": 0.8}; raises QueryError on bad input."""
    out: dict[str, float] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep:
            raise QueryError(f"--fail-under {spec!r}: write METRIC=VALUE, e.g. {example}")
        parse_metric_key(key)
        try:
            out[key] = float(value)
        except ValueError:
            raise QueryError(
                f"--fail-under {spec!r}: {value!r} is not a number; write e.g. {example}"
            ) from None
        if not math.isfinite(out[key]):
            raise QueryError(f"--fail-under {spec!r}: the value must be finite; write e.g. {example}")
    return out


def check_thresholds(metrics: Mapping[str, float], thresholds: Mapping[str, float]) -> list[str]:
    """Messages for every metric below its threshold (empty when all pass)."""
    failures = []
    for key, minimum in thresholds.items():
        if key not in metrics:
            raise QueryError(
                f"--fail-under {key}: the metric was not computed; computed metrics: "
                f"{', '.join(metrics)} (pass --k to add cut-offs)"
            )
        if metrics[key] < minimum:
            failures.append(f"{key} = {metrics[key]:.4f} is below {minimum:g}")
    return failures


def check_deltas(
    comparison: Comparison, thresholds: Mapping[str, float], fail_on_regression: bool = False
) -> list[str]:
    """Messages for every regression of a non-baseline configuration (empty when all pass).

    ``thresholds`` maps a metric to the lowest acceptable delta against the
    baseline (``{"ndcg@10": -0.01}`` fails a configuration whose ndcg@10 is more
    than 0.01 below the baseline's). ``fail_on_regression`` fails every compared
    metric whose bootstrap interval lies entirely below 0. A delta that is None
    (a score-scale metric across methods) passes every gate.

    Raises:
        QueryError: when a threshold names a metric the comparison lacks.
    """
    compared = list(dict.fromkeys(d.metric for d in comparison.deltas))
    for key in thresholds:
        if key not in compared:
            raise QueryError(
                f"--fail-under {key}: the metric was not compared; compared metrics: "
                f"{', '.join(compared)} (pass --metrics, and --k for other cut-offs)"
            )
    pct = round(comparison.confidence * 100)
    failures = []
    for d in comparison.deltas:
        if d.delta is None or d.ci_high is None:  # different score scales: never gates
            continue
        if d.metric in thresholds and d.delta < thresholds[d.metric]:
            failures.append(
                f"{d.metric} delta of {d.config} vs {comparison.baseline} = {d.delta:+.4f} "
                f"is below {thresholds[d.metric]:g}"
            )
        if fail_on_regression and d.ci_high < 0:
            failures.append(
                f"{d.metric} of {d.config} regressed vs {comparison.baseline}: delta "
                f"{d.delta:+.4f}, {pct}% CI [{d.ci_low:+.4f}, {d.ci_high:+.4f}] lies below 0"
            )
    return failures


@dataclass(frozen=True)
class ConfigSpec:
    """One configuration of ``ranklens compare``: a name, a method, a catalog or run, a floor."""

    name: str
    method: str
    source: str
    floor: float | None = None


def parse_config(spec: str, default_method: str = "bm25") -> ConfigSpec:
    """Parse ``[NAME=]METHOD[@FLOOR]:PATH`` (METHOD may be ``run`` for a saved run file).

    A bare ``PATH`` uses ``default_method``. The name defaults to
    ``METHOD[@FLOOR]:PATH``.
    """
    name = None
    rest = spec
    head, sep, tail = spec.partition("=")
    if sep and ":" in tail and ":" not in head and "/" not in head:
        name, rest = head, tail
    method_part, sep, path = rest.partition(":")
    if not sep or method_part.partition("@")[0] not in (*METHODS, "run"):
        head = method_part.partition("@")[0]
        # "bm52:cat.json" is a misspelt method, not a file named so (unless one exists);
        # one letter is a Windows drive ("C:\\cat.json").
        if sep and re.fullmatch(r"[A-Za-z][\w-]+", head) and not Path(rest).exists():
            raise QueryError(
                f"unknown method {head!r} in --config {spec!r}; valid: {', '.join(METHODS)}, run"
            )
        method_part, path = default_method, rest
    method, at, floor_text = method_part.partition("@")
    floor = None
    if at:
        try:
            floor = float(floor_text)
        except ValueError:
            raise QueryError(
                f"--config {spec!r}: floor {floor_text!r} is not a number; write e.g. bm25@2.5:cat.json"
            ) from None
    if not path:
        raise QueryError(f"--config {spec!r}: no catalog path; write [NAME=]METHOD[@FLOOR]:PATH")
    return ConfigSpec(name or f"{method_part}:{path}", method, path, floor)


def _check_top_k(top_k: int) -> int:
    if top_k < 1:
        raise QueryError(f"--top-k must be at least 1, got {top_k}")
    return top_k


def _cmd_eval(args: argparse.Namespace) -> int:
    try:
        judgments = load_queries(args.queries)
        thresholds = parse_fail_under(args.fail_under or [])
        ks = tuple(sorted(set(args.k or DEFAULT_KS)))
        for k in ks:
            _check_k(k)
        top_k = _check_top_k(args.top_k)
        if args.jobs < 1:
            raise QueryError(f"--jobs must be at least 1, got {args.jobs}")
        floors = parse_eval_floors(args.floor, args.method)
        options = _catalog_options(args, floors)
        # A judged id the catalog lacks is reported before anything is embedded or
        # ranked. With BM25 and several jobs, only the checks run here, so this
        # process builds its index while the workers build theirs.
        if args.jobs > 1 and args.method == "bm25":
            checked_catalog(args.catalog, args.skills, judgments=judgments,
                            queries_source=str(args.queries))
            catalog = None
        else:
            catalog = load_search_catalog(args.catalog, args.method, args.skills,
                                          progress=_embedding_bar(args.method), judgments=judgments,
                                          queries_source=str(args.queries), **options)
        run = run_queries_parallel(args.catalog, judgments, top_k, args.method, jobs=args.jobs,
                                   skills=args.skills, catalog=catalog,
                                   progress=_ranking_bar(len(judgments)), **options)
        report = evaluate(run, judgments, ks)
        failures = check_thresholds(report.metrics, thresholds)
        if args.run_out:
            save_run(run, args.run_out, catalog=str(args.catalog), method=args.method,
                     top_k=top_k, floors=floors)
    except RanklensError as exc:
        print(f"ranklens eval: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = report.to_dict(worst=args.worst)
        out["failures"] = failures
        out["config"] = {"catalog": str(args.catalog), "method": args.method, "top_k": top_k,
                         "floors": floors}
        print(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False))
    else:
        title = f"{args.catalog} · {args.method} · top {top_k}"
        if floors:
            title += f" · floor {_floor_label(floors)}"
        print(format_report(report, args.worst, title))
    if failures:
        for f in failures:
            print(f"ranklens eval: FAIL: {f}", file=sys.stderr)
        return 1
    return 0


def _ranking_bar(total: int, desc: str = "ranking") -> Progress:
    """A progress bar on stderr (drawn only when it is a terminal) for ranking queries."""
    from core.cli import progress_bar

    return progress_bar(total, desc)


def _embedding_bar(method: str) -> Progress | None:
    """The embedding progress bar for semantic and hybrid (BM25 embeds nothing)."""
    if method == "bm25":
        return None
    from core.cli import progress_bar

    return progress_bar(0, "embedding")


def _cmd_compare(args: argparse.Namespace) -> int:
    try:
        judgments = load_queries(args.queries)
        thresholds = parse_fail_under(args.fail_under or [], example="ndcg@10=-0.01")
        specs = [parse_config(p, args.method) for p in args.catalogs]
        specs += [parse_config(c, args.method) for c in args.config or []]
        if len(specs) < 2:
            raise QueryError(
                "compare needs at least two configurations: pass two catalog paths, or "
                "--config [NAME=]METHOD[@FLOOR]:PATH at least twice"
            )
        seen: set[str] = set()
        for s in specs:
            if s.name in seen:
                raise QueryError(f"two configurations are named {s.name!r}; name them NAME=...")
            seen.add(s.name)
        ks = tuple(sorted(set(args.k or DEFAULT_KS)))
        for k in ks:
            _check_k(k)
        top_k = _check_top_k(args.top_k)
        from core.search import parse_floors

        floors = parse_floors(args.floor)
        runs: dict[str, Run] = {}
        methods: dict[str, str | None] = {}
        for s in specs:
            if s.method == "run":
                run, meta = load_run_with_meta(s.source)
                method = meta.get("method")
                methods[s.name] = method if isinstance(method, str) else None
            else:
                catalog = load_search_catalog(s.source, s.method, args.skills,
                                              progress=_embedding_bar(s.method),
                                              judgments=judgments, queries_source=str(args.queries),
                                              **_catalog_options(args, floors))
                run = run_queries(catalog, judgments, top_k, s.method,
                                  progress=_ranking_bar(len(judgments), f"ranking {s.name}"))
                methods[s.name] = s.method
            if s.floor is not None:
                run = apply_floor(run, s.floor)
            runs[s.name] = run
        comparison = compare(runs, judgments, args.metrics.split(",") if args.metrics else None,
                             n_boot=args.n_boot, seed=args.seed, ks=ks, methods=methods)
        extra = [m for m in thresholds if m not in {d.metric for d in comparison.deltas}]
        if extra:  # a gated metric is compared even when --metrics leaves it out
            metrics = list(dict.fromkeys(d.metric for d in comparison.deltas))
            comparison = compare(comparison.reports, judgments, metrics + extra,
                                 n_boot=args.n_boot, seed=args.seed, ks=ks, methods=methods)
        failures = check_deltas(comparison, thresholds, args.fail_on_regression)
    except RanklensError as exc:
        print(f"ranklens compare: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = comparison.to_dict()
        out["failures"] = failures
        print(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False))
    else:
        print(format_comparison(comparison, args.show))
    if failures:
        for f in failures:
            print(f"ranklens compare: FAIL: {f}", file=sys.stderr)
        return 1
    return 0


def add_cli(subparsers: Any) -> None:
    """Add ``ranklens eval`` and ``ranklens compare``.

    Exit codes: 0 ok; 1 a ``--fail-under`` threshold was missed (eval), or a
    delta fell below its ``--fail-under`` or regressed under
    ``--fail-on-regression`` (compare); the failures are printed to stderr;
    2 usage or input error.
    """
    p = subparsers.add_parser(
        "eval",
        help="measure a catalog against a judged query set",
        description="Run every judged query against CATALOG and print hit/recall/precision/"
        "mrr/ndcg at each k, the no-tool figures, and the worst queries. Exit 1 when a "
        "--fail-under threshold is missed, 2 on bad input.",
    )
    p.add_argument("catalog", help="catalog file or folder")
    p.add_argument("queries", help="judged query set (.jsonl)")
    p.add_argument("--method", choices=METHODS, default="bm25", help="ranking method (default bm25)")
    p.add_argument("--model", default=None,
                   help="embedding model for semantic/hybrid (default: the catalog's default)")
    p.add_argument("--top-k", type=int, default=10, help="hits retrieved per query (default 10)")
    p.add_argument("--k", type=int, action="append", metavar="K",
                   help="metric cut-off; repeat for several (default 1, 5, 10)")
    p.add_argument("--floor", action="append", metavar="ARM=SCORE",
                   help="relevance floor per arm, as for `search`: bm25=SCORE (raw BM25 score) or "
                   "semantic=SCORE (cosine); hits below it are dropped; repeatable. A bare number "
                   "is the BM25 floor (--method bm25 only)")
    p.add_argument("--skills", action="store_true", default=None,
                   help="rank the catalog's skills (default: skills only when it has no tools)")
    p.add_argument("--worst", type=int, default=10, help="worst queries to show (default 10)")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of a table")
    p.add_argument("--run-out", metavar="RUN.json", help="also save the run (query -> hits)")
    p.add_argument("--fail-under", action="append", metavar="METRIC=VALUE",
                   help="exit 1 when METRIC is below VALUE, e.g. ndcg@10=0.8; repeatable")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="rank the queries in N processes, each opening the catalog (default 1); "
                   "the results are identical")
    p.set_defaults(func=_cmd_eval)

    c = subparsers.add_parser(
        "compare",
        help="compare configurations on one judged query set",
        description="Evaluate two or more configurations on QUERIES and print each metric's "
        "delta against the first (the baseline) with a paired bootstrap 95% interval, then the "
        "queries that got better and worse. A configuration is a catalog path (ranked with "
        "--method) or --config [NAME=]METHOD[@FLOOR]:PATH, where METHOD is bm25, semantic, "
        "hybrid, or run (PATH is then a run saved by `eval --run-out` or `ranklens run --out`). Examples: "
        "`ranklens compare q.jsonl old.json new.json`; "
        "`ranklens compare q.jsonl --config bm25:cat.json --config hybrid:cat.json`. "
        "FLOOR drops the hits of that configuration scoring below it, in its own scores; "
        "--floor ARM=SCORE sets a relevance floor per arm for every catalog configuration. "
        "no_tool_margin is in score units, so it has no delta between configurations ranked "
        "with different methods (n/a). "
        "As a regression gate: exit 1 when a delta is below a --fail-under threshold or, with "
        "--fail-on-regression, when a delta's interval lies below 0; 2 on bad input.",
    )
    c.add_argument("queries", help="judged query set (.jsonl)")
    c.add_argument("catalogs", nargs="*", help="catalog paths, each ranked with --method")
    c.add_argument("--config", action="append", metavar="[NAME=]METHOD[@FLOOR]:PATH",
                   help="a configuration; repeatable; the first configuration is the baseline")
    c.add_argument("--method", choices=METHODS, default="bm25",
                   help="method for bare catalog paths (default bm25)")
    c.add_argument("--model", default=None,
                   help="embedding model for semantic/hybrid configurations")
    c.add_argument("--top-k", type=int, default=10, help="hits retrieved per query (default 10)")
    c.add_argument("--k", type=int, action="append", metavar="K",
                   help="metric cut-off; repeat for several (default 1, 5, 10)")
    c.add_argument("--metrics", help="comma-separated metrics (default hit@1,hit@5,recall@5,"
                   "mrr@10,ndcg@10 and the no-tool figures)")
    c.add_argument("--skills", action="store_true", default=None,
                   help="rank the catalogs' skills")
    c.add_argument("--floor", action="append", metavar="ARM=SCORE",
                   help="relevance floor per arm for every catalog configuration, as for `search` "
                   "(bm25=SCORE, semantic=SCORE); repeatable")
    c.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    c.add_argument("--show", type=int, default=10, help="better/worse queries to show (default 10)")
    c.add_argument("--json", action="store_true", help="print stable JSON instead of a table")
    c.add_argument("--fail-under", action="append", metavar="METRIC=DELTA",
                   help="exit 1 when any configuration's delta of METRIC against the baseline is "
                   "below DELTA, e.g. ndcg@10=-0.01; repeatable")
    c.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when any compared metric's bootstrap interval lies entirely below 0")
    c.set_defaults(func=_cmd_compare)
