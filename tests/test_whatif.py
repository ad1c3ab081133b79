"""Tests for core.whatif: edits re-rank the judged queries, undo/redo restore exactly,
diffs, term diffs, autosave round trips, incremental index updates, confusability."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core.analysis import DEFAULT_ANALYZER
from core.catalog import Catalog, Skill, Tool, load_catalog, parse_catalog, parse_catalog_bytes
from core.errors import CatalogError
from core.evaluation import Judgment, evaluate, load_queries
from core.search import catalog_for
from core.whatif import (
    AUTOSAVE_ENV,
    Autosave,
    AutosaveData,
    Edit,
    WhatIfSession,
    confusable_pairs,
    default_autosave_dir,
    item_data,
    pair_ids,
    param_fields,
    parse_item_json,
    projection_terms,
    similarity_matrix,
    skill_markdown,
    skills_zip,
    term_diff,
    with_fields,
)

SAMPLES = Path(__file__).resolve().parent.parent / "sample_catalogs"

# --------------------------------------------------------------------------- fixture
#
# Three tools without schemas; analysed projections (checked in test_fixture_terms):
#   send_email      send_email send email send email messag recipi
#   post_chat       post_chat post chat post chat messag channel
#   refund_payment  refund_pay refund payment refund payment card (the whole name is stemmed)
#
# "give the money back" -> give money back: matches no tool (rank None).
# "message to a recipient" -> messag recipi: send_email has both terms, post_chat
#   only messag, so send_email is rank 1.

SEND = Tool(id="send_email", name="send_email", description="Send an email message to a recipient.")
CHAT = Tool(id="post_chat", name="post_chat", description="Post a chat message in a channel.")
REFUND = Tool(id="refund_payment", name="refund_payment", description="Refund a payment to the card.")
Q_MONEY = Judgment("give the money back", {"refund_payment": 1.0})
Q_MESSAGE = Judgment("message to a recipient", {"send_email": 1.0})
Q_NONE = Judgment("book a flight", {})


@pytest.fixture
def original() -> Catalog:
    return Catalog(tools=[SEND, CHAT, REFUND], source="tiny.json", format="native")


@pytest.fixture
def session(original: Catalog) -> WhatIfSession:
    return WhatIfSession(original, [Q_MONEY, Q_MESSAGE, Q_NONE])


def outcome(session: WhatIfSession, query: str):
    return next(o for o in session.result.outcomes if o.query == query)


def test_fixture_terms():
    assert projection_terms(SEND) == ["send_email", "send", "email", "send", "email", "messag", "recipi"]
    assert projection_terms(REFUND) == ["refund_pay", "refund", "payment", "refund", "payment", "card"]


def test_baseline_ranks(session):
    assert outcome(session, Q_MONEY.query).rank_before is None
    assert outcome(session, Q_MESSAGE.query).rank_before == 1
    assert outcome(session, Q_MESSAGE.query).top_before == "send_email"
    assert session.result.won == () and session.result.lost == ()
    assert not session.can_undo and not session.changed_ids()


def test_edit_changes_rank_and_metrics(session):
    edited = REFUND.model_copy(update={"description": "Give the money back: refund a payment to the card."})
    result = session.edit(edited)
    o = outcome(session, Q_MONEY.query)
    assert (o.rank_before, o.rank_after, o.change) == (None, 1, "won")
    assert o.moved_by_last_change and o.rank_previous is None
    assert [w.query for w in result.won] == [Q_MONEY.query]
    assert result.lost == ()
    # Two answerable queries: hit@1 goes from 1/2 to 2/2.
    assert result.metric("hit@1").before == 0.5
    assert result.metric("hit@1").after == 1.0
    assert result.metric("hit@1").delta == 0.5
    assert session.working.tool("refund_payment") == edited
    assert session.original.tool("refund_payment") == REFUND  # the original stays as loaded
    assert session.changed_ids() == ["refund_payment"]


def test_edit_can_lose_a_query(session):
    result = session.edit(SEND.model_copy(update={"description": "Send an email."}))
    o = outcome(session, Q_MESSAGE.query)
    assert (o.rank_before, o.rank_after, o.change) == (1, None, "lost")
    assert [x.query for x in result.lost] == [Q_MESSAGE.query]
    assert o.top_after == "post_chat"


def test_undo_restores_exactly_and_redo_reapplies(session, original):
    before = session.result
    edited = REFUND.model_copy(update={"description": "Give the money back: refund a payment to the card."})
    session.edit(edited)
    session.undo()
    assert session.working.tool("refund_payment") == REFUND
    assert session.working.content_hash == original.content_hash
    assert session.result.after.metrics == before.after.metrics
    assert [o.rank_after for o in session.result.outcomes] == [o.rank_after for o in before.outcomes]
    # The incrementally updated index scores exactly like a fresh one.
    fresh = catalog_for(original)
    for q in ("message to a recipient", "refund the card payment", "chat channel"):
        assert list(session.index.search(q, 10)) == list(fresh.search(q, 10))
    assert not session.can_undo and session.can_redo
    session.redo()
    assert outcome(session, Q_MONEY.query).rank_after == 1
    assert session.working.tool("refund_payment") == edited
    assert session.can_undo and not session.can_redo


def test_new_edit_clears_redo_and_equal_edit_is_not_an_edit(session):
    session.edit(SEND.model_copy(update={"description": "Send an email."}))
    session.undo()
    assert session.can_redo
    session.edit(CHAT.model_copy(update={"description": "Post to a channel."}))
    assert not session.can_redo
    n = len(session.history)
    session.edit(session.item("post_chat"))
    assert len(session.history) == n


def test_revert_all_then_redo_one_by_one(session, original):
    session.edit(SEND.model_copy(update={"description": "Send an email."}))
    session.edit(CHAT.model_copy(update={"description": "Post to a channel."}))
    session.revert_all()
    assert session.working.content_hash == original.content_hash
    assert len(session.redo_stack) == 2
    session.redo()
    assert session.changed_ids() == ["send_email"]


def test_incremental_register_only_reanalyses_the_edited_tool(session):
    index = session.index
    bm25 = index.index

    class Counting:
        def __init__(self, inner):
            self.inner, self.calls = inner, []

        def analyze(self, text):
            self.calls.append(text)
            return self.inner.analyze(text)

    counting = Counting(bm25.analyzer)
    bm25.analyzer = counting
    session.edit(REFUND.model_copy(update={"description": "Give the money back."}))
    assert session.index is index and session.index.index is bm25  # updated in place, not rebuilt
    assert session.reanalysed == ["refund_payment"]
    assert len(counting.calls) == 1 and counting.calls[0].startswith("refund_payment")
    session.undo()
    assert session.reanalysed == ["refund_payment", "refund_payment"]
    assert len(counting.calls) == 2


def test_term_diff(session):
    edited = REFUND.model_copy(update={"description": "Give the money back: refund a payment."})
    d = term_diff(REFUND, edited)
    assert d.added == ("back", "give", "money")
    assert d.removed == ("card",)
    assert ("refund", 2, 2) not in d.counts
    assert ("card", 1, 0) in d.counts and ("give", 0, 1) in d.counts
    assert (d.length_before, d.length_after) == (6, 8)
    session.edit(edited)
    assert session.term_diff("refund_payment") == d
    # A change to a field the index does not see changes no term.
    assert term_diff(REFUND, REFUND.model_copy(update={"group": "billing"})).unchanged


def test_diff_against_original(session):
    session.edit(SEND.model_copy(update={"description": "Send an email."}))
    [d] = session.diff()
    assert d.item_id == "send_email"
    assert '-  "description": "Send an email message to a recipient.",' in d.unified
    assert '+  "description": "Send an email.",' in d.unified
    assert d.terms.removed == ("messag", "recipi")


def test_autosave_round_trip_and_restore(original, tmp_path):
    store = Autosave(tmp_path)
    s1 = WhatIfSession(original, [Q_MONEY, Q_MESSAGE], autosave=store, label="tiny")
    assert store.load(original.content_hash) is None
    e1 = REFUND.model_copy(update={"description": "Give the money back."})
    e2 = SEND.model_copy(update={"description": "Send an email."})
    s1.edit(e1)
    s1.edit(e2)
    s1.undo()
    path = tmp_path / f"{original.content_hash}.json"
    assert path.exists()
    saved = store.load(original.content_hash)
    assert saved.n_edits == 1 and len(saved.undone) == 1 and saved.label == "tiny"
    assert saved.applied[0].after == e1 and saved.undone[0].after == e2

    s2 = WhatIfSession(original, [Q_MONEY, Q_MESSAGE], autosave=store)
    s2.restore(saved)
    assert s2.working.content_hash == s1.working.content_hash
    assert [o.rank_after for o in s2.result.outcomes] == [o.rank_after for o in s1.result.outcomes]
    s2.redo()
    assert s2.working.tool("send_email") == e2
    # Saving a session with nothing to undo or redo removes the file.
    assert store.save(WhatIfSession(original)) is None
    assert not path.exists()


def test_restore_rejects_other_catalog_and_mismatched_edits(original, tmp_path):
    store = Autosave(tmp_path)
    s1 = WhatIfSession(original, autosave=store)
    s1.edit(REFUND.model_copy(update={"description": "Give the money back."}))
    saved = store.load(original.content_hash)
    other = Catalog(tools=[SEND, CHAT, REFUND.model_copy(update={"description": "x y z"})])
    with pytest.raises(CatalogError, match="another catalog"):
        WhatIfSession(other).restore(saved)
    busy = WhatIfSession(original)
    busy.edit(SEND.model_copy(update={"description": "Send an email."}))
    with pytest.raises(CatalogError, match="already has edits"):
        busy.restore(saved)
    # An autosave whose second edit does not fit: nothing is applied, the file is untouched.
    e1, e2 = Edit("tool", "send_email", SEND, SEND.model_copy(update={"description": "a"})), \
        Edit("tool", "post_chat", SEND, SEND)
    bad = AutosaveData(saved.path, original.content_hash, "", (e1, e2), ())
    text = saved.path.read_text(encoding="utf-8")
    fresh = WhatIfSession(original, autosave=store)
    with pytest.raises(CatalogError, match="'post_chat' does not fit"):
        fresh.restore(bad)
    assert fresh.working.content_hash == original.content_hash and not fresh.history
    assert fresh.index.search("send email", 3).ids() == catalog_for(original).search("send email", 3).ids()
    assert saved.path.read_text(encoding="utf-8") == text


def test_autosave_unreadable_file_names_it(original, tmp_path):
    store = Autosave(tmp_path)
    store.path_for(original.content_hash).write_text("{not json", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"cannot read the autosave.*discard"):
        store.load(original.content_hash)


def test_default_autosave_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(AUTOSAVE_ENV, str(tmp_path))
    assert default_autosave_dir() == tmp_path
    monkeypatch.delenv(AUTOSAVE_ENV)
    assert default_autosave_dir().parts[-2:] == ("ranklens", "autosave")


def test_autosave_failure_does_not_break_editing(original, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    session = WhatIfSession(original, [Q_MONEY], autosave=Autosave(blocker / "sub"))
    session.edit(REFUND.model_copy(update={"description": "Give the money back."}))
    assert outcome(session, Q_MONEY.query).rank_after == 1
    assert "autosave" in session.autosave_error


def test_edit_errors(session):
    with pytest.raises(CatalogError, match="no tool with id"):
        session.edit(Tool(id="nope", name="nope"))
    with pytest.raises(CatalogError, match="not a skill"):
        session.edit(Skill(id="s", name="s"))


def test_semantic_session_reembeds_only_the_edited_tool(original, tmp_path):
    from core.embedding import HashingEmbedder

    embedder = HashingEmbedder(64)
    session = WhatIfSession(original, [Q_MONEY, Q_MESSAGE], method="semantic", model=embedder,
                            cache_dir=tmp_path)
    assert embedder.texts_embedded == 3
    session.edit(REFUND.model_copy(update={"description": "Give the money back."}))
    assert embedder.texts_embedded == 4
    fresh = catalog_for(session.working, method="semantic", model=HashingEmbedder(64),
                        cache_dir=tmp_path / "fresh")
    expected = [h.id for h in fresh.search_with(Q_MONEY.query, 3)]
    assert outcome(session, Q_MONEY.query).rank_after == expected.index("refund_payment") + 1
    assert outcome(session, Q_MONEY.query).top_after == expected[0]


# --------------------------------------------------------------------------- form and JSON edits

SCHEMA_TOOL = Tool(
    id="list_orders", name="list_orders", description="List orders.",
    input_schema={
        "type": "object",
        "properties": {
            "status": {"type": "string", "description": "Order state.", "enum": ["open", "shipped"]},
            "limit": {"type": "integer", "enum": [10, 50]},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"type": "string", "description": "Stock unit."}}}},
        },
    },
)


def test_param_fields_follow_projection_order():
    fields = param_fields(SCHEMA_TOOL)
    assert [f.label for f in fields] == ["status", "limit", "items", "items[].sku"]
    assert fields[0].enum == ("open", "shipped") and fields[0].description == "Order state."
    assert fields[1].enum is None and fields[1].other_enum
    assert fields[3].path == ("properties", "items", "items", "properties", "sku")


def test_with_fields_edits_params_and_validates():
    status, _, _, sku = param_fields(SCHEMA_TOOL)
    edited = with_fields(
        SCHEMA_TOOL, name="list_customer_orders", description="List a customer's orders.",
        param_descriptions={status.path: "Fulfilment state.", sku.path: ""},
        param_enums={status.path: ["open", "delivered", ""]},
    )
    assert edited.id == "list_orders" and edited.name == "list_customer_orders"
    props = edited.input_schema["properties"]
    assert props["status"] == {"type": "string", "description": "Fulfilment state.",
                               "enum": ["open", "delivered"]}
    assert "description" not in props["items"]["items"]["properties"]["sku"]
    assert SCHEMA_TOOL.input_schema["properties"]["status"]["enum"] == ["open", "shipped"]
    assert "deliv" in projection_terms(edited) and "ship" not in projection_terms(edited)
    with pytest.raises(CatalogError, match="name"):
        with_fields(SCHEMA_TOOL, name="  ")
    with pytest.raises(CatalogError, match="no property"):
        with_fields(SCHEMA_TOOL, param_descriptions={("properties", "missing"): "x"})


def test_parse_item_json():
    text = json.dumps(item_data(SCHEMA_TOOL))
    assert parse_item_json(text, "tool", "list_orders") == SCHEMA_TOOL
    with pytest.raises(CatalogError, match=r"line 1, column \d+"):
        parse_item_json("{", "tool", "list_orders")
    with pytest.raises(CatalogError, match="id changed"):
        parse_item_json(json.dumps({"name": "other"}), "tool", "list_orders")
    with pytest.raises(CatalogError, match="unknown key"):
        parse_item_json(json.dumps({"id": "list_orders", "name": "x", "descripton": ""}), "tool", "list_orders")


def test_skill_catalog_edits():
    catalog = Catalog(skills=[Skill(id="triage", name="triage", description="Sort the inbox.", tags=["mail"])],
                      format="skills-folder")
    session = WhatIfSession(catalog, [Judgment("clean up my email", {"triage": 1.0})])
    assert session.kind == "skill"
    assert outcome(session, "clean up my email").rank_after is None
    session.edit(with_fields(session.item("triage"), tags=["mail", "email", "clean"]))
    assert outcome(session, "clean up my email").rank_after == 1


# --------------------------------------------------------------------------- export


def test_export_in_loaded_format(tmp_path):
    catalog = load_catalog(SAMPLES / "data_analytics.yaml")
    session = WhatIfSession(catalog)
    tool = catalog.tools[0]
    session.edit(tool.model_copy(update={"description": "Edited."}))
    text, name, mime = session.export_text()
    assert name == "data_analytics.edited.yaml" and mime == "application/yaml"
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    again = load_catalog(path)
    assert again.tool(tool.id).description == "Edited."
    assert again.content_hash == session.working.content_hash

    openai = load_catalog(SAMPLES / "dev_platform.json")
    session = WhatIfSession(openai)
    session.edit(openai.tools[0].model_copy(update={"description": "Edited."}))
    text, name, _ = session.export_text()
    data = json.loads(text)
    assert data[0]["type"] == "function" and data[0]["function"]["description"] == "Edited."
    assert parse_catalog(data).format == "openai"


def test_skills_folder_exports_a_zip_that_loads_back_equal():
    catalog = load_catalog(SAMPLES / "skills")
    session = WhatIfSession(catalog)
    skill = catalog.skills[0]
    edited = skill.model_copy(update={"description": "Edited: a line\n---\nthat looks like a fence.",
                                      "tags": [*skill.tags, "extra: tag"]})
    session.edit(edited)
    content, name, mime = session.export_file()
    assert (name, mime) == ("skills.edited.zip", "application/zip")
    again = parse_catalog_bytes(content, name)
    assert again.format == "skills-folder"
    assert again.content_hash == session.working.content_hash
    assert again.skill(skill.id) == edited
    assert skills_zip(session.working.skills) == content, "the same skills give the same bytes"
    # Other formats still export as text.
    assert WhatIfSession(load_catalog(SAMPLES / "support_billing.json")).export_file()[2] == \
        "application/json"


def test_skill_markdown_keeps_an_id_that_differs_from_the_name():
    skill = Skill(id="brief-1", name="daily briefing", description="", body="# Steps\n\n1. Go.")
    text = skill_markdown(skill)
    assert text.startswith("---\nname: daily briefing\nid: brief-1\n")
    again = parse_catalog_bytes(skills_zip([skill]), "s.zip").skills
    assert again == [skill]


def test_touched_names_the_items_each_change_concerns(session):
    assert session.touched == ()
    e1 = REFUND.model_copy(update={"description": "Give the money back."})
    e2 = SEND.model_copy(update={"description": "Send an email."})
    session.edit(e1)
    assert session.touched == ("refund_payment",)
    session.edit(e2)
    assert session.touched == ("send_email",)
    session.undo()
    assert session.touched == ("send_email",)
    session.undo()
    assert session.touched == ("refund_payment",)
    session.redo()
    assert session.touched == ("refund_payment",)
    session.redo()
    session.revert_all()
    assert session.touched == ("send_email", "refund_payment")  # most recent edit first


def test_restore_touches_the_restored_items(original, tmp_path):
    store = Autosave(tmp_path)
    s1 = WhatIfSession(original, autosave=store)
    s1.edit(REFUND.model_copy(update={"description": "Give the money back."}))
    s1.edit(SEND.model_copy(update={"description": "Send an email."}))
    s2 = WhatIfSession(original, autosave=store)
    s2.restore(store.load(original.content_hash))
    assert s2.touched == ("send_email", "refund_payment")


def test_autosave_is_removed_when_the_working_copy_equals_the_original(original, tmp_path):
    store = Autosave(tmp_path)
    session = WhatIfSession(original, autosave=store)
    path = store.path_for(original.content_hash)
    session.edit(REFUND.model_copy(update={"description": "Give the money back."}))
    assert store.load(original.content_hash).n_edits == 1
    session.undo()
    assert not path.exists(), "after undo nothing differs: no autosave to offer"
    session.redo()
    assert path.exists()
    session.revert_all()
    assert not path.exists()
    # An edit that puts the original text back is the original too.
    session.redo()
    session.edit(REFUND)
    assert len(session.history) == 2 and not path.exists()


# --------------------------------------------------------------------------- latency


def test_rerank_after_one_edit_reanalyses_only_that_tool_on_a_150_tool_catalog():
    # Its speed is measured by bench/whatif_latency.py, not asserted here.
    catalog = load_catalog(SAMPLES / "mcp_workspace.json")
    judgments = load_queries(SAMPLES / "mcp_workspace.queries.jsonl")[:40]
    assert len(catalog.tools) >= 150
    session = WhatIfSession(catalog, judgments)
    tool = catalog.tool(judgments[0].relevant_ids and sorted(judgments[0].relevant_ids)[0])
    result = session.edit(tool.model_copy(update={"description": tool.description + " " + judgments[0].query}))
    assert result.seconds > 0
    assert session.reanalysed == [tool.id]
    # The per-query ranks agree with an evaluation of a freshly built index.
    fresh = catalog_for(session.working)
    run = {j.query: [(h.id, h.score) for h in fresh.search(j.query, 10)] for j in judgments}
    assert evaluate(run, judgments).metrics == result.after.metrics


# --------------------------------------------------------------------------- confusability

P = Tool(id="p", name="alpha", description="red green")
Q = Tool(id="q", name="beta", description="red green")
R = Tool(id="r", name="gamma", description="blue")


def test_confusable_pairs_hand_computed():
    # idf = ln(1 + (N - df + 0.5) / (df + 0.5)), N = 3; p and q share red and green (df 2).
    rare = math.log(1 + 2.5 / 1.5)
    common = math.log(1 + 1.5 / 2.5)
    expected = 2 * common**2 / (rare**2 + 2 * common**2)
    pairs = confusable_pairs([P, Q, R], top_n=5)
    assert len(pairs) == 1  # r shares nothing with anyone
    assert (pairs[0].a, pairs[0].b) == ("p", "q")
    assert pairs[0].similarity == pytest.approx(expected, rel=1e-9)
    assert set(pairs[0].shared) == {"red", "green"}
    ids, matrix = similarity_matrix([P, Q, R], ["q", "p"])
    assert ids == ["q", "p"]
    assert matrix[0][1] == pytest.approx(expected) and matrix[0][0] == pytest.approx(1.0)
    assert pair_ids(pairs) == ["p", "q"]


def test_confusable_pairs_order_and_identical_tools():
    twin = Tool(id="a_twin", name="alpha", description="red green")
    pairs = confusable_pairs([P, Q, R, twin], top_n=2)
    assert (pairs[0].a, pairs[0].b) == ("a_twin", "p")
    assert pairs[0].similarity == pytest.approx(1.0)
    assert len(pairs) == 2 and pairs[1].similarity < 1.0
    assert confusable_pairs([P], top_n=3) == []


def test_analyzer_is_the_index_analyzer():
    assert projection_terms(SEND, DEFAULT_ANALYZER) == catalog_for(Catalog(tools=[SEND])).index.analyzer.analyze(
        "send_email send email Send an email message to a recipient.")
