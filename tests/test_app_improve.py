"""AppTest tests of the "Improve" pages (what-if editor, evaluation, eager recall) and
unit tests of their pure helpers in workbench/improve.py."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.cachesim import load_conversation, simulate
from core.capabilities import CapabilityHost
from core.catalog import load_catalog
from core.errors import QueryError
from core.evaluation import Judgment, evaluate, load_queries, parse_queries_text, run_queries
from core.recall import TranscriptError
from core.search import catalog_for
from core.whatif import AUTOSAVE_ENV, item_data, param_fields
from workbench import improve

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "workbench" / "app.py"
SAMPLES = ROOT / "sample_catalogs"
BILLING = SAMPLES / "support_billing.json"
WORKDAY = SAMPLES / "conversations" / "workday.conversation.json"

# In support_billing.json, cancel_subscription ranks 16th for this judged query;
# saying "turn off auto-renew" in its description brings it to the top.
QUERY = "turn off auto-renew for my account"
TOOL = "cancel_subscription"
ADDITION = " Use when the customer wants to turn off auto-renew."


@pytest.fixture(autouse=True)
def autosave_dir(tmp_path, monkeypatch) -> Path:
    """Keep autosaves out of the user's data folder."""
    folder = tmp_path / "autosave"
    monkeypatch.setenv(AUTOSAVE_ENV, str(folder))
    monkeypatch.delenv("RANKLENS_CATALOG", raising=False)
    return folder


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    return at


def open_sample(sample: str, page: str) -> AppTest:
    """Load a bundled sample on the Catalog page, then open ``page``."""
    at = open_page("catalog")
    at.selectbox(key="catalog_sample").set_value(sample)
    at.button(key="catalog_load_sample").click().run()
    at.switch_page(f"views/{page}.py").run()
    return at


def outcome(at: AppTest, query: str = QUERY):
    return next(o for o in at.session_state["whatif"].result.outcomes if o.query == query)


def edit_description(at: AppTest, tool: str = TOOL, addition: str = ADDITION) -> None:
    at.selectbox(key="editor_tool_select").set_value(tool).run()
    area = at.text_area(key="editor_description")
    area.set_value(area.value + addition)
    at.button(key="editor_apply").click().run()
    assert not at.exception, at.exception


def outcomes_frame(at: AppTest):
    return next(d.value for d in at.dataframe if "rank after" in d.value.columns)


# --------------------------------------------------------------------------- every page loads


@pytest.mark.parametrize("page", ["editor", "evaluation", "recall"])
def test_page_loads_without_exception(page):
    at = open_page(page)
    assert at.title[0].value in ("What-if editor", "Evaluation", "Eager recall")
    assert at.caption, "every page explains itself in a caption"


# --------------------------------------------------------------------------- what-if editor


def test_edit_changes_a_rank_and_undo_restores_it():
    at = open_page("editor")
    assert outcome(at).rank_before == 16 and outcome(at).rank_after == 16
    edit_description(at)
    o = outcome(at)
    assert (o.rank_before, o.rank_after, o.change) == (16, 1, "won")
    row = outcomes_frame(at).set_index("query").loc[QUERY]
    assert (row["rank before"], row["rank after"]) == (16, 1)
    assert any("Won: 1" in m.value for m in at.markdown)
    assert any("+auto" in m.value for m in at.markdown), "the term diff names the added term"
    assert at.session_state["working"].tool(TOOL).description.endswith(ADDITION)
    assert at.session_state["catalog"].tool(TOOL).description == load_catalog(BILLING).tool(TOOL).description
    assert any("working copy" in c.value for c in at.sidebar.caption)

    at.button(key="editor_undo").click().run()
    assert not at.exception
    o = outcome(at)
    assert (o.rank_before, o.rank_after, o.change) == (16, 16, "same")
    row = outcomes_frame(at).set_index("query").loc[QUERY]
    assert row["rank after"] == 16
    assert at.session_state["working"] is None
    assert not at.text_area(key="editor_description").value.endswith(ADDITION)

    at.button(key="editor_redo").click().run()
    assert outcome(at).rank_after == 1
    assert at.text_area(key="editor_description").value.endswith(ADDITION)


