"""workbench.ui: the pure helpers that turn core results into what the pages show."""

from __future__ import annotations

import pytest

from core.catalog import Catalog, Skill, Tool
from core.lint import Finding
from core.projection import KINDS, tool_projection
from core.search import (
    ArmScore,
    Explanation,
    Hit,
    QueryWord,
    SearchResult,
    TermExplanation,
    ToolCatalog,
)
from workbench import ui


def _term(term: str, tf: int, contribution: float, df: int = 1, idf: float = 1.0,
          fields: tuple[str, ...] = ()) -> TermExplanation:
    return TermExplanation(term, term, tf, df, idf, 10, 10.0, contribution, fields)


def _expl(item_id: str, *terms: TermExplanation, rank: int | None = 0) -> Explanation:
    words = tuple(QueryWord(t.word, t.term, "matched" if t.tf else "missing") for t in terms)
    return Explanation("q", item_id, sum(t.contribution for t in terms), rank, terms, words)


def _result(*ids: str, method: str = "bm25") -> SearchResult:
    return SearchResult(tuple(Hit(i, 1.0 / (r + 1), r) for r, i in enumerate(ids)), method, "q")


def test_every_projection_kind_has_a_colour() -> None:
    assert set(ui.KIND_STYLE) == set(KINDS)


def test_projection_html_escapes_and_colours_every_span() -> None:
    tool = Tool(id="t", name="get_user", description='<img src=x onerror="alert(1)"> & co',
                input_schema={"properties": {"mode": {"enum": ["a<b"]}}})
    projection = tool_projection(tool)
    out = ui.projection_html(projection)
    assert "<img" not in out and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; co" in out
    assert "a&lt;b" in out
    # name, split name, description, parameter "mode", its enum value
    assert out.count('class="rl-span"') == len(projection.spans) == 5
    assert f"background:{ui.KIND_STYLE['enum'][0]}" in out
    assert 'title="input.properties.mode.enum[0] (enum value)"' in out


def test_terms_frame_counts_terms_and_fields() -> None:
    tool = Tool(id="t", name="refund_payment", description="Refund a payment. Refunds are final.")
    frame = ui.terms_frame(tool_projection(tool))
    # The whole name stays one word ("_" joins); its split form gives "refund" and "payment".
    assert frame.to_dict("records") == [
        {"term": "refund_pay", "count": 1, "from words": "refund_payment", "fields": "name"},
        {"term": "refund", "count": 3, "from words": "refund, refunds", "fields": "name.split, description"},
        {"term": "payment", "count": 2, "from words": "payment", "fields": "name.split, description"},
        {"term": "final", "count": 1, "from words": "final", "fields": "description"},
    ]
    counts = dict(zip(frame["term"], frame["count"], strict=True))
    index = ToolCatalog([tool]).index
    assert all(index.explain_terms([t], "t")[0][0].tf == n for t, n in counts.items())


def test_tools_frame_counts_parameters_and_findings() -> None:
    tools = [Tool(id="a", name="a", description="xyz", server="s",
                  input_schema={"properties": {"p": {}, "q": {}}}), Tool(id="b", name="b")]
    findings = [Finding("r", "warning", "a", "", ""), Finding("r2", "info", "a", "", ""),
                Finding("r", "warning", "b", "", "", kind="skill")]
    frame = ui.tools_frame(tools, findings)
    assert frame.to_dict("records") == [
        {"id": "a", "server": "s", "description chars": 3, "parameters": 2, "lint findings": 2,
         "description": "xyz"},
        {"id": "b", "server": "", "description chars": 0, "parameters": 0, "lint findings": 0,
         "description": ""},
    ]
    skills = ui.skills_frame([Skill(id="b", name="b", tags=["x", "y"], tools=["a"])], findings)
    assert skills.to_dict("records")[0] == {"id": "b", "tags": "x, y", "declared tools": 1,
                                                 "description chars": 0, "lint findings": 1,
                                                 "description": ""}


def test_filter_frame_is_case_insensitive_over_text_columns() -> None:
    frame = ui.tools_frame([Tool(id="get_user", name="get_user", description="Fetch a USER"),
                            Tool(id="ping", name="ping", description="health")])
    assert list(ui.filter_frame(frame, "user")["id"]) == ["get_user"]
    assert list(ui.filter_frame(frame, "  ")["id"]) == ["get_user", "ping"]
    assert list(ui.filter_frame(frame, "nothing")["id"]) == []


