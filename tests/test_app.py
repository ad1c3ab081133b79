"""The workbench pages of issue 6 (catalog, playground, compare) driven by Streamlit's AppTest.

Semantic and hybrid run on the deterministic ``hashing`` embedder (set as the
session's model), so these tests load no model; `test_playground_real_model`
(slow) uses the bundled one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.catalog import Catalog, load_catalog
from core.lint import lint_catalog
from core.projection import tool_projection
from core.search import ToolCatalog, catalog_for
from workbench import ui

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "workbench" / "app.py")
SAMPLE = ROOT / "sample_catalogs" / "support_billing.json"
QUERY = "refund a customer for a duplicate charge"
TIMEOUT = 30
PAGES = ("views/catalog.py", "views/playground.py", "views/compare.py")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RANKLENS_CATALOG", raising=False)
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _app(page: str | None = None, model: str | None = "hashing") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["model"] = model
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page:
        at.switch_page(page).run()
    return at


def _frame(at: AppTest, *columns: str) -> pd.DataFrame:
    """The one dataframe on the page whose first columns are ``columns``."""
    found = [d.value for d in at.dataframe if list(d.value.columns[: len(columns)]) == list(columns)]
    assert len(found) == 1, f"{len(found)} dataframes start with {columns}"
    return found[0]


def _plotly(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    return json.loads(charts[0].proto.spec)


@pytest.fixture(scope="module")
def bm25() -> ToolCatalog:
    return catalog_for(load_catalog(SAMPLE))  # type: ignore[return-value]


# --------------------------------------------------------------------------- every page


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_without_exception(page: str) -> None:
    at = _app(page)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == {"views/catalog.py": "Catalog", "views/playground.py": "Query playground",
                                 "views/compare.py": "Compare"}[page]


def test_widgets_found_by_key() -> None:
    at = _app("views/catalog.py")
    assert at.selectbox(key="catalog_sample").value == "support_billing.json"
    at.button(key="catalog_load_sample")
    at.file_uploader(key="catalog_upload")
    at.text_area(key="catalog_paste")
    at.button(key="catalog_load_paste")
    at.text_input(key="catalog_filter")
    assert at.selectbox(key="catalog_item").value == "create_ticket"

    at.switch_page("views/playground.py").run()
    assert at.text_input(key="playground_query").value  # seeded with the first judged query
    assert at.button_group(key="playground_method").value == "bm25"
    assert at.number_input(key="playground_top_k").value == 10
    at.selectbox(key="playground_example")
    assert at.selectbox(key="playground_why_not").value is None

    at.switch_page("views/compare.py").run()
    assert at.button_group(key="compare_mode").value == "Two methods"
    at.text_input(key="compare_query")
    at.number_input(key="compare_top_k")
    assert at.selectbox(key="compare_method_a").value == "bm25"
    assert at.selectbox(key="compare_method_b").value == "hybrid"
    at.text_area(key="compare_grid_queries")
    assert at.button_group(key="compare_grid_methods").value == ["bm25"]  # no model load by default
    at.button_group(key="compare_mode").set_value("Two catalog versions").run()
    at.selectbox(key="compare_sample_b")
    at.button(key="compare_load_sample_b")
    at.file_uploader(key="compare_upload_b")
    at.selectbox(key="compare_method")
    assert not at.exception


# --------------------------------------------------------------------------- catalog page


def test_malformed_upload_shows_error_and_keeps_catalog() -> None:
    at = _app("views/catalog.py")
    before = at.session_state.catalog
    at.file_uploader(key="catalog_upload").set_value(
        ("broken.json", b'[{"name": "ok"}, {"name": 3}]', "application/json")
    ).run()
    assert not at.exception
    messages = [e.value for e in at.error]
    assert len(messages) == 1
    assert 'broken.json: tools[1]: name must be a string, got a number (3)' in messages[0]
    assert "Fix:" in messages[0]
    assert at.session_state.catalog is before
    assert at.session_state.catalog_label == "support_billing.json"
    assert any("Still loaded: **support_billing.json**" in c.value for c in at.caption)
    # The page still shows the old catalog's tools.
    assert at.selectbox(key="catalog_item").options[0] == "create_ticket"


def test_valid_upload_replaces_the_catalog() -> None:
    at = _app("views/catalog.py")
    mcp = {"tools": [{"name": "read_file", "description": "Read a file from disk.",
                      "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
           "serverInfo": {"name": "fs"}}
    at.file_uploader(key="catalog_upload").set_value(
        ("tools_list.json", json.dumps(mcp).encode(), "application/json")).run()
    assert not at.error and not at.exception
    assert at.session_state.catalog_label == "tools_list.json"
    assert at.session_state.catalog.format == "mcp"
    assert at.selectbox(key="catalog_item").options == ["fs__read_file"]
    table = _frame(at, "id", "server")
    assert table.to_dict("records") == [{"id": "fs__read_file", "server": "fs", "description chars": 22,
                                         "parameters": 1, "lint findings": table["lint findings"][0],
                                         "description": "Read a file from disk."}]


def test_pasted_json_error_then_success() -> None:
    at = _app("views/catalog.py")
    at.text_area(key="catalog_paste").set_value('[{"name": "a"}, {"name": "a"}]')
    at.button(key="catalog_load_paste").click().run()
    assert 'duplicate id "a"' in at.error[0].value
    assert at.session_state.catalog_label == "support_billing.json"

    at.text_area(key="catalog_paste").set_value('[]')
    at.button(key="catalog_load_paste").click().run()
    assert "has no tools and no skills" in at.error[0].value
    assert at.session_state.catalog_label == "support_billing.json"

    at.text_area(key="catalog_paste").set_value(
        '[{"name": "get_user", "description": "Fetch <b>one</b> user & their roles."}]')
    at.button(key="catalog_load_paste").click().run()
    assert not at.error
    assert at.session_state.catalog_label == "pasted JSON"
    projection = at.get("html")[0].value
    assert "Fetch &lt;b&gt;one&lt;/b&gt; user &amp; their roles." in projection
    assert "<b>one</b>" not in projection


@pytest.mark.parametrize("text", ["[{'name': 'a', 'description': 'x'}]",
                                  '[{"name": "a", "description": "x"},]'])
def test_pasted_json_is_read_strictly(text: str) -> None:
    """Invalid JSON is refused as JSON, never read as YAML behind the user's back."""
    at = _app("views/catalog.py")
    assert at.button_group(key="catalog_paste_format").value == "JSON"
    at.text_area(key="catalog_paste").set_value(text)
    at.button(key="catalog_load_paste").click().run()
    assert "pasted JSON: invalid JSON at line 1" in at.error[0].value
    assert any("Choose **YAML**" in c.value for c in at.caption)
    assert at.session_state.catalog_label == "support_billing.json"