def test_metric_deltas_match_core():
    at = open_page("editor")
    edit_description(at)
    judgments = load_queries(SAMPLES / "support_billing.queries.jsonl")
    fresh = catalog_for(at.session_state["working"])
    expected = evaluate(run_queries(fresh, judgments, 10), judgments).metrics
    hit1 = next(m for m in at.metric if m.label == "hit@1")
    assert hit1.value == f"{expected['hit@1']:.3f}"
    assert at.session_state["whatif"].result.after.metrics == expected


def test_json_editor_validates_and_keeps_working_copy():
    at = open_page("editor")
    at.text_area(key="editor_json").set_value('{"id": "create_ticket", "name": ""}')
    at.button(key="editor_apply_json").click().run()
    assert not at.exception
    assert any("name" in e.value and "Fix" in e.value for e in at.error)
    assert at.session_state["working"] is None and not at.session_state["whatif"].history

    # The rejected text stays in the editor for fixing.
    assert at.text_area(key="editor_json").value == '{"id": "create_ticket", "name": ""}'
    data = item_data(at.session_state["whatif"].item("create_ticket"))
    data["description"] = "Opens a ticket."
    at.text_area(key="editor_json").set_value(json.dumps(data))
    at.button(key="editor_apply_json").click().run()
    assert not at.error
    assert at.session_state["working"].tool(data["id"]).description == "Opens a ticket."


def test_parameter_enum_edit():
    at = open_page("editor")
    at.selectbox(key="editor_tool_select").set_value(TOOL).run()
    session = at.session_state["whatif"]
    fields = param_fields(session.item(TOOL))
    n = next(i for i, f in enumerate(fields) if f.enum)
    at.text_area(key=f"editor_param_enum_{n}").set_value("now\nlater")
    at.button(key="editor_apply").click().run()
    node = session.item(TOOL).input_schema
    for step in fields[n].path:
        node = node[step]
    assert node["enum"] == ["now", "later"]


def test_edits_survive_page_switches_and_download_keeps_format():
    at = open_page("editor")
    edit_description(at)
    at.switch_page("views/recall.py").run()
    at.switch_page("views/editor.py").run()
    assert not at.exception
    assert len(at.session_state["whatif"].history) == 1 and outcome(at).rank_after == 1
    assert at.selectbox(key="editor_tool_select").value == TOOL
    [download] = [b for b in at.get("download_button") if b.proto.label.startswith("Download (")]
    assert download.proto.label == "Download (native)"
    diff = [c.value for c in at.code if c.language == "diff"]
    assert any(ADDITION.strip() in d for d in diff)


def test_autosave_is_offered_and_restored(autosave_dir):
    first = open_page("editor")
    edit_description(first)
    assert list(autosave_dir.glob("*.json")), "the edit was autosaved"

    second = open_page("editor")  # a new browser session: nothing in session state
    assert not second.session_state["whatif"].history
    assert any("autosave" in m.value for m in second.markdown)
    second.button(key="editor_restore").click().run()
    assert not second.exception
    assert len(second.session_state["whatif"].history) == 1
    assert outcome(second).rank_after == 1

    # After a reload, whatever page opens first points to the autosave.
    fresh = AppTest.from_file(str(APP), default_timeout=60).run()
    assert any("autosaved" in i.value for i in fresh.sidebar.info)

    third = open_page("editor")
    third.button(key="editor_discard_autosave").click().run()
    assert not list(autosave_dir.glob("*.json"))
    assert not [b for b in third.button if b.key == "editor_restore"]


