"""Formatting helpers for the workbench pages: core results in, tables and charts out.

Pure functions, no Streamlit calls and no scoring: every number shown comes
from a `core` object (`SearchResult`, `Explanation`, `Projection`, `Finding`)
and is only rearranged here, so the page scripts stay short and the tests can
check exactly what a page shows.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.analysis import DEFAULT_ANALYZER, Analyzer
from core.catalog import Catalog, Skill, Tool
from core.lint import Finding
from core.projection import KINDS, Projection
from core.search import Explanation, Hit, SearchResult

# --------------------------------------------------------------------------- words

METHOD_HELP: dict[str, str] = {
    "bm25": (
        "**BM25** ranks by shared words: a {item} scores when it contains the query's words "
        "(after analysis), more for rare words, a little more for repeats, less for long texts. "
        "Exactly the reference engine's ranking."
    ),
    "semantic": (
        "**Semantic** ranks by meaning: the query and every {item} are turned into vectors by an "
        "embedding model, and {items} are ordered by cosine similarity. It can match synonyms "
        "BM25 cannot, but its score cannot be split into words."
    ),
    "hybrid": (
        "**Hybrid** merges the BM25 and semantic rankings with Reciprocal Rank Fusion: each "
        "ranking gives a hit 1 / (60 + rank), and the hit's score is the sum of those shares."
    ),
}
"""One short explanation per search method, for captions (fill in with `method_help`)."""

CONTRIBUTION_HELP = (
    "A **term contribution** is the part of a {item}'s BM25 score earned by one query term: "
    "idf (how rare the term is across the catalog) times a weight that grows with how often "
    "the term occurs in the {item}'s text (tf) and shrinks for long texts. The parts add up to "
    "the score."
)

ABSENT_HELP = (
    "**Absent from the catalog** means no {item}'s text contains the word after analysis "
    "(lowercasing, stop-word removal and stemming), so it cannot help any {item} rank. "
    "Adding it to the right {item}'s description would."
)


def worded(text: str, kind: str = "tool") -> str:
    """``text`` with ``{item}`` / ``{items}`` filled in for the catalog's item kind ("tool" or "skill")."""
    return text.format(item=kind, items=plural_word(2, kind))


def method_help(method: str, kind: str = "tool") -> str:
    """`METHOD_HELP` of ``method`` worded for ``kind``."""
    return worded(METHOD_HELP[method], kind)


def plural_word(n: int, word: str, many: str | None = None) -> str:
    """``word`` as it goes with the number ``n``: ``tool``/``tools``, ``query``/``queries``.

    ``many`` gives an irregular plural; otherwise the plural follows the usual
    English spelling rules (``-ies`` after a consonant + y, ``-es`` after s, x, ch, sh).
    """
    if n == 1:
        return word
    if many is not None:
        return many
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in agreement: ``1 tool``, ``2 tools``, ``1,200 queries``."""
    return f"{n:,} {plural_word(n, word, many)}"


def verb(n: int, singular: str, plural_form: str) -> str:
    """The verb form that agrees with ``n`` subjects: ``verb(1, "differs", "differ")``."""
    return singular if n == 1 else plural_form


def saved_time(iso: str) -> str:
    """An ISO timestamp (e.g. ``2026-11-30T13:06:38+00:00``) in this machine's local time,
    as people read it: ``30 Nov 2026, 14:06 CET``. The text itself when it cannot be parsed."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return iso
    local = moment.astimezone() if moment.tzinfo else moment
    return f"{local.day} {local:%b %Y, %H:%M}" + (f" {local:%Z}" if local.tzinfo else "")


KIND_STYLE: dict[str, tuple[str, str]] = {
    "name": ("#c5d0fa", "name"),
    "split_name": ("#dde3fc", "name, split into words"),
    "description": ("#c9ecd4", "description"),
    "param": ("#fde2b8", "parameter name"),
    "param_split": ("#feefd6", "parameter name, split"),
    "param_description": ("#f9d3d9", "parameter description"),
    "enum": ("#e3d5f5", "enum value"),
    "tag": ("#c6eef0", "tag"),
    "tag_split": ("#e0f6f7", "tag, split"),
}
"""Background colour and legend label of each projection field kind."""