def test_pasted_yaml_when_chosen() -> None:
    at = _app("views/catalog.py")
    at.button_group(key="catalog_paste_format").set_value("YAML").run()
    at.text_area(key="catalog_paste").set_value("- name: get_user\n  description: Fetch one user.\n")
    at.button(key="catalog_load_paste").click().run()
    assert not at.error and not at.exception
    assert at.session_state.catalog_label == "pasted YAML"
    assert at.session_state.catalog.tool("get_user").description == "Fetch one user."
    assert any("read as YAML" in t.proto.body for t in at.get("toast"))


def test_selecting_a_tool_shows_projection_terms_and_findings() -> None:
    at = _app("views/catalog.py")
    at.selectbox(key="catalog_item").set_value("create_refund").run()
    assert any(m.value == "#### create_refund" for m in at.markdown)
    spans = at.get("html")[0].value
    projection = tool_projection(at.session_state.catalog.tool("create_refund"))
    assert spans.count('class="rl-span"') == len(projection.spans)
    terms = _frame(at, "term", "count")
    assert int(terms.set_index("term").loc["refund", "count"]) == 9  # tf of "refund" in the index
    json_view = at.get("json")[0].proto.body
    assert '"create_refund"' in json_view

    findings = [f for f in lint_catalog(load_catalog(SAMPLE)) if f.tool_id == "search_tickets"]
    assert findings  # the sample has a finding on this tool
    at.selectbox(key="catalog_item").set_value("search_tickets").run()
    shown = at.table[0].value
    assert list(shown["rule"]) == [f.rule for f in findings]
    assert list(shown["fix"]) == [f.suggestion for f in findings]