def test_undo_redo_revert_and_restore_select_the_tool_they_concern(autosave_dir):
    other = "list_refunds"
    at = open_page("editor")
    edit_description(at, other, " Refund a duplicate charge.")
    at.switch_page("views/evaluation.py").run()
    at.switch_page("views/editor.py").run()
    at.selectbox(key="editor_tool_select").set_value("create_ticket").run()

    def shown() -> tuple[str, str]:
        heading = next(m.value for m in at.markdown if m.value.startswith("**Indexed words of"))
        return at.selectbox(key="editor_tool_select").value, heading

    at.button(key="editor_undo").click().run()
    assert shown() == (other, f"**Indexed words of `{other}`, working copy vs original**")
    at.selectbox(key="editor_tool_select").set_value("create_ticket").run()
    at.button(key="editor_redo").click().run()
    assert shown()[0] == other
    assert not any("No change" in c.value for c in at.caption), "the edit's terms are shown"
    at.selectbox(key="editor_tool_select").set_value("create_ticket").run()
    at.button(key="editor_revert").click().run()
    assert shown()[0] == other
    at.button(key="editor_redo").click().run()

    second = open_page("editor")  # a new session restores the autosave on the edited tool
    assert second.selectbox(key="editor_tool_select").value == "create_ticket"
    second.button(key="editor_restore").click().run()
    assert not second.exception
    assert second.selectbox(key="editor_tool_select").value == other


def test_failed_apply_json_keeps_the_json_tab_open_with_its_error():
    at = open_page("editor")
    assert at.session_state["editor_mode"] == "Form"
    at.session_state["editor_mode"] = "JSON"  # the user opens the JSON tab
    at.run()
    at.text_area(key="editor_json").set_value('{"id": "create_ticket", "name": ""')
    at.button(key="editor_apply_json").click().run()
    assert not at.exception
    assert at.session_state["editor_mode"] == "JSON"
    form_tab, json_tab = at.tabs[:2]
    assert (form_tab.label, json_tab.label) == ("Form", "JSON")
    assert "invalid JSON at line 1" in json_tab.error[0].value
    assert not form_tab.error
    # The error sits right above the text it is about.
    kinds = [type(e).__name__ for e in json_tab.children.values()]
    assert kinds.index("Error") < kinds.index("TextArea")


def test_editor_labels_and_layout():
    at = open_page("editor")
    session = at.session_state["whatif"]
    fields = param_fields(session.item("create_ticket"))
    labels = [a.label for a in at.text_area if a.key and a.key.startswith("editor_param_desc_")]
    assert labels == [f"Description of `{f.label}`" for f in fields]
    assert labels[0] == "Description of `customer_id`"
    frame = outcomes_frame(at)
    assert list(frame.columns[:3]) == ["rank before", "rank after", "change"]
    table = next(d for d in at.dataframe if "rank after" in d.value.columns)
    assert table.proto.placeholder == "—"
    status = next(c.value for c in at.caption if "applied" in c.value)
    assert status.startswith("0 edits applied · 0 tools differ from the original")
    edit_description(at)
    status = next(c.value for c in at.caption if "applied" in c.value)
    assert status.startswith(f"1 edit applied · 1 tool differs from the original (`{TOOL}`)")


def test_autosave_offer_shows_a_readable_time_and_keeps_the_path_out_of_the_text():
    first = open_page("editor")
    edit_description(first)
    second = open_page("editor")
    offer = next(m.value for m in second.markdown if "autosave" in m.value)
    assert "1 edit**" in offer and f"`{TOOL}`" in offer
    assert "+00:00" not in offer and offer.count(":") == 1, "one readable time, no ISO offset"
    assert str(autosave_dir) not in offer, "the path is in the buttons' tooltips, not the text"
    assert not second.sidebar.info, "the editor offers it itself; the sidebar does not repeat it"
    restore = second.button(key="editor_restore")
    assert restore.help.startswith("The autosave file: ") and restore.help.endswith(".json")


