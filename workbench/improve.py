"""Pure helpers for the "Improve" pages (what-if editor, evaluation, eager recall).

No Streamlit here: these turn what `core` computes into the rows, texts and
files the pages show or offer for download, and turn what a user typed or
uploaded into `core` objects. Tested in ``tests/test_app_improve.py``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.cachesim import Conversation, StrategySim, parse_conversation
from core.capabilities import SEARCH_CAPABILITIES
from core.evaluation import EvalReport, Judgment, QueryChange, metric_keys, parse_judgment
from core.lint import RULES, SEVERITIES, Finding
from core.recall import TranscriptError
from core.whatif import QueryOutcome, WhatIfResult

# --------------------------------------------------------------------------- judged queries


def judgments_to_jsonl(judgments: Iterable[Judgment]) -> str:
    """The query set as JSON Lines (ids as a list when every grade is 1, else an object)."""
    lines = []
    for j in judgments:
        binary = all(g == 1.0 for g in j.relevant.values())
        relevant: Any = list(j.relevant) if binary else {k: v for k, v in j.relevant.items()}
        data: dict[str, Any] = {"query": j.query, "relevant": relevant}
        if j.note:
            data["note"] = j.note
        data.update(j.extra)
        lines.append(json.dumps(data, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def add_judgment(judgments: Sequence[Judgment], query: str, relevant: Sequence[str],
                 note: str = "") -> list[Judgment]:
    """The query set with one more judged query (or that query's judgment replaced).

    Raises:
        QueryError: for an empty query.
    """
    new = parse_judgment({"query": query.strip(), "relevant": list(relevant), "note": note},
                         "the new query")
    return [*(j for j in judgments if j.query != new.query), new]


# --------------------------------------------------------------------------- evaluation runs


@dataclass(frozen=True)
class EvalRun:
    """One configuration run over the judged query set.

    ``name`` is what tables call it, e.g. ``bm25 · working copy``; ``catalog_hash``
    is the content hash of the catalog version it ran on (to spot stale results).
    """

    name: str
    method: str
    version: str
    top_k: int
    run: dict[str, list[tuple[str, float]]]
    report: EvalReport
    seconds: float
    catalog_hash: str = ""


def config_name(method: str, version: str) -> str:
    """The display name of a (method, catalog version) configuration."""
    return f"{method} · {version}"


def metrics_rows(runs: Mapping[str, EvalRun]) -> list[dict[str, Any]]:
    """One row per configuration: its metrics (flat keys) and query counts."""
    rows = []
    for name, r in runs.items():
        rows.append({"configuration": name, **{k: round(v, 4) for k, v in r.report.metrics.items()},
                     "queries": r.report.n_queries, "seconds": round(r.seconds, 3)})
    return rows


def per_query_rows(runs: Mapping[str, EvalRun]) -> list[dict[str, Any]]:
    """One row per judged query: for each configuration, the rank of the first relevant
    item (None when not in the run; pages show it as —), ndcg at the largest k, and the top hit."""
    if not runs:
        return []
    first = next(iter(runs.values())).report
    out = []
    for row in first.rows:
        data: dict[str, Any] = {"query": row.query, "relevant": ", ".join(row.relevant) or "(none)"}
        for name, r in runs.items():
            other = r.report.row(row.query)
            key = r.report.sort_metric
            data[f"rank · {name}"] = other.first_rank
            data[f"{key} · {name}"] = None if other.no_tool else round(other.metrics[key], 4)
            data[f"top hit · {name}"] = other.top[0] if other.top else None
        data["note"] = row.note
        out.append(data)
    return out


def results_csv(runs: Mapping[str, EvalRun]) -> str:
    """Per-query results of every configuration as CSV (one row per query and configuration)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    first = next(iter(runs.values()), None)
    keys = metric_keys(first.report.ks) if first else []
    writer.writerow(["configuration", "method", "catalog", "query", "relevant", "first_rank",
                     "top_hit", "top_score", *keys])
    for name, r in runs.items():
        for row in r.report.rows:
            writer.writerow([
                name, r.method, r.version, row.query, " ".join(row.relevant),
                "" if row.first_rank is None else row.first_rank,
                row.top[0] if row.top else "",
                "" if row.top_score is None else f"{row.top_score:.6g}",
                *("" if row.no_tool else f"{row.metrics[k]:.6g}" for k in keys),
            ])
    return buf.getvalue()


def results_json(runs: Mapping[str, EvalRun]) -> str:
    """Every configuration's metrics, per-query rows and ranked hits as JSON."""
    data = {
        "configurations": [
            {"name": name, "method": r.method, "catalog": r.version, "top_k": r.top_k,
             "report": r.report.to_dict(),
             "run": {q: [[i, s] for i, s in hits] for q, hits in r.run.items()}}
            for name, r in runs.items()
        ]
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def findings_by_rule(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings grouped by rule, worst severity first, then by rule id."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.rule, []).append(f)
    return sorted(groups.items(), key=lambda kv: (SEVERITIES.index(RULES[kv[0]].severity), kv[0]))


# --------------------------------------------------------------------------- what-if


def rank_text(rank: object) -> str:
    """A 1-based rank as text; ``—`` for no rank (None, NaN or pandas' <NA>)."""
    if rank is None or (not isinstance(rank, str) and bool(pd.isna(rank))):
        return "—"
    return str(int(rank)) if isinstance(rank, float) else str(rank)


OUTCOME_COLUMNS = ["rank before", "rank after", "change", "last edit", "query", "relevant",
                   "top before", "top after"]
"""Columns of `outcome_rows`, ranks first (so a narrow table still shows them)."""


def outcome_rows(result: WhatIfResult, only_changed: bool = False) -> list[dict[str, Any]]:
    """Per judged query: rank before and after, the change, the query, its relevant items, top hits."""
    rows = []
    for o in result.outcomes:
        if only_changed and o.change == "same":
            continue
        rows.append(outcome_row(o))
    return rows


def outcome_row(o: QueryOutcome) -> dict[str, Any]:
    arrow = {"won": "▲ won", "lost": "▼ lost", "same": ""}[o.change]
    return {
        "rank before": o.rank_before,
        "rank after": o.rank_after,
        "change": arrow,
        "last edit": (f"{rank_text(o.rank_previous)} → {rank_text(o.rank_after)}"
                      if o.moved_by_last_change else ""),
        "query": o.query,
        "relevant": ", ".join(o.relevant) or "(none)",
        "top before": o.top_before,
        "top after": o.top_after,
    }


def change_rows(changes: Iterable[QueryChange], key_metric: str) -> list[dict[str, Any]]:
    """The queries a comparison found better or worse: the rank of the first right item in the
    baseline → in the other configuration (``—`` = not found), and the key metric's change."""
    rows = []
    for c in changes:
        if c.no_tool:
            rank = "now answered with nothing" if c.delta > 0 else "no longer answered with nothing"
        else:
            rank = f"{rank_text(c.baseline_rank)} → {rank_text(c.rank)}"
        rows.append({"rank": rank, "query": c.query, key_metric: round(c.delta, 3)})
    return rows


# --------------------------------------------------------------------------- conversations


ASSISTANT_PREFIXES = ("assistant:", "a:", ">")
USER_PREFIXES = ("user:", "u:")


def conversation_from_text(text: str, system: str = "") -> Conversation:
    """A conversation from a text area: one user message per line.

    A line starting with ``assistant:`` (or ``>``) is the assistant's reply to
    the user line above it; ``user:`` prefixes are optional. Blank lines are skipped.

    Raises:
        TranscriptError: for a reply before any user message, or no user message.
    """
    turns: list[dict[str, Any]] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        lower = line.lower()
        prefix = next((p for p in ASSISTANT_PREFIXES if lower.startswith(p)), None)
        if prefix is not None:
            if not turns:
                raise TranscriptError(f"line {lineno}: an assistant reply comes before any user "
                                      "message. Fix: start with the user's message")
            reply = line[len(prefix):].strip()
            previous = turns[-1].get("assistant")
            turns[-1]["assistant"] = f"{previous}\n{reply}" if previous else reply
            continue
        user_prefix = next((p for p in USER_PREFIXES if lower.startswith(p)), None)
        message = line[len(user_prefix):].strip() if user_prefix else line
        if message:
            turns.append({"user": message})
    if not turns:
        raise TranscriptError("the conversation has no user message. Fix: write one user "
                              "message per line")
    return parse_conversation({"system": system, "turns": turns}, "the text area")


def conversation_from_upload(raw: bytes, name: str) -> Conversation:
    """A conversation from an uploaded JSON file (``{"system", "turns": [...]}``).

    Raises:
        TranscriptError: naming the file, for invalid JSON or shape.
    """
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TranscriptError(f"{name}: not valid UTF-8 JSON ({exc}). Fix: upload a conversation "
                              'file {"system": "...", "turns": [{"user": "..."}]}') from None
    return parse_conversation(data, name)


def drop_unknown_calls(conversation: Conversation, tool_ids: Iterable[str]) -> tuple[Conversation, list[str]]:
    """The conversation without tool calls to tools the catalog lacks, and the ids dropped."""
    known = set(tool_ids)
    dropped: list[str] = []
    turns = []
    for turn in conversation.turns:
        keep = [c for c in turn.tool_calls if c.tool in known]
        dropped += [c.tool for c in turn.tool_calls if c.tool not in known]
        turns.append(turn.model_copy(update={"tool_calls": keep}) if len(keep) != len(turn.tool_calls) else turn)
    if not dropped:
        return conversation, []
    return conversation.model_copy(update={"turns": turns}), list(dict.fromkeys(dropped))


@dataclass(frozen=True)
class PromptLine:
    """One line of a serialised prompt and what it is.

    ``kind`` is ``tools`` (the tool list), ``system``, ``message``,
    ``capability_call`` or ``capability_result`` (the `search_capabilities`
    pair); ``role`` is the message's role ("" for tools and system).
    """

    kind: str
    role: str
    text: str

    @property
    def is_capability(self) -> bool:
        return self.kind in ("capability_call", "capability_result")


_ID_KEYS = ("id", "toolCallId", "tool_use_id", "tool_call_id", "call_id")


def _dicts(value: Any) -> Iterable[dict[str, Any]]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def prompt_lines(prompt: str) -> list[PromptLine]:
    """Split a `core.cachesim` prompt (tools, system, then one message per line) and mark
    the lines that carry a `search_capabilities` call or its result (any message format)."""
    out: list[PromptLine] = []
    call_ids: set[str] = set()
    for n, text in enumerate(prompt.split("\n")):
        if n == 0:
            out.append(PromptLine("tools", "", text))
            continue
        data = json.loads(text)
        if n == 1 and isinstance(data, dict) and set(data) == {"system"}:
            out.append(PromptLine("system", "", text))
            continue
        role = str(data.get("role", "")) if isinstance(data, dict) else ""
        kind = "message"
        for d in _dicts(data):
            fn = d.get("function")
            name = d.get("name") or d.get("toolName") or (fn.get("name") if isinstance(fn, dict) else None)
            if name == SEARCH_CAPABILITIES and role == "assistant":
                call_ids.update(str(d[k]) for k in _ID_KEYS if k in d)
                kind = "capability_call"
            elif any(str(d.get(k)) in call_ids for k in _ID_KEYS if k in d) and role != "assistant":
                kind = "capability_result"
        out.append(PromptLine(kind, role, text))
    return out


def token_rows(sims: Sequence[StrategySim]) -> list[dict[str, Any]]:
    """Long-form rows (strategy, turn, part, tokens) for the cached/uncached chart."""
    rows = []
    for sim in sims:
        for t in sim.turns:
            rows.append({"strategy": sim.strategy, "turn": t.turn, "part": "cached",
                         "tokens": t.cached_tokens})
            rows.append({"strategy": sim.strategy, "turn": t.turn, "part": "uncached",
                         "tokens": t.uncached_tokens})
    return rows


DEFAULT_CACHED_PRICE = 0.10
"""Price of a cached input token as a share of an uncached one (Anthropic bills cache reads at 10%)."""

COST_COLUMN = "cost (full-price tokens)"


def input_cost(uncached: int, cached: int, cached_price: float = DEFAULT_CACHED_PRICE) -> int:
    """Input cost in whole full-price tokens: every uncached token at 1, every cached one at
    ``cached_price`` (halves rounded up, so every place that shows it agrees)."""
    return math.floor(uncached + cached_price * cached + 0.5)


def totals_rows(sims: Sequence[StrategySim],
                cached_price: float = DEFAULT_CACHED_PRICE) -> list[dict[str, Any]]:
    """One row per strategy: the input cost (`input_cost`), then the raw counts: input, cached
    and uncached tokens, cache share, model calls, tools called while not in the prompt."""
    return [
        {"strategy": s.strategy,
         COST_COLUMN: input_cost(s.uncached_tokens, s.cached_tokens, cached_price),
         "input tokens": s.input_tokens, "cached tokens": s.cached_tokens,
         "uncached tokens": s.uncached_tokens, "cached share": round(s.cache_ratio, 3),
         "model calls": s.model_calls,
         "tools missing when called": sum(len(t.missing_tools) for t in s.turns)}
        for s in sims
    ]
