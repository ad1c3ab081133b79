"""Compare page: one query under two configurations, and many queries at once."""

from __future__ import annotations

import streamlit as st

from core.catalog import Catalog
from core.errors import RanklensError
from core.search import METHODS, SearchResult
from workbench import ui
from workbench.services import model_loaded, run_search
from workbench.state import (
    current_judgments,
    follow_default_method,
    load_sample_b,
    load_upload,
    require_catalog,
    sample_choices,
)

MODES = ("Two methods", "Two catalog versions")
GRID_QUERIES = 6
SPINNER = "Loading the embedding model and embedding the catalog (first use only)…"


def _ready(methods: list[str], button_key: str) -> bool:
    """Whether to run ``methods`` now: at once when none needs the embedding model or the model
    is loaded already; otherwise only once the user presses the button (shown here, with why)."""
    dense = [m for m in dict.fromkeys(methods) if m != "bm25"]
    if not dense or model_loaded(st.session_state.model):
        return True
    st.info(f"{' and '.join(dense)} {ui.verb(len(dense), 'needs', 'need')} the embedding model, "
            "which is not loaded yet: the first semantic or hybrid search since the app started "
            "loads it (about 10 s); later ones are fast. Press Compare to go ahead.",
            icon=":material/hourglass_top:")
    return st.button("Compare", key=button_key, type="primary", icon=":material/play_arrow:")


def _search(catalog: Catalog, query: str, top_k: int, method: str) -> SearchResult | str:
    """A search result, or the error message when the method cannot run."""
    try:
        if method == "bm25":
            return run_search(catalog, query, top_k, "bm25")
        with st.spinner(SPINNER):
            return run_search(catalog, query, top_k, method, st.session_state.model)
    except RanklensError as exc:
        return f"{method} is not available: {exc}"


def _on_upload_b() -> None:
    uploaded = st.session_state.get("compare_upload_b")
    if uploaded is not None:
        load_upload(uploaded.getvalue(), uploaded.name, slot="catalog_b")


def _on_sample_b() -> None:
    load_sample_b(st.session_state.compare_sample_b)


def _show_side(title: str, caption: str, value: SearchResult | str, table, key: str) -> None:
    st.markdown(f"**{title}**")
    st.caption(caption)
    if isinstance(value, str):
        st.error(value, icon=":material/error:")
    elif not value.hits:
        st.info(f"No results: {value.reason or 'nothing matched'}.")
    else:
        st.dataframe(ui.styled_moves(table), key=key, hide_index=True, width="stretch")


cat = require_catalog()
st.title("Compare")
st.caption(
    "Run the same query under two configurations side by side, two methods or two versions of "
    "a catalog, and see what moves. ▲3 = three places higher in B than in A, ▼1 = one lower, "
    "= unchanged, new = not in A's list."
)

judgments = current_judgments()
if "compare_query" not in st.session_state:
    st.session_state.compare_query = st.session_state.query or (judgments[0].query if judgments else "")

kind = "skill" if cat.skills and not cat.tools else "tool"
with st.expander("What do the methods mean?"):
    for m in METHODS:
        st.markdown(ui.method_help(m, kind))

mode = st.segmented_control("Compare", MODES, key="compare_mode", default=MODES[0], required=True,
                            persist_state="session") or MODES[0]
q_col, k_col = st.columns([6, 1], vertical_alignment="bottom")
q_col.text_input("Query", key="compare_query", persist_state="session")
k_col.number_input("Top K", min_value=1, max_value=100, value=10, step=1, key="compare_top_k",
                   persist_state="session")
query: str = st.session_state.compare_query
top_k = int(st.session_state.compare_top_k)

if mode == MODES[0]:
    a_col, b_col = st.columns(2)
    method_a = a_col.selectbox("A: method", METHODS, index=0, key="compare_method_a",
                               persist_state="session")
    method_b = b_col.selectbox("B: method", METHODS, index=2, key="compare_method_b",
                               persist_state="session")
    cat_a = cat_b = cat
    label_a = f"A: {method_a} on {st.session_state.catalog_label}"
    label_b = f"B: {method_b} on {st.session_state.catalog_label}"
    needs = [method_a, method_b]