def test_sidebar_mentions_an_autosave_only_when_it_holds_applied_edits(autosave_dir):
    at = open_page("editor")
    edit_description(at)
    assert list(autosave_dir.glob("*.json"))
    at.button(key="editor_undo").click().run()
    assert not list(autosave_dir.glob("*.json")), "nothing differs from the original: no autosave"
    fresh = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not fresh.sidebar.info

    # An autosave that holds only undone edits (as older versions wrote) is not announced either.
    at.button(key="editor_redo").click().run()
    [path] = autosave_dir.glob("*.json")
    data = json.loads(path.read_text())
    data["undone"], data["applied"] = data["applied"], []
    path.write_text(json.dumps(data))
    fresh = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not fresh.sidebar.info

    data["applied"], data["undone"] = data["undone"], []
    path.write_text(json.dumps(data))
    fresh = AppTest.from_file(str(APP), default_timeout=60).run()
    assert [i.value for i in fresh.sidebar.info] == [
        "1 unsaved edit of this catalog from an earlier session was autosaved."]


def test_skills_catalog_downloads_a_zip_of_skill_folders_and_is_worded_for_skills():
    at = open_sample("skills", "editor")
    assert not at.exception
    [download] = [b for b in at.get("download_button") if b.proto.label.startswith("Download (")]
    assert download.proto.label == "Download (skills-folder)"
    assert "skills.edited.zip" in download.proto.help and "SKILL.md" in download.proto.help
    assert any("the right skill moved up" in m.value for m in at.markdown)
    at.switch_page("views/evaluation.py").run()
    assert not at.exception
    assert [t.label for t in at.tabs][-1] == "Confusable skills"
    assert "skill A" in next(d.value for d in at.dataframe if "similarity" in d.value.columns).columns


def test_evaluation_per_query_table_shows_a_dash_for_no_rank():
    at = open_page("evaluation")
    table = next(d for d in at.dataframe if "rank · bm25 · original" in d.value.columns)
    assert table.value["rank · bm25 · original"].isna().any(), "some query has no right tool in the top 10"
    assert table.proto.placeholder == "—"


# --------------------------------------------------------------------------- evaluation


def run_bm25(at: AppTest) -> None:
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception


def test_evaluation_runs_and_shows_metrics():
    at = open_page("evaluation")
    assert list(at.session_state["eval_runs"]) == ["bm25 · original"], "opens on BM25 results"
    at.button(key="eval_clear").click().run()
    assert not any("configuration" in d.value.columns for d in at.dataframe)
    run_bm25(at)
    judgments = load_queries(SAMPLES / "support_billing.queries.jsonl")
    expected = evaluate(run_queries(catalog_for(load_catalog(BILLING)), judgments, 10), judgments).metrics
    metrics = next(d.value for d in at.dataframe if "configuration" in d.value.columns)
    row = metrics.set_index("configuration").loc["bm25 · original"]
    assert row["hit@1"] == round(expected["hit@1"], 4)
    assert row["mrr@10"] == round(expected["mrr@10"], 4)
    per_query = next(d.value for d in at.dataframe if "rank · bm25 · original" in d.value.columns)
    assert len(per_query) == len(judgments)
    # Worst first: not found (NaN) first, then the found ranks from worst to best.
    ranks = per_query["rank · bm25 · original"].tolist()
    found = [r for r in ranks if r == r]
    assert ranks[: len(ranks) - len(found)] != [] and all(r != r for r in ranks[: len(ranks) - len(found)])
    assert found == sorted(found, reverse=True) and found[-1] == 1
    labels = {b.proto.label for b in at.get("download_button")}
    assert {"Export results (CSV)", "Export results (JSON)"} <= labels
    # The drill-down explains the right tool of the selected query.
    assert any("right tool" in m.value for m in at.markdown)
    assert any("contribution" in d.value.columns for d in at.dataframe)