def test_filter_narrows_the_table() -> None:
    at = _app("views/catalog.py")
    at.text_input(key="catalog_filter").set_value("refund").run()
    table = _frame(at, "id", "description chars")
    assert len(table) and all(
        "refund" in (row["id"] + row["description"]).lower() for _, row in table.iterrows())


def test_skills_catalog_shows_skills() -> None:
    at = _app("views/catalog.py")
    at.selectbox(key="catalog_sample").set_value("skills")
    at.button(key="catalog_load_sample").click().run()
    assert not at.exception and not at.error
    table = _frame(at, "id", "tags")
    assert "daily_briefing" in set(table["id"])
    at.selectbox(key="catalog_item").set_value("daily_briefing").run()
    assert any("Skill body" in e.label for e in at.expander)


# --------------------------------------------------------------------------- playground


def test_playground_chart_matches_core_explanations(bm25: ToolCatalog) -> None:
    at = _app()  # the playground is the default page
    at.text_input(key="playground_query").set_value(QUERY).run()
    assert not at.exception

    result = bm25.search(QUERY, 10)
    explanations = {h.id: bm25.explain(QUERY, h.id) for h in result}
    # The builder the page uses gives the core numbers...
    frame = ui.contributions_frame(result, explanations)
    for hit in result:
        rows = frame[frame["id"] == hit.id]
        expl = explanations[hit.id]
        assert list(rows["contribution"]) == [t.contribution for t in expl.terms]
        assert list(rows["tf"]) == [t.tf for t in expl.terms]
        assert sum(rows["contribution"]) == pytest.approx(hit.score, rel=1e-6)

    # ...and the page shows the same: one trace per matched term, one bar per hit.
    spec = _plotly(at)
    labels = [f"#{h.rank + 1} {h.id}" for h in result]
    traces = {t["name"]: t for t in spec["data"]}
    assert set(traces) == {"refund", "custom", "duplic", "charg"}
    for trace in spec["data"]:
        assert trace["y"] == labels
        assert trace["x"] == [next(t.contribution for t in explanations[h.id].terms if t.term == trace["name"])
                              for h in result]
    create_refund = [traces[n]["x"][0] for n in ("refund", "custom", "duplic", "charg")]
    assert sum(create_refund) == pytest.approx(8.6352, abs=1e-4)
    assert traces["refund"]["customdata"][0][:3] == ["refund", 9, 10]  # word, tf, df

    table = _frame(at, "rank", "id", "score")
    assert list(table["id"]) == result.ids()
    assert list(table["score"]) == [h.score for h in result]


def test_playground_query_terms_panel() -> None:
    at = _app()
    at.text_input(key="playground_query").set_value("refund the zorblax charges").run()
    words = _frame(at, "query word", "searched as")
    what = dict(zip(words["query word"], words["what happened"], strict=True))
    assert what["the"].startswith("dropped: a stop word")
    assert what["zorblax"].startswith("absent from the catalog")
    assert what["charges"] == "stemmed to “charg”, found in 8 of 67 tools"
    chips = at.get("html")[0].value
    assert chips.count("rl-absent") == 1 and chips.count("rl-stop_word") == 1