def test_contributions_frame_and_figure_follow_the_explanations() -> None:
    result = _result("a", "b")
    explanations = {
        "a": _expl("a", _term("refund", 2, 1.5), _term("charg", 1, 0.5), _term("zzz", 0, 0.0, df=0)),
        "b": _expl("b", _term("refund", 0, 0.0), _term("charg", 3, 0.75), _term("zzz", 0, 0.0, df=0)),
    }
    frame = ui.contributions_frame(result, explanations)
    assert list(frame["contribution"]) == [1.5, 0.5, 0.0, 0.0, 0.75, 0.0]
    fig = ui.contribution_figure(frame)
    traces = {t.name: t for t in fig.data}
    assert set(traces) == {"refund", "charg"}  # "zzz" adds nothing to any bar: no trace
    assert list(traces["refund"].x) == [1.5, 0.0] and list(traces["charg"].x) == [0.5, 0.75]
    assert list(traces["refund"].y) == ["#1 a", "#2 b"]
    assert fig.layout.barmode == "stack"


def test_repeated_query_terms_get_their_own_segment() -> None:
    expl = _expl("a", _term("refund", 1, 1.0), _term("refund", 1, 1.0))
    frame = ui.contributions_frame(_result("a"), {"a": expl})
    assert list(frame["term key"]) == ["refund", "refund (2)"]


def test_results_frame_hybrid_columns() -> None:
    hit = Hit("a", 1 / 60 + 1 / 63, 0, (ArmScore("bm25", 0, 5.0, 1 / 60), ArmScore("semantic", 3, 0.4, 1 / 63)))
    lone = Hit("b", 1 / 61, 1, (ArmScore("bm25", None, None, 0.0), ArmScore("semantic", 1, 0.5, 1 / 61)))
    result = SearchResult((hit, lone), "hybrid", "q")
    frame = ui.results_frame(result, {}, {"a": "A tool"}, relevant={"b"})
    assert list(frame.columns) == ["rank", "id", "score", "BM25 rank", "semantic rank",
                                   "BM25 share of score", "matched terms", "judged relevant", "description"]
    assert list(frame["BM25 rank"]) == ["#1", "—"]
    assert list(frame["semantic rank"]) == ["#4", "#2"]
    assert frame["BM25 share of score"][0] == pytest.approx((1 / 60) / (1 / 60 + 1 / 63))
    assert frame["BM25 share of score"][1] == 0.0
    assert list(frame["judged relevant"]) == [False, True]


def test_query_words_frame_says_what_happened() -> None:
    cat = ToolCatalog([Tool(id="a", name="a", description="refund charges"),
                       Tool(id="b", name="b", description="open tickets")])
    expl = cat.explain("refund the Tickets zorblax", "a")
    frame = ui.query_words_frame(expl, 2)
    assert list(frame["searched as"]) == ["refund", "", "ticket", "zorblax"]
    assert list(frame["what happened"]) == [
        "found in 1 of 2 tools",
        "dropped: a stop word, too common to search on",
        "stemmed to “ticket”, found in 1 of 2 tools",
        "absent from the catalog: no tool contains “zorblax”, it cannot match",
    ]
    chips = ui.query_words_html(expl, 2)
    assert chips.count("rl-found") == 2 and chips.count("rl-absent") == 1 and chips.count("rl-stop_word") == 1


def test_lacking_terms_lists_what_the_winners_have() -> None:
    target = _expl("t", _term("refund", 1, 1.0), _term("duplic", 0, 0.0, idf=2.0), _term("charg", 0, 0.0, idf=3.0),
                   _term("zzz", 0, 0.0, df=0))
    w1 = _expl("w1", _term("refund", 1, 1.0), _term("duplic", 1, 1.0), _term("charg", 1, 1.0))
    w2 = _expl("w2", _term("refund", 1, 1.0), _term("duplic", 2, 1.0), _term("charg", 0, 0.0))
    frame = ui.lacking_terms(target, [w1, w2])
    assert frame.to_dict("records") == [
        {"term": "duplic", "query word": "duplic", "idf": 2.0, "winners that have it": 2, "which": "w1, w2"},
        {"term": "charg", "query word": "charg", "idf": 3.0, "winners that have it": 1, "which": "w1"},
    ]
    assert ui.lacking_terms(w1, [w2]).empty