def test_add_a_judged_query_and_bad_upload():
    at = open_page("evaluation")
    n = len(at.session_state["judgments"])
    at.text_input(key="eval_new_query").set_value("stop renewing my plan")
    at.multiselect(key="eval_new_relevant").set_value([TOOL])
    at.button(key="eval_add_query").click().run()
    assert not at.exception
    assert len(at.session_state["judgments"]) == n + 1
    assert at.session_state["judgments"][-1] == Judgment("stop renewing my plan", {TOOL: 1.0})
    assert "(edited)" in at.session_state["judgments_label"]

    uploader = at.get("file_uploader")[0]
    uploader.upload("broken.jsonl", b'{"query": "x"}\n').run()
    assert not at.exception
    assert any("broken.jsonl:1" in e.value and "relevant" in e.value for e in at.error)
    assert len(at.session_state["judgments"]) == n + 1

    uploader = at.get("file_uploader")[0]
    uploader.upload("mine.jsonl", b'{"query": "cancel my plan", "relevant": ["cancel_subscription"]}\n').run()
    assert not at.exception and not at.error
    assert at.session_state["judgments"] == [Judgment("cancel my plan", {TOOL: 1.0})]
    assert at.session_state["judgments_label"] == "mine.jsonl"


def test_compare_original_and_working_copy():
    at = open_page("editor")
    edit_description(at)
    at.switch_page("views/evaluation.py").run()
    at.multiselect(key="eval_versions").set_value(["original", "working copy"]).run()
    run_bm25(at)
    assert set(at.session_state["eval_runs"]) == {"bm25 · original", "bm25 · working copy"}
    table = next(d.value for d in at.dataframe if "95% CI low" in d.value.columns)
    mrr = table.set_index("metric").loc["mrr@10"]
    assert mrr["delta"] > 0 and mrr["95% CI low"] <= mrr["delta"] <= mrr["95% CI high"]
    better = next(d.value for d in at.dataframe if list(d.value.columns[:2]) == ["rank", "query"]
                  and QUERY in d.value["query"].tolist())
    # Rank 16 is outside the runs' top 10: "—", as `ranklens compare` says.
    assert better.set_index("query").loc[QUERY]["rank"] == "— → 1"


def test_lint_finding_opens_the_tool_in_the_editor():
    at = open_page("evaluation")
    keys = [b.key for b in at.button if b.key and b.key.startswith("lint_open_")]
    assert keys, "the sample catalog has lint findings"
    rule = keys[0].removeprefix("lint_open_")
    tool = at.selectbox(key=f"lint_tool_{rule}").value
    at.button(key=keys[0]).click().run()
    assert not at.exception
    assert at.title[0].value == "What-if editor"
    assert at.selectbox(key="editor_tool_select").value == tool


def test_confusability_heatmap():
    at = open_page("evaluation")
    charts = at.get("plotly_chart")
    assert charts, "the confusability heatmap is drawn"
    spec = json.loads(charts[-1].proto.spec)
    assert spec["data"][0]["type"] == "heatmap"
    table = next(d.value for d in at.dataframe if "similarity" in d.value.columns)
    assert table["similarity"].is_monotonic_decreasing


# --------------------------------------------------------------------------- eager recall


def test_recall_chart_for_the_sample_conversation():
    at = open_page("recall")
    assert [b.key for b in at.button] == ["recall_load_catalog"]  # written for another catalog
    at.button(key="recall_load_catalog").click().run()
    assert not at.exception and not at.warning
    assert at.session_state["catalog_label"] == "mcp_workspace.json"
    [chart] = at.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    assert {t["name"] for t in spec["data"]} == {"cached", "uncached"}
    assert "cl100k_base tokens" in json.dumps(spec["layout"])
    totals = next(d.value for d in at.dataframe if "uncached tokens" in d.value.columns)
    host = CapabilityHost.from_catalog(load_catalog(SAMPLES / "mcp_workspace.json"))
    expected = simulate(host, load_conversation(WORKDAY), "eager-recall", top_k=5, format="anthropic")
    row = totals.set_index("strategy").loc["eager-recall"]
    assert row["uncached tokens"] == expected.uncached_tokens
    assert list(totals["strategy"]) == ["all-tools", "top-k", "eager-recall", "on-demand"]
    highlighted = [m.value for m in at.markdown if "search_capabilities" in m.value]
    assert any("call" in h and "inserted by the host" in h for h in highlighted)
    assert any("result" in h for h in highlighted)