def test_playground_empty_result_shows_reason() -> None:
    at = _app()
    at.text_input(key="playground_query").set_value("the and of").run()
    assert not at.exception
    assert any("no searchable words" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_why_not_this_tool(bm25: ToolCatalog) -> None:
    at = _app()
    at.text_input(key="playground_query").set_value(QUERY).run()
    at.selectbox(key="playground_why_not").set_value("get_refund").run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rank in these bm25 results"] == "#7"
    assert metrics["BM25 rank, whole catalog"] == f"#{bm25.explain(QUERY, 'get_refund').rank + 1}"
    assert metrics["BM25 score"] == f"{bm25.explain(QUERY, 'get_refund').score:.4f}"
    lacking = _frame(at, "term", "query word", "idf")
    assert set(lacking["term"]) == {"duplic", "charg"}  # get_refund has refund and custom only
    assert "get_refund** lacks 2 query terms that tools ranked above it have" in at.warning[0].value


def test_playground_hybrid_shows_arm_ranks() -> None:
    at = _app()
    at.text_input(key="playground_query").set_value(QUERY).run()
    at.button_group(key="playground_method").set_value("hybrid").run()
    assert not at.exception and not at.error
    table = _frame(at, "rank", "id", "score", "BM25 rank", "semantic rank", "BM25 share of score")
    index = catalog_for(load_catalog(SAMPLE), method="hybrid", model="hashing")
    result = index.search_with(QUERY, 10, "hybrid")
    assert list(table["id"]) == result.ids()
    first = result[0]
    bm, sem = first.arms
    assert table["BM25 rank"][0] == ui.rank_label(bm.rank)
    assert table["semantic rank"][0] == ui.rank_label(sem.rank)
    assert table["BM25 share of score"][0] == pytest.approx(bm.share / (bm.share + sem.share))
    assert any("explain the **BM25** score" in i.value for i in at.info)


def test_playground_model_error_keeps_bm25_usable() -> None:
    at = _app(model="local:/nonexistent/model")
    at.text_input(key="playground_query").set_value(QUERY).run()
    at.button_group(key="playground_method").set_value("semantic").run()
    assert not at.exception
    assert "semantic search is not available" in at.error[0].value
    assert "/nonexistent/model does not exist" in at.error[0].value
    assert _frame(at, "rank", "id", "score")["id"][0] == "create_refund"  # BM25 results instead


@pytest.mark.slow
def test_playground_real_model() -> None:
    at = _app(model=None)
    at.text_input(key="playground_query").set_value(QUERY).run(timeout=180)
    at.button_group(key="playground_method").set_value("semantic").run(timeout=180)
    assert not at.exception and not at.error
    assert _frame(at, "rank", "id", "score")["id"][0] == "create_refund"


def test_playground_on_a_skills_catalog() -> None:
    at = _app("views/catalog.py")
    at.selectbox(key="catalog_sample").set_value("skills")
    at.button(key="catalog_load_sample").click().run()
    at.switch_page("views/playground.py").run()
    assert not at.exception and not at.error
    at.text_input(key="playground_query").set_value("prepare my morning agenda").run()
    assert not at.exception and not at.error
    table = _frame(at, "rank", "id", "score")
    skills = catalog_for(at.session_state.catalog)
    assert list(table["id"]) == skills.search("prepare my morning agenda", 10).ids()
    assert "daily_briefing" in set(table["id"])
    at.selectbox(key="playground_why_not").set_value("daily_briefing").run()
    assert not at.exception
    assert at.subheader[-1].value == "Why not this skill?"


# --------------------------------------------------------------------------- compare


def test_compare_methods_shows_moves() -> None:
    at = _app("views/compare.py")
    at.text_input(key="compare_query").set_value(QUERY).run()
    assert not at.exception and not at.error
    index = catalog_for(load_catalog(SAMPLE), method="hybrid", model="hashing")
    a = index.search_with(QUERY, 10, "bm25")
    b = index.search_with(QUERY, 10, "hybrid")
    left, right = ui.compare_frames(a, b)
    pd.testing.assert_frame_equal(_frame(at, "rank", "id", "score", "in B"), left)
    shown = _frame(at, "rank", "move", "id", "score")
    pd.testing.assert_frame_equal(shown, right)
    rank_a = {h.id: h.rank for h in a}
    for _, row in shown.iterrows():
        if row["id"] not in rank_a:
            assert row["move"] == "new"
        else:
            assert row["move"] == ui.movement(rank_a[row["id"]], row["rank"] - 1)
    only_a, only_b = ui.only_in(a, b)
    if only_a or only_b:
        assert any("Only in A" in m.value for m in at.markdown)


def _v2_bytes() -> tuple[Catalog, bytes]:
    """support_billing with create_refund removed and list_refunds reworded toward duplicates."""
    cat = load_catalog(SAMPLE)
    tools = [t for t in cat.tools if t.id != "create_refund"]
    tools = [t.model_copy(update={"description": t.description + " Refund a duplicate charge."})
             if t.id == "list_refunds" else t for t in tools]
    v2 = Catalog(tools=tools, format="native")
    return v2, json.dumps(v2.to_data()).encode()


def test_compare_catalog_versions() -> None:
    at = _app("views/compare.py")
    at.text_input(key="compare_query").set_value(QUERY).run()
    at.button_group(key="compare_mode").set_value("Two catalog versions").run()
    assert any("Load catalog B" in i.value for i in at.info)

    at.file_uploader(key="compare_upload_b").set_value(("v2.json", b"{oops", "application/json")).run()
    assert "Catalog B could not be loaded" in at.error[0].value
    assert at.session_state.catalog_b is None

    at.selectbox(key="compare_sample_b").set_value("dev_platform.json")
    at.button(key="compare_load_sample_b").click().run()
    assert at.session_state.catalog_b_label == "dev_platform.json"
    assert not at.error

    v2, raw = _v2_bytes()
    at.file_uploader(key="compare_upload_b").set_value(("v2.json", raw, "application/json")).run()
    assert not at.exception and not at.error
    assert at.session_state.catalog_b.content_hash == v2.content_hash
    assert at.session_state.catalog_b_label == "v2.json"
    diff = _frame(at, "kind", "id", "change")
    assert diff.to_dict("records") == [{"kind": "tool", "id": "list_refunds", "change": "changed"},
                                       {"kind": "tool", "id": "create_refund", "change": "removed in B"}]
    right = _frame(at, "rank", "move", "id", "score")
    assert right["id"][0] == "list_refunds" and right["move"][0] == "▲1"
    assert any("**Only in A** (dropped by B): `create_refund`" in m.value for m in at.markdown)


def test_compare_grid_top3_per_method() -> None:
    at = _app("views/compare.py")
    at.text_area(key="compare_grid_queries").set_value(f"{QUERY}\n\nopen a ticket\n{QUERY}\n").run()
    at.button_group(key="compare_grid_methods").set_value(["semantic", "bm25"]).run()
    assert not at.exception and not at.error
    grid = at.get("html")[-1].value
    assert "<th>query</th><th>bm25 top 3</th><th>semantic top 3</th>" in grid  # methods in order
    assert "hybrid" not in grid
    rows = grid.split("<tr>")[2:]
    assert [r.split("<td>")[1].split("<")[0] for r in rows] == [QUERY, "open a ticket"]  # no blanks, no repeats
    bm25 = catalog_for(load_catalog(SAMPLE))
    expected = "".join(f"<li>{h.id}</li>" for h in bm25.search(QUERY, 3))
    assert expected in rows[0].split("<td>")[2]
    semantic = catalog_for(load_catalog(SAMPLE), method="semantic", model="hashing")
    first = semantic.search_with(QUERY, 1, "semantic")[0].id
    disagree = "rl-disagree" in rows[0]
    assert disagree == (first != bm25.search(QUERY, 1)[0].id)


def test_embedding_layer_notices_are_worded_for_the_user():
    from core.catalog import Tool
    from core.embedding import HashingEmbedder
    from core.search import ToolCatalog
    from workbench.services import embedding_notices

    index = ToolCatalog(
        [Tool(id="a", name="a", description="x")], method="hybrid",
        model=HashingEmbedder(16), persistent_cache=False,
    )
    assert embedding_notices(index) == []
    index.embedding_cache.degraded_reason = "cache folder /ro is read-only"
    index.embedding_cache.rebuilt_reason = "file was truncated"
    notices = embedding_notices(index)
    assert notices[0] == "Embeddings are kept in memory only this session: cache folder /ro is read-only"
    assert "rebuilt: file was truncated" in notices[1]


def test_a_failing_core_call_shows_an_error_and_other_pages_stay_usable(monkeypatch) -> None:
    from core.search import ToolCatalog

    def broken(self, *args, **kwargs):
        raise RuntimeError("index exploded")

    monkeypatch.setattr(ToolCatalog, "search_with", broken)
    at = _app("views/playground.py")
    assert not at.exception
    assert any("index exploded" in e.value and "other pages still work" in e.value for e in at.error)
    at.switch_page("views/catalog.py").run()
    assert not at.exception and not at.error
    assert at.session_state["catalog"] is not None


# --------------------------------------------------------------------------- review fixes


def test_default_method_is_followed_by_playground_compare_and_evaluation() -> None:
    """The sidebar's default method seeds each page's method widget and switches it when it
    changes; in between, a page keeps the method picked on it."""
    at = _app()
    assert at.button_group(key="playground_method").value == "bm25"
    at.button_group(key="playground_method").set_value("semantic").run()
    at.switch_page("views/catalog.py").run()
    at.switch_page("views/playground.py").run()
    assert at.button_group(key="playground_method").value == "semantic", "the page's own pick stays"

    at.sidebar.selectbox(key="sidebar_method").set_value("hybrid").run()
    assert not at.exception
    assert at.button_group(key="playground_method").value == "hybrid", "follows a sidebar change"

    at.switch_page("views/compare.py").run()
    at.button_group(key="compare_mode").set_value("Two catalog versions").run()
    assert at.selectbox(key="compare_method").value == "hybrid"

    at.switch_page("views/evaluation.py").run()
    assert at.multiselect(key="eval_methods").value == ["hybrid"]
    at.sidebar.selectbox(key="sidebar_method").set_value("bm25").run()
    assert at.multiselect(key="eval_methods").value == ["bm25"]
    assert "switches them" in at.sidebar.selectbox(key="sidebar_method").help


def test_playground_words_skills_as_skills() -> None:
    at = _app("views/catalog.py")
    at.selectbox(key="catalog_sample").set_value("skills")
    at.button(key="catalog_load_sample").click().run()
    at.switch_page("views/playground.py").run()
    judged = next(j.query for j in at.session_state.judgments)
    at.text_input(key="playground_query").set_value(judged).run()
    captions = " ".join(c.value for c in at.caption)
    assert "a ticked box marks the skills judged relevant" in captions
    assert "a skill's BM25 score" in captions
    assert "tool" not in ui.method_help(at.button_group(key="playground_method").value, "skill")
    assert any("32 skills" in m.value for m in at.sidebar.markdown)


def _reordered_v2(query: str) -> tuple[Catalog, bytes]:
    """support_billing where the 6th hit for ``query`` says "charge" once more: it moves up to
    second, and the top 10 holds the same tools."""
    cat = load_catalog(SAMPLE)
    sixth = catalog_for(cat).search(query, 10)[5].id
    tools = [t.model_copy(update={"description": t.description + " charge"})
             if t.id == sixth else t for t in cat.tools]
    v2 = Catalog(tools=tools, format="native")
    return v2, json.dumps(v2.to_data()).encode()


def test_compare_versions_same_hits_in_another_order_says_how_many_moved() -> None:
    v2, raw = _reordered_v2(QUERY)
    a = catalog_for(load_catalog(SAMPLE)).search(QUERY, 10)
    b = catalog_for(v2).search(QUERY, 10)
    assert set(a.ids()) == set(b.ids()) and a.ids() != b.ids()  # precondition of the test
    at = _app("views/compare.py")
    at.text_input(key="compare_query").set_value(QUERY).run()
    at.button_group(key="compare_mode").set_value("Two catalog versions").run()
    at.file_uploader(key="compare_upload_b").set_value(("v2.json", raw, "application/json")).run()
    assert not at.exception and not at.error
    moved = sum(1 for h in b if a.ids().index(h.id) != h.rank)
    summary = next(c.value for c in at.caption if c.value.startswith("Both sides return"))
    assert summary == f"Both sides return the same 10 hits, in a different order: {moved} moved (see the move column)."
    assert ui.same_hits_summary(a, a) == "Both sides return the same 10 hits in the same order."


def test_compare_versions_grid_compares_catalog_a_with_b() -> None:
    _, raw = _v2_bytes()
    at = _app("views/compare.py")
    at.button_group(key="compare_mode").set_value("Two catalog versions").run()
    at.file_uploader(key="compare_upload_b").set_value(("v2.json", raw, "application/json")).run()
    at.text_area(key="compare_grid_queries").set_value(QUERY).run()
    assert not at.exception and not at.error
    grid = at.get("html")[-1].value
    assert "<th>query</th><th>A: support_billing.json top 3</th><th>B: v2.json top 3</th>" in grid
    row = grid.split("<tr>")[2]
    a_cell, b_cell = row.split("<td>")[2:4]
    assert "create_refund" in a_cell and "create_refund" not in b_cell  # removed in B
    assert b_cell.count("<li>") == 3
    assert "the catalog versions disagree on the first hit" in row
    assert not [b for b in at.get("button_group") if b.key == "compare_grid_methods"]


def test_compare_waits_for_a_button_before_loading_the_model() -> None:
    """B defaults to hybrid: with the model not loaded, nothing loads it until Compare is pressed."""
    at = _app("views/compare.py", model="local:/nonexistent/model")
    assert not at.exception and not at.error
    assert any("about 10 s" in i.value and "hybrid needs the embedding model" in i.value for i in at.info)
    assert not [d for d in at.dataframe if "in B" in d.value.columns or "move" in d.value.columns]
    assert at.get("html"), "the bm25 grid needs no model and is drawn at once"
    at.button(key="compare_run").click().run()
    assert not at.exception
    assert any("hybrid is not available" in e.value for e in at.error)
    assert len([d for d in at.dataframe if "in B" in d.value.columns]) == 1  # side A, in bm25


def test_slow_model_load_notice_only_in_the_run_that_loaded_it(monkeypatch) -> None:
    """The slow-load warning shows where the model was loaded, not in every later session."""
    import core.search
    import workbench.services as services
    from core.embedding import HashingEmbedder

    class SlowOnce(HashingEmbedder):
        held = False  # whether "the process" holds the model

        @property
        def loaded(self) -> bool:
            return SlowOnce.held

        def load(self) -> None:
            if not SlowOnce.held:
                SlowOnce.held = True
                self.load_notice = "loading embedding model slow-once took 9.0 s; slower than 5 s"

        def embed_documents(self, texts, *, progress=None):
            self.load()
            return super().embed_documents(texts, progress=progress)

        def embed_query(self, text):
            self.load()
            return super().embed_query(text)

    real = services.make_embedder

    def make(spec=None, **options):
        return SlowOnce(32) if spec == "slow-once" else real(spec, **options)

    monkeypatch.setattr(services, "make_embedder", make)
    monkeypatch.setattr(core.search, "make_embedder", make)

    def slow_warnings(at: AppTest) -> list[str]:
        return [w.value for w in at.warning if "slow-once took 9.0 s" in w.value]

    first = _app(model="slow-once")
    first.button_group(key="playground_method").set_value("semantic").run()
    assert not first.exception and not first.error
    assert len(slow_warnings(first)) == 1, "shown in the run that loaded the model"
    first.text_input(key="playground_query").set_value(QUERY).run()
    assert slow_warnings(first) == [], "not again in the same session"

    second = _app(model="slow-once")  # another browser session, same app process
    second.button_group(key="playground_method").set_value("semantic").run()
    assert not second.exception
    assert slow_warnings(second) == [], "not in a session that did not load it"