@pytest.mark.parametrize(
    ("a", "b", "arrow"),
    [(3, 0, "▲3"), (0, 1, "▼1"), (2, 2, "="), (None, 4, "new"), (4, None, "dropped"), (None, None, "")],
)
def test_movement(a: int | None, b: int | None, arrow: str) -> None:
    assert ui.movement(a, b) == arrow


def test_compare_frames_and_only_in() -> None:
    a, b = _result("x", "y", "z"), _result("z", "x", "w")
    left, right = ui.compare_frames(a, b)
    assert list(left["in B"]) == ["#2", "not in B", "#1"]
    assert list(right["move"]) == ["▲2", "▼1", "new"]
    assert ui.only_in(a, b) == (["y"], ["w"])


def test_grid_frame_top_n_and_errors() -> None:
    cells = {"q1": {"bm25": _result("a", "b", "c", "d"), "semantic": "(unavailable)"},
             "q2": {"bm25": _result(), "semantic": _result("b")}}
    frame = ui.grid_frame(cells, 3)
    assert list(frame.columns) == ["query", "bm25 top 3", "semantic top 3"]
    assert frame["bm25 top 3"][0] == ["1. a", "2. b", "3. c"]
    assert frame["bm25 top 3"][1] == ["(no hits)"]
    assert frame["semantic top 3"][0] == ["(unavailable)"]


def test_catalog_diff() -> None:
    a = Catalog(tools=[Tool(id="x", name="x"), Tool(id="y", name="y")])
    b = Catalog(tools=[Tool(id="x", name="x", description="new"), Tool(id="z", name="z")])
    assert ui.catalog_diff(a, b).to_dict("records") == [
        {"kind": "tool", "id": "z", "change": "added in B"},
        {"kind": "tool", "id": "x", "change": "changed"},
        {"kind": "tool", "id": "y", "change": "removed in B"},
    ]
    assert ui.catalog_diff(a, a).empty


# --------------------------------------------------------------------------- wording


@pytest.mark.parametrize(("n", "word", "expected"), [
    (0, "tool", "0 tools"), (1, "tool", "1 tool"), (2, "skill", "2 skills"),
    (1, "query", "1 query"), (3, "query", "3 queries"), (2, "day", "2 days"),
    (2, "match", "2 matches"), (1200, "query term", "1,200 query terms"),
    (2, "analysis", "2 analyses"),
])
def test_plural(n: int, word: str, expected: str) -> None:
    many = "analyses" if word == "analysis" else None
    assert ui.plural(n, word, many) == expected


def test_verb_and_worded_texts() -> None:
    assert f"1 tool {ui.verb(1, 'differs', 'differ')}" == "1 tool differs"
    assert f"2 tools {ui.verb(2, 'differs', 'differ')}" == "2 tools differ"
    for method in ui.METHOD_HELP:
        assert "tool" not in ui.method_help(method, "skill")
        assert "{" not in ui.method_help(method, "tool")
    assert "a skill's BM25 score" in ui.worded(ui.CONTRIBUTION_HELP, "skill")
    assert "no tool's text" in ui.worded(ui.ABSENT_HELP)


def test_saved_time_is_readable_local_time() -> None:
    from datetime import UTC, datetime

    text = ui.saved_time("2026-03-04T05:06:07+00:00")
    local = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC).astimezone()
    assert text.startswith(f"{local.day} {local:%b %Y, %H:%M}")
    assert "+00:00" not in text and "T05" not in text
    assert ui.saved_time("not a time") == "not a time"


def test_same_hits_summary() -> None:
    a = _result("x", "y", "z")
    assert ui.same_hits_summary(a, a) == "Both sides return the same 3 hits in the same order."
    assert ui.same_hits_summary(a, _result("y", "x", "z")) == (
        "Both sides return the same 3 hits, in a different order: 2 moved (see the move column).")
    one = _result("x")
    assert ui.same_hits_summary(one, one) == "Both sides return the same 1 hit in the same order."


def test_grid_html_names_what_disagrees() -> None:
    cells = {"q": {"A": _result("x"), "B": _result("y")}}
    assert "the catalog versions disagree" in ui.grid_html(ui.grid_frame(cells), "catalog versions")
    assert "the methods disagree" in ui.grid_html(ui.grid_frame(cells))