def test_recall_totals_cost_with_a_cached_token_price():
    at = open_page("recall")
    at.button(key="recall_load_catalog").click().run()
    totals = next(d.value for d in at.dataframe if "uncached tokens" in d.value.columns)
    assert list(totals.columns[:2]) == ["strategy", improve.COST_COLUMN]
    for _, row in totals.iterrows():
        assert row[improve.COST_COLUMN] == math.floor(row["uncached tokens"] + 0.1 * row["cached tokens"] + 0.5)
    assert any("10% of cached tokens" in c.value for c in at.caption)
    assert [m.label for m in at.metric][:4] == [f"{s} · cost" for s in totals["strategy"]]

    at.number_input(key="recall_cached_price").set_value(0.5).run()
    totals = next(d.value for d in at.dataframe if "uncached tokens" in d.value.columns)
    row = totals.set_index("strategy").loc["all-tools"]
    assert row[improve.COST_COLUMN] == math.floor(row["uncached tokens"] + 0.5 * row["cached tokens"] + 0.5)
    metric = next(m for m in at.metric if m.label == "all-tools · cost")
    assert metric.value == f"{int(row[improve.COST_COLUMN]):,}", "the headline and the table agree"


def test_recall_on_a_skills_catalog():
    at = open_sample("skills", "recall")
    assert not at.exception
    assert any("only skills" in m.value and "eager recall" in m.value for m in at.markdown)
    totals = next(d.value for d in at.dataframe if "uncached tokens" in d.value.columns)
    assert list(totals["strategy"]) == ["eager-recall", "on-demand"]
    assert at.number_input(key="recall_top_k_skills").value == 3
    results = " ".join(c.value for c in at.code[1:])  # after the tool list
    skills = at.session_state["catalog"].skills
    assert any(f"{s.id}" in results for s in skills), "search_capabilities returned skills"
    at.button(key="recall_load_catalog").click().run()
    assert at.session_state["catalog_label"] == "mcp_workspace.json"
    totals = next(d.value for d in at.dataframe if "uncached tokens" in d.value.columns)
    assert len(totals) == 4


def test_recall_written_conversation():
    at = open_page("recall")
    at.radio(key="recall_source").set_value("Write one").run()
    at.text_area(key="recall_text").set_value("refund my last invoice\nassistant: done\nwhat plans are there?").run()
    assert not at.exception
    assert at.get("plotly_chart")
    at.text_area(key="recall_text").set_value("assistant: hello").run()
    assert any("before any user message" in e.value for e in at.error)


# --------------------------------------------------------------------------- pure helpers


def test_parse_queries_text_and_jsonl_round_trip():
    text = ('{"query": "a", "relevant": ["x"], "note": "n"}\n\n'
            '{"query": "b", "relevant": {"x": 2, "y": 1}}\n{"query": "c", "relevant": []}\n')
    judgments = parse_queries_text(text, "q.jsonl")
    assert [j.query for j in judgments] == ["a", "b", "c"]
    assert parse_queries_text(improve.judgments_to_jsonl(judgments)) == judgments
    with pytest.raises(QueryError, match=r"q.jsonl:2: not valid JSON"):
        parse_queries_text('{"query": "a", "relevant": []}\n{oops', "q.jsonl")
    with pytest.raises(QueryError, match="already appears on line 1"):
        parse_queries_text('{"query": "a", "relevant": []}\n{"query": "a", "relevant": []}', "q.jsonl")
    with pytest.raises(QueryError, match="empty"):
        parse_queries_text("\n", "q.jsonl")
    replaced = improve.add_judgment(judgments, " a ", ["y"])
    assert [j.query for j in replaced] == ["b", "c", "a"] and replaced[-1].relevant == {"y": 1.0}