TERM_COLORS = (
    "#3b5bdb", "#f08c00", "#2f9e44", "#e03131", "#7048e8", "#0c8599",
    "#d6336c", "#66a80f", "#1971c2", "#e8590c", "#5f3dc4", "#868e96",
)
"""Colours of the query terms in the contribution chart, in query order."""


def rank_label(rank: int | None) -> str:
    """A 0-based rank as people read it: ``#1``; ``—`` when there is none."""
    return "—" if rank is None else f"#{rank + 1}"


# --------------------------------------------------------------------------- catalog page


def param_count(tool: Tool) -> int:
    """Number of top-level input parameters (properties of the input schema)."""
    props = tool.input_schema.get("properties")
    return len(props) if isinstance(props, Mapping) else 0


def findings_per_item(findings: Iterable[Finding]) -> Counter[str]:
    """How many lint findings each tool or skill id has."""
    return Counter(f.tool_id for f in findings)


def tools_frame(tools: Sequence[Tool], findings: Iterable[Finding] = ()) -> pd.DataFrame:
    """One row per tool: id, server, description length, parameter count, lint findings."""
    counts = findings_per_item(f for f in findings if f.kind == "tool")
    return pd.DataFrame(
        {
            "id": [t.id for t in tools],
            "server": [t.server or "" for t in tools],
            "description chars": [len(t.description) for t in tools],
            "parameters": [param_count(t) for t in tools],
            "lint findings": [counts.get(t.id, 0) for t in tools],
            "description": [t.description for t in tools],
        },
        columns=["id", "server", "description chars", "parameters", "lint findings", "description"],
    )


def skills_frame(skills: Sequence[Skill], findings: Iterable[Finding] = ()) -> pd.DataFrame:
    """One row per skill: id, tags, declared tools, description length, lint findings."""
    counts = findings_per_item(f for f in findings if f.kind == "skill")
    return pd.DataFrame(
        {
            "id": [s.id for s in skills],
            "tags": [", ".join(s.tags) for s in skills],
            "declared tools": [len(s.tools) for s in skills],
            "description chars": [len(s.description) for s in skills],
            "lint findings": [counts.get(s.id, 0) for s in skills],
            "description": [s.description for s in skills],
        },
        columns=["id", "tags", "declared tools", "description chars", "lint findings", "description"],
    )


def filter_frame(frame: pd.DataFrame, text: str) -> pd.DataFrame:
    """Rows where any text column contains ``text`` (case-insensitive); all rows for blank text."""
    needle = text.strip().lower()
    if not needle:
        return frame
    text_cols = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])]
    mask = pd.Series(False, index=frame.index)
    for col in text_cols:
        mask |= frame[col].astype(str).str.lower().str.contains(needle, regex=False)
    return frame[mask]


def definition_data(item: Tool | Skill) -> dict[str, Any]:
    """The item's definition as shown on the catalog page (a skill's body is shown apart)."""
    data = item.model_dump(exclude_none=True)
    if isinstance(item, Skill):
        data.pop("body", None)
    return data


def projection_html(projection: Projection) -> str:
    """The projection text with each span on the background colour of its field kind.

    Text is HTML-escaped; hovering a span shows the field path it came from.
    """
    out: list[str] = []
    pos = 0
    for span, text in projection.parts():
        if span.start > pos:
            out.append(html.escape(projection.text[pos : span.start]))
        colour, label = KIND_STYLE.get(span.kind, ("#eeeeee", span.kind))
        out.append(
            f'<span class="rl-span" title="{html.escape(span.path, quote=True)} ({html.escape(label)})" '
            f'style="background:{colour};border-radius:3px;padding:1px 2px;">{html.escape(text)}</span>'
        )
        pos = span.end
    out.append(html.escape(projection.text[pos:]))
    return (
        '<div class="rl-projection" style="line-height:1.9;font-size:0.92rem;'
        'word-break:break-word;">' + "".join(out) + "</div>"
    )


def kind_legend_html(kinds: Iterable[str] = KINDS) -> str:
    """A legend of the field-kind colours (only the kinds given)."""
    chips = []
    for kind in kinds:
        colour, label = KIND_STYLE.get(kind, ("#eeeeee", kind))
        chips.append(
            f'<span style="background:{colour};border-radius:3px;padding:1px 6px;'
            f'margin-right:6px;white-space:nowrap;">{html.escape(label)}</span>'
        )
    return '<div class="rl-legend" style="font-size:0.8rem;line-height:2;">' + " ".join(chips) + "</div>"