else:
    samples = list(sample_choices())
    with st.container(border=True):
        st.markdown("**Catalog B**: a second version to compare the loaded catalog (A) with")
        s_col, b_col, u_col = st.columns([3, 1, 4], vertical_alignment="bottom")
        s_col.selectbox("Bundled sample", samples, key="compare_sample_b")
        b_col.button("Load as B", key="compare_load_sample_b", on_click=_on_sample_b)
        u_col.file_uploader("or upload a file", type=["json", "yaml", "yml", "zip", "md"],
                            key="compare_upload_b", on_change=_on_upload_b)
        if st.session_state.catalog_b_error:
            st.error(f"**Catalog B could not be loaded.** {st.session_state.catalog_b_error}",
                     icon=":material/error:")
    follow_default_method("compare_method")  # the sidebar's default, and any change of it
    method = st.selectbox("Method (both sides)", METHODS, key="compare_method",
                          persist_state="session",
                          help="Starts from the sidebar's default method and follows it.")
    cat_b_loaded: Catalog | None = st.session_state.catalog_b
    if cat_b_loaded is None:
        st.info("Load catalog B above (a sample or a file) to compare it with the loaded catalog.")
        st.stop()
    cat_a, cat_b = cat, cat_b_loaded
    diff = ui.catalog_diff(cat, cat_b)
    st.caption(f"A = **{st.session_state.catalog_label}**, B = **{st.session_state.catalog_b_label}**: "
               f"{ui.plural(len(diff), 'item')} added, removed or changed.")
    if len(diff):
        with st.expander("What changed from A to B"):
            st.dataframe(diff, key="compare_diff", hide_index=True, width="stretch")
    label_a = f"A: {st.session_state.catalog_label} ({method})"
    label_b = f"B: {st.session_state.catalog_b_label} ({method})"
    needs = [method]

if _ready(needs, "compare_run"):
    result_a = _search(cat_a, query, top_k, needs[0])
    result_b = _search(cat_b, query, top_k, needs[-1])
    empty = SearchResult((), "", query)
    left, right = ui.compare_frames(result_a if isinstance(result_a, SearchResult) else empty,
                                    result_b if isinstance(result_b, SearchResult) else empty)
    a_col, b_col = st.columns(2)
    with a_col:
        _show_side(label_a, "\"in B\" gives each hit's rank on the other side.", result_a, left,
                   "compare_table_a")
    with b_col:
        _show_side(label_b, "\"move\" compares each hit's rank with its rank in A.", result_b, right,
                   "compare_table_b")

    if isinstance(result_a, SearchResult) and isinstance(result_b, SearchResult):
        only_a, only_b = ui.only_in(result_a, result_b)
        if only_a or only_b:
            o1, o2 = st.columns(2)
            o1.markdown("**Only in A** (dropped by B): " + (", ".join(f"`{i}`" for i in only_a) or "none"))
            o2.markdown("**Only in B** (new in B): " + (", ".join(f"`{i}`" for i in only_b) or "none"))
        else:
            st.caption(ui.same_hits_summary(result_a, result_b))

# -- many queries ---------------------------------------------------------------
st.divider()
st.subheader("Many queries at once")
if "compare_grid_queries" not in st.session_state:
    st.session_state.compare_grid_queries = "\n".join(j.query for j in judgments[:GRID_QUERIES])
versions = mode == MODES[1]
if versions:
    st.caption(
        f"Paste queries, one per line, and compare the top 3 of catalog A "
        f"(**{st.session_state.catalog_label}**) and catalog B (**{st.session_state.catalog_b_label}**) "
        f"for each, both ranked by **{method}** (the method above)."
    )
else:
    st.caption(
        "Paste queries, one per line, and compare the top 3 of each method across them, on the "
        f"loaded catalog (**{st.session_state.catalog_label}**). bm25 needs no model; add "
        "semantic or hybrid to compare them (the first use loads the embedding model, about 10 s)."
    )
st.text_area("Queries (one per line)", key="compare_grid_queries", height=160,
             persist_state="session")
if versions:
    columns = {f"A: {st.session_state.catalog_label}": cat_a, f"B: {st.session_state.catalog_b_label}": cat_b}
    grid_methods = [method]
else:
    picked = st.pills("Methods", METHODS, selection_mode="multi", default=["bm25"],
                      key="compare_grid_methods", persist_state="session")
    grid_methods = [m for m in METHODS if m in (picked or [])]
queries = list(dict.fromkeys(q.strip() for q in st.session_state.compare_grid_queries.splitlines()
                             if q.strip()))
if not queries or not grid_methods:
    st.info("Enter at least one query and pick at least one method.")
elif _ready(grid_methods, "compare_grid_run"):
    cells: dict[str, dict[str, SearchResult | str]] = {q: {} for q in queries}
    failed: dict[str, str] = {}
    configs = ([(name, catalog, method) for name, catalog in columns.items()] if versions
               else [(m, cat, m) for m in grid_methods])
    for name, catalog, m in configs:
        for q in queries:
            value = failed.get(name) or _search(catalog, q, 3, m)
            if isinstance(value, str):
                failed[name] = value
                value = "(unavailable)"
            cells[q][name] = value
    for message in dict.fromkeys(failed.values()):
        st.error(message, icon=":material/error:")
    st.container(key="compare_grid").html(
        ui.grid_html(ui.grid_frame(cells, 3), "catalog versions" if versions else "methods"))