def test_conversation_from_text():
    conv = improve.conversation_from_text("hi\nassistant: hello\n> more\n\nuser: next", system="sys")
    assert conv.system == "sys"
    assert [(t.user, t.assistant) for t in conv.turns] == [("hi", "hello\nmore"), ("next", None)]
    with pytest.raises(TranscriptError, match="no user message"):
        improve.conversation_from_text("  \n")
    with pytest.raises(TranscriptError, match=r"workday\.json"):
        improve.conversation_from_upload(b"{}", "workday.json")


def test_drop_unknown_calls():
    conv = load_conversation(WORKDAY)
    same, dropped = improve.drop_unknown_calls(conv, [c.tool for t in conv.turns for c in t.tool_calls])
    assert same is conv and dropped == []
    stripped, dropped = improve.drop_unknown_calls(conv, ["calendar__list_events"])
    assert "calendar__list_events" not in dropped and "mail__search_messages" in dropped
    assert [c.tool for t in stripped.turns for c in t.tool_calls] == ["calendar__list_events"]


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "ai-sdk"])
def test_prompt_lines_mark_the_capability_pair(fmt):
    host = CapabilityHost.from_catalog(load_catalog(SAMPLES / "mcp_workspace.json"))
    conv = load_conversation(WORKDAY)
    for strategy, pairs in (("eager-recall", 2), ("on-demand", 2), ("top-k", 0)):
        turn = simulate(host, conv, strategy, format=fmt).turns[1]
        lines = improve.prompt_lines(turn.prompt)
        kinds = [ln.kind for ln in lines]
        assert kinds[:2] == ["tools", "system"]
        assert kinds.count("capability_call") == pairs and kinds.count("capability_result") == pairs
        for n, kind in enumerate(kinds):
            if kind == "capability_call":
                assert kinds[n + 1] == "capability_result"
                assert lines[n].role == "assistant"


def test_results_csv_and_json():
    judgments = [Judgment("refund a charge", {"create_refund": 1.0}), Judgment("book a flight", {})]
    index = catalog_for(load_catalog(BILLING))
    run = run_queries(index, judgments, 5)
    report = evaluate(run, judgments)
    runs = {"bm25 · original": improve.EvalRun("bm25 · original", "bm25", "original", 5, run, report, 0.01)}
    rows = list(csv.DictReader(io.StringIO(improve.results_csv(runs))))
    assert [r["query"] for r in rows] == ["refund a charge", "book a flight"]
    assert rows[0]["hit@1"] == f"{report.rows[0].metrics['hit@1']:.6g}" and rows[1]["hit@1"] == ""
    data = json.loads(improve.results_json(runs))
    assert data["configurations"][0]["report"]["metrics"] == report.metrics
    assert improve.per_query_rows(runs)[1]["relevant"] == "(none)"


def test_rank_text_says_dash_for_every_kind_of_missing_rank():
    import pandas as pd

    assert [improve.rank_text(r) for r in (None, float("nan"), pd.NA, 3, 3.0)] == ["—", "—", "—", "3", "3"]


def test_judged_ids_missing_from_the_catalog_are_named_on_the_evaluation_page():
    at = open_page("evaluation")
    from core.evaluation import Judgment

    at.session_state["judgments"] = [
        Judgment(query="money back for my order", relevant={"create_refnd": 1.0}),
        Judgment(query="open a ticket", relevant={"create_ticket": 1.0}),
        Judgment(query="list my invoices", relevant={"list_invoices": 1.0}),
    ]
    at.run()
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "create_refnd" in warning and "create_refund" in warning