def terms_frame(projection: Projection, analyzer: Analyzer = DEFAULT_ANALYZER) -> pd.DataFrame:
    """The index terms of a projection: term, count, the words it came from, the fields it is in."""
    count: Counter[str] = Counter()
    words: dict[str, list[str]] = {}
    fields: dict[str, list[str]] = {}
    for span, text in projection.parts():
        for tok in analyzer.tokens(text):
            if tok.term is None:
                continue
            count[tok.term] += 1
            ws = words.setdefault(tok.term, [])
            if tok.word not in ws:
                ws.append(tok.word)
            fs = fields.setdefault(tok.term, [])
            if span.path not in fs:
                fs.append(span.path)
    terms = list(count)
    return pd.DataFrame(
        {
            "term": terms,
            "count": [count[t] for t in terms],
            "from words": [", ".join(words[t]) for t in terms],
            "fields": [", ".join(fields[t]) for t in terms],
        },
        columns=["term", "count", "from words", "fields"],
    )


def findings_frame(findings: Iterable[Finding], item_id: str) -> pd.DataFrame:
    """The lint findings of one item: severity, rule, where, what, suggested fix."""
    rows = [f for f in findings if f.tool_id == item_id]
    return pd.DataFrame(
        {
            "severity": [f.severity for f in rows],
            "rule": [f.rule for f in rows],
            "where": [f.path for f in rows],
            "problem": [f.message for f in rows],
            "fix": [f.suggestion for f in rows],
        },
        columns=["severity", "rule", "where", "problem", "fix"],
    )


# --------------------------------------------------------------------------- playground


def _arm(hit: Hit, method: str):
    for arm in hit.arms:
        if arm.method == method:
            return arm
    return None


