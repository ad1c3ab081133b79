"""The catalog facade: registration, result semantics, explanations, method errors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from core.catalog import Skill, Tool
from core.errors import QueryError
from core.search import SkillCatalog, ToolCatalog

TOOLS = [
    Tool(id="files__search", name="searchFiles", description="Search files by name.",
         input_schema={"type": "object", "properties": {
             "path": {"type": "string", "description": "Folder to search in"},
             "mode": {"type": "string", "enum": ["exact", "fuzzy"]}}}),
    Tool(id="mail__send", name="send_email", description="Send an email to a recipient.",
         input_schema={"type": "object", "properties": {"to": {"type": "string", "description": "Recipient address"}}}),
    Tool(id="cal__create", name="create_event", description="Create a calendar event."),
]


@pytest.fixture
def catalog() -> ToolCatalog:
    return ToolCatalog(TOOLS)


def test_search_returns_hits_with_id_score_and_zero_based_rank(catalog):
    result = catalog.search("search files in a folder", 5)
    assert [h.id for h in result] == ["files__search"]
    assert result[0].rank == 0 and result[0].score > 0
    assert result.method == "bm25" and result.reason is None


def test_empty_and_stop_word_queries_say_why(catalog):
    assert catalog.search("", 5).reason == "the query is empty"
    assert "only stop words" in catalog.search("the of and", 5).reason
    assert "no tool shares a word" in catalog.search("zebra", 5).reason
    assert len(catalog.search("email", 0)) == 0


def test_bad_top_k_and_method_are_rejected_with_the_valid_choices(catalog):
    with pytest.raises(QueryError, match="top_k"):
        catalog.search("x", -1)
    with pytest.raises(QueryError, match="bm25, semantic, hybrid"):
        ToolCatalog(TOOLS, method="dense")


def test_bm25_catalog_refuses_semantic_search_and_says_how(catalog):
    with pytest.raises(QueryError, match='method="semantic" or method="hybrid"'):
        asyncio.run(catalog.search_async("send mail", 3, method="semantic"))
    # The per-call method wins; bm25 through search_async equals search.
    assert asyncio.run(catalog.search_async("send mail", 3)).hits == catalog.search("send mail", 3).hits


def test_register_replaces_by_id_and_reports_only_changed(catalog):
    assert catalog.register(TOOLS[1]) == []  # unchanged: nothing to do
    edited = TOOLS[1].model_copy(update={"description": "Deliver a message to a mailbox."})
    assert catalog.register(edited) == ["mail__send"]
    assert catalog.get("mail__send").description.startswith("Deliver")
    assert [h.id for h in catalog.search("deliver message", 5)] == ["mail__send"]
    assert len(catalog) == 3


def test_register_accepts_dicts_and_names_a_bad_item():
    cat = ToolCatalog([{"name": "ping", "description": "Check a host"}])
    assert "ping" in cat
    with pytest.raises(QueryError, match="#0"):
        ToolCatalog([42])


def test_unregister_unknown_names_the_id(catalog):
    with pytest.raises(QueryError, match="nope"):
        catalog.unregister("nope")


def test_explain_sums_to_the_score_and_names_fields(catalog):
    query = "the fuzzy search of files files"
    exp = catalog.explain(query, "files__search")
    hit = catalog.search(query, 5)[0]
    assert exp.score == hit.score and exp.rank == 0
    total = np.float32(0)
    for t in exp.terms:
        if t.tf:
            total = np.float32(total + np.float32(t.contribution))
    assert float(total) == exp.score
    by_term = {t.term: t for t in exp.terms}
    assert by_term["fuzzi"].fields == ("input.properties.mode.enum[1]",)
    assert set(by_term["search"].fields) == {"name.split", "description", "input.properties.path.description"}
    assert exp.stop_words == ("the", "of")
    assert [t.word for t in exp.terms].count("files") == 2  # duplicates kept


def test_explain_a_tool_outside_the_results(catalog):
    exp = catalog.explain("search files", "cal__create")
    assert exp.rank is None and not exp.matched and exp.score == 0.0
    assert exp.missing_terms == ("search", "file")
    exp2 = catalog.explain("search zebra", "files__search")
    assert exp2.absent_terms == ("zebra",)


def test_skill_catalog_indexes_tags_not_body():
    skills = [
        Skill(id="triage", name="triage-inbox", description="Sort new mail", tags=["email"], body="calendar"),
        Skill(id="plan", name="plan-week", description="Plan the week", tags=["calendar"]),
    ]
    cat = SkillCatalog(skills)
    assert [h.id for h in cat.search("calendar", 5)] == ["plan"]
    assert [h.id for h in cat.search("email", 5)] == ["triage"]


def test_get_an_unknown_id_names_it_with_the_closest_and_the_fix():
    catalog = ToolCatalog([Tool(id="create_refund", name="create_refund", description="Refund."),
                           Tool(id="get_invoice", name="get_invoice", description="An invoice.")])
    with pytest.raises(QueryError) as info:
        catalog.get("create_refnd")
    message = str(info.value)
    assert "no tool 'create_refnd' is registered (did you mean 'create_refund'?)" in message
    assert "ranklens search CATALOG" in message
    with pytest.raises(QueryError, match=r"'zzz' is registered\. Fix:"):  # nothing close: no guess
        catalog.explain("refund", "zzz")


def test_stop_words_are_listed_once_in_query_order():
    catalog = ToolCatalog([Tool(id="a", name="a", description="a report")])
    assert catalog.explain("in that the report is in the", "a").stop_words == ("in", "that", "the", "is")


def test_parse_floors_forms():
    from core.search import parse_floors

    assert parse_floors(["bm25=5", "semantic=0.3"]) == {"bm25": 5.0, "semantic": 0.3}
    assert parse_floors(None) == {}
    assert parse_floors(["3"], bare_arm="bm25") == {"bm25": 3.0}
    for bad in (["3"], ["bm25"], ["bm25=x"], ["bm25=nan"]):
        with pytest.raises(QueryError, match="write ARM=NUMBER"):
            parse_floors(bad)
    with pytest.raises(QueryError, match="unknown arm 'bm52' \\(did you mean 'bm25'\\?\\)"):
        parse_floors(["bm52=3"])