def results_frame(
    result: SearchResult,
    explanations: Mapping[str, Explanation],
    descriptions: Mapping[str, str],
    relevant: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The ranked results: rank, id, score, matched terms, description.

    Hybrid results add each hit's BM25 rank, semantic rank and the part of
    its fused score that came from BM25. A judged query (``relevant`` given)
    adds a "judged relevant" column.
    """
    hybrid = any(h.arms for h in result)
    rows: dict[str, list[Any]] = {"rank": [], "id": [], "score": []}
    if hybrid:
        rows |= {"BM25 rank": [], "semantic rank": [], "BM25 share of score": []}
    rows["matched terms"] = []
    if relevant is not None:
        rows["judged relevant"] = []
    rows["description"] = []
    relevant_set = set(relevant or ())
    for hit in result:
        rows["rank"].append(hit.rank + 1)
        rows["id"].append(hit.id)
        rows["score"].append(float(hit.score))
        if hybrid:
            bm25, sem = _arm(hit, "bm25"), _arm(hit, "semantic")
            rows["BM25 rank"].append(rank_label(bm25.rank if bm25 else None))
            rows["semantic rank"].append(rank_label(sem.rank if sem else None))
            total = sum(a.share for a in hit.arms)
            rows["BM25 share of score"].append((bm25.share / total) if bm25 and total else 0.0)
        expl = explanations.get(hit.id)
        matched = [t.term for t in expl.terms if t.tf] if expl else []
        rows["matched terms"].append(", ".join(dict.fromkeys(matched)))
        if relevant is not None:
            rows["judged relevant"].append(hit.id in relevant_set)
        rows["description"].append(descriptions.get(hit.id, ""))
    return pd.DataFrame(rows)


def hit_label(rank: int, item_id: str) -> str:
    """The y-axis label of a hit in the contribution chart."""
    return f"#{rank + 1} {item_id}"


def contributions_frame(result: SearchResult, explanations: Mapping[str, Explanation]) -> pd.DataFrame:
    """Long form: one row per (hit, query term) with tf, df, idf, contribution and fields.

    ``term key`` tells apart a term that the query repeats (``charg``, ``charg (2)``).
    """
    rows: list[dict[str, Any]] = []
    for hit in result:
        expl = explanations.get(hit.id)
        if expl is None:
            continue
        seen: Counter[str] = Counter()
        for t in expl.terms:
            seen[t.term] += 1
            rows.append(
                {
                    "rank": hit.rank + 1,
                    "id": hit.id,
                    "hit": hit_label(hit.rank, hit.id),
                    "term": t.term,
                    "term key": t.term if seen[t.term] == 1 else f"{t.term} ({seen[t.term]})",
                    "word": t.word,
                    "tf": t.tf,
                    "df": t.df,
                    "idf": float(t.idf),
                    "contribution": float(t.contribution),
                    "fields": ", ".join(t.fields),
                    "bm25 score": float(expl.score),
                }
            )
    columns = ["rank", "id", "hit", "term", "term key", "word", "tf", "df", "idf",
               "contribution", "fields", "bm25 score"]
    return pd.DataFrame(rows, columns=columns)


def contribution_figure(frame: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Stacked horizontal bars: one bar per hit (best at the top), one segment per query term.

    Hovering a segment shows the term, the query word, tf, df, idf, the
    contribution and the fields the term matched.
    """
    hits = list(dict.fromkeys(frame["hit"])) if len(frame) else []
    fig = go.Figure()
    keys = list(dict.fromkeys(frame["term key"])) if len(frame) else []
    for i, key in enumerate(keys):
        part = frame[frame["term key"] == key].set_index("hit").reindex(hits)
        if not part["contribution"].fillna(0.0).any():
            continue  # a term no hit contains adds nothing to any bar
        fields = part["fields"].fillna("").map(lambda s: s.replace(", ", "<br>") or "(none)")
        fig.add_trace(
            go.Bar(
                name=str(key),
                y=hits,
                x=part["contribution"].fillna(0.0).tolist(),
                orientation="h",
                marker_color=TERM_COLORS[i % len(TERM_COLORS)],
                customdata=list(zip(part["word"].fillna(""), part["tf"].fillna(0), part["df"].fillna(0),
                                    part["idf"].fillna(0.0), fields, strict=True)),
                hovertemplate=(
                    "<b>%{y}</b><br>term <b>" + str(key) + "</b> (query word “%{customdata[0]}”)"
                    "<br>contribution %{x:.4f}<br>tf %{customdata[1]} · df %{customdata[2]}"
                    " · idf %{customdata[3]:.4f}<br>matched in:<br>%{customdata[4]}<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        barmode="stack",
        title=title,
        height=120 + 34 * max(len(hits), 1),
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0,
                "title": {"text": "query term: "}, "traceorder": "normal"},
        xaxis={"title": {"text": "BM25 score (sum of term contributions)"}, "rangemode": "tozero"},
        yaxis={"autorange": "reversed", "type": "category", "categoryorder": "array",
               "categoryarray": hits},
    )
    return fig


def query_words_frame(explanation: Explanation, catalog_size: int, kind: str = "tool") -> pd.DataFrame:
    """How each query word was analysed: searched as which term, and what became of it.

    Uses the catalog-wide part of an explanation (stop words, absent terms, df),
    so any item's explanation for the query gives the same table.
    """
    df_of = {t.term: t.df for t in explanation.terms}
    words, terms, what = [], [], []
    for w in explanation.words:
        words.append(w.word)
        terms.append(w.term or "")
        if w.status == "stop_word":
            what.append("dropped: a stop word, too common to search on")
        elif w.status == "absent":
            what.append(f"absent from the catalog: no {kind} contains “{w.term}”, it cannot match")
        else:
            stem = f"stemmed to “{w.term}”, " if w.term != w.word else ""
            what.append(f"{stem}found in {df_of.get(w.term, 0)} of {catalog_size} {kind}s")
    return pd.DataFrame({"query word": words, "searched as": terms, "what happened": what},
                        columns=["query word", "searched as", "what happened"])


QUERY_WORD_STYLE = {
    "found": ("#d3f0dc", "#1b5e20", ""),
    "absent": ("#fde0e0", "#a61e1e", ""),
    "stop_word": ("#eceef3", "#6b7280", "text-decoration:line-through;"),
}


def query_words_html(explanation: Explanation, catalog_size: int, kind: str = "tool") -> str:
    """The query's words as coloured chips: searched term and how many items contain it,
    absent from the catalog (red), or dropped as a stop word (grey, struck through)."""
    df_of = {t.term: t.df for t in explanation.terms}
    chips = []
    for w in explanation.words:
        if w.status == "stop_word":
            style, note = "stop_word", "stop word"
        elif w.status == "absent":
            style, note = "absent", f"→ {w.term} · absent from the catalog"
        else:
            style, note = "found", f"→ {w.term} · in {df_of.get(w.term, 0)}/{catalog_size} {kind}s"
        bg, fg, extra = QUERY_WORD_STYLE[style]
        word = f'<span style="{extra}">{html.escape(w.word)}</span>'
        chips.append(
            f'<span class="rl-word rl-{style}" style="background:{bg};color:{fg};border-radius:12px;'
            f'padding:2px 10px;margin:0 6px 6px 0;display:inline-block;font-size:0.88rem;">'
            f"<b>{word}</b> <span style=\"opacity:0.85\">{html.escape(note)}</span></span>"
        )
    return '<div class="rl-words" style="line-height:1.6;">' + "".join(chips) + "</div>"


def term_table(explanation: Explanation) -> pd.DataFrame:
    """One item's per-term explanation: term, word, tf, df, idf, contribution, fields."""
    return pd.DataFrame(
        {
            "term": [t.term for t in explanation.terms],
            "query word": [t.word for t in explanation.terms],
            "tf": [t.tf for t in explanation.terms],
            "df": [t.df for t in explanation.terms],
            "idf": [float(t.idf) for t in explanation.terms],
            "contribution": [float(t.contribution) for t in explanation.terms],
            "matched fields": [", ".join(t.fields) for t in explanation.terms],
        },
        columns=["term", "query word", "tf", "df", "idf", "contribution", "matched fields"],
    )


def lacking_terms(target: Explanation, winners: Sequence[Explanation]) -> pd.DataFrame:
    """Query terms the target lacks (tf 0) that at least one winner has, with who has them.

    Sorted by how many winners have the term, then by idf (rarer first).
    """
    lacking = {t.term: t for t in target.terms if not t.tf}
    rows = []
    for term, t in lacking.items():
        having = [w.item_id for w in winners if any(x.term == term and x.tf for x in w.terms)]
        if having:
            rows.append({"term": term, "query word": t.word, "idf": float(t.idf),
                         "winners that have it": len(having), "which": ", ".join(having)})
    frame = pd.DataFrame(rows, columns=["term", "query word", "idf", "winners that have it", "which"])
    return frame.sort_values(["winners that have it", "idf"], ascending=False, kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- compare


def movement(rank_a: int | None, rank_b: int | None) -> str:
    """How a hit moved from ranking A to ranking B: ``▲3``, ``▼1``, ``=``, ``new`` or ``dropped``."""
    if rank_a is None and rank_b is None:
        return ""
    if rank_a is None:
        return "new"
    if rank_b is None:
        return "dropped"
    if rank_b < rank_a:
        return f"▲{rank_a - rank_b}"
    if rank_b > rank_a:
        return f"▼{rank_b - rank_a}"
    return "="


def compare_frames(a: SearchResult, b: SearchResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Side-by-side tables: A's hits with their rank in B, B's hits with their move from A."""
    rank_a = {h.id: h.rank for h in a}
    rank_b = {h.id: h.rank for h in b}
    left = pd.DataFrame(
        {
            "rank": [h.rank + 1 for h in a],
            "id": [h.id for h in a],
            "score": [float(h.score) for h in a],
            "in B": [rank_label(rank_b.get(h.id)) if h.id in rank_b else "not in B" for h in a],
        },
        columns=["rank", "id", "score", "in B"],
    )
    right = pd.DataFrame(
        {
            "rank": [h.rank + 1 for h in b],
            "move": [movement(rank_a.get(h.id), h.rank) for h in b],
            "id": [h.id for h in b],
            "score": [float(h.score) for h in b],
        },
        columns=["rank", "move", "id", "score"],
    )
    return left, right


def only_in(a: SearchResult, b: SearchResult) -> tuple[list[str], list[str]]:
    """Ids only in A's hits (dropped by B) and only in B's hits (new in B), in rank order."""
    ids_a, ids_b = a.ids(), b.ids()
    return [i for i in ids_a if i not in set(ids_b)], [i for i in ids_b if i not in set(ids_a)]


def same_hits_summary(a: SearchResult, b: SearchResult) -> str:
    """What to say when both sides return the same hits: whether their order differs, and how
    many hits moved (only meaningful when `only_in` finds nothing)."""
    rank_a = {h.id: h.rank for h in a}
    moved = sum(1 for h in b if rank_a.get(h.id) != h.rank)
    if not moved:
        return f"Both sides return the same {plural(len(a), 'hit')} in the same order."
    return (f"Both sides return the same {plural(len(a), 'hit')}, in a different order: "
            f"{moved} moved (see the move column).")


def grid_frame(cells: Mapping[str, Mapping[str, SearchResult | str]], n: int = 3) -> pd.DataFrame:
    """Queries down, configurations (methods, or catalog versions) across; each cell the
    top-``n`` ids (or an error message). Column ``<configuration> top <n>``."""
    methods: list[str] = list(dict.fromkeys(m for row in cells.values() for m in row))
    data: dict[str, list[Any]] = {"query": list(cells)}
    for m in methods:
        col = []
        for row in cells.values():
            value = row.get(m)
            if isinstance(value, SearchResult):
                col.append([f"{h.rank + 1}. {h.id}" for h in value.hits[:n]] or ["(no hits)"])
            else:
                col.append([value or ""])
        data[f"{m} top {n}"] = col
    return pd.DataFrame(data)


MOVE_COLOURS = {"▲": "#2b8a3e", "▼": "#c92a2a", "new": "#1c5fd1", "dropped": "#868e96",
                "not in B": "#868e96"}


def move_style(value: object) -> str:
    """CSS for a movement cell: green up, red down, blue new."""
    text = str(value)
    for prefix, colour in MOVE_COLOURS.items():
        if text.startswith(prefix):
            return f"color: {colour}; font-weight: 600"
    return ""


def styled_moves(frame: pd.DataFrame) -> Any:
    """``frame`` as a pandas Styler with coloured movement and score formatting."""
    styler = frame.style.format({"score": "{:.4f}"})
    for col in ("move", "in B"):
        if col in frame.columns:
            styler = styler.map(move_style, subset=[col])
    return styler


def grid_html(frame: pd.DataFrame, what: str = "methods") -> str:
    """The multi-query grid (from `grid_frame`) as an HTML table whose cells wrap.

    A query whose columns (``what``: the methods, or the catalog versions)
    disagree on the first hit is flagged.
    """
    methods = [c for c in frame.columns if c != "query"]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["query", *methods])
    body = []
    for _, row in frame.iterrows():
        firsts = {row[m][0] for m in methods if row[m] and row[m][0][:1].isdigit()}
        flag = ('<div class="rl-disagree" style="color:#b35c00;font-size:0.8rem;">'
                f"⚠ the {html.escape(what)} disagree on the first hit</div>") if len(firsts) > 1 else ""
        cells = [f"<td>{html.escape(str(row['query']))}{flag}</td>"]
        for m in methods:
            items = "".join(f"<li>{html.escape(str(x).split('. ', 1)[-1])}</li>"
                            if str(x)[:1].isdigit() else f"<li style='list-style:none'>{html.escape(str(x))}</li>"
                            for x in row[m])
            cells.append(f'<td><ol style="margin:0;padding-left:1.3em;">{items}</ol></td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    style = (
        "<style>.rl-grid{border-collapse:collapse;width:100%;font-size:0.88rem;}"
        ".rl-grid th,.rl-grid td{border:1px solid #dfe3ec;padding:6px 8px;vertical-align:top;text-align:left;}"
        ".rl-grid th{background:#f3f5fa;font-weight:600;}</style>"
    )
    return (f'{style}<table class="rl-grid"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def catalog_diff(a: Catalog, b: Catalog) -> pd.DataFrame:
    """Items added, removed or changed from catalog A to catalog B (by id)."""
    rows = []
    for kind, ia, ib in (("tool", a.tool_index, b.tool_index), ("skill", a.skill_index, b.skill_index)):
        for item_id in ia.keys() | ib.keys():
            if item_id not in ib:
                change = "removed in B"
            elif item_id not in ia:
                change = "added in B"
            elif ia[item_id] != ib[item_id]:
                change = "changed"
            else:
                continue
            rows.append({"kind": kind, "id": item_id, "change": change})
    frame = pd.DataFrame(rows, columns=["kind", "id", "change"])
    return frame.sort_values(["change", "id"], kind="stable").reset_index(drop=True)
