"""Evaluation dashboard: judged queries, metrics per configuration, comparisons, lint, confusability."""

from __future__ import annotations

import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.errors import RanklensError
from core.evaluation import compare, evaluate, parse_queries_text, run_queries
from core.lint import RULES
from core.search import METHODS
from core.whatif import item_kind, pair_ids, similarity_matrix
from workbench import improve, ui
from workbench.services import (
    confusable,
    dense_index,
    lint_with_queries,
    search_catalog,
)
from workbench.state import (
    current_catalog,
    current_judgments,
    follow_default_method,
    require_catalog,
    warn_unknown_judged_ids,
)

catalog = require_catalog(original=True)
kind = item_kind(catalog)

def _delta_row(d, base: str, other: str) -> dict:
    """One metric of a comparison; a score-scale metric across methods has no delta ("n/a")."""
    if d.delta is None:
        na = f"n/a ({d.note})" if getattr(d, "note", None) else "n/a"
        return {"metric": d.metric, base: round(d.baseline, 4), other: round(d.value, 4),
                "delta": na, "95% CI low": None, "95% CI high": None, "significant": "no"}
    return {"metric": d.metric, base: round(d.baseline, 4), other: round(d.value, 4),
            "delta": round(d.delta, 4), "95% CI low": round(d.ci_low, 4),
            "95% CI high": round(d.ci_high, 4), "significant": "yes" if d.significant else "no"}


st.title("Evaluation")
st.caption(
    f"Measure how well the catalog is ranked for a set of **judged queries** (queries with the "
    f"{kind}s that should answer them), compare configurations, and find the definitions that "
    f"hurt: lint findings, and {kind}s so alike that the engine cannot tell them apart."
)

working = st.session_state.working
judgments = current_judgments()
warn_unknown_judged_ids(catalog, judgments)
ids = [i.id for i in (catalog.skills if kind == "skill" else catalog.tools)]
VERSIONS = {"original": catalog, "working copy": working}


def _judgments_changed(new: list, label: str) -> None:
    st.session_state.judgments = new
    st.session_state.judgments_label = label
    st.session_state.eval_runs = None
    st.session_state.eval_errors = None
    st.session_state.eval_query_error = None


# -- callbacks ---------------------------------------------------------------------------------


def _use_bundled() -> None:
    st.session_state.judgments = None  # current_judgments() reloads the bundled set
    current_judgments()
    _judgments_changed(st.session_state.judgments, st.session_state.judgments_label)


def _upload() -> None:
    file = st.session_state.get("eval_upload")
    if file is None:
        return
    try:
        new = parse_queries_text(file.getvalue().decode("utf-8-sig"), file.name)
    except (RanklensError, UnicodeDecodeError) as exc:
        st.session_state.eval_query_error = str(exc)
        return
    _judgments_changed(new, file.name)


def _add_query() -> None:
    try:
        new = improve.add_judgment(
            judgments, st.session_state.get("eval_new_query", ""),
            st.session_state.get("eval_new_relevant", []), st.session_state.get("eval_new_note", ""),
        )
    except RanklensError as exc:
        st.session_state.eval_query_error = str(exc)
        return
    label = st.session_state.judgments_label or "written here"
    _judgments_changed(new, label if label.endswith("(edited)") else f"{label} (edited)")
    st.session_state.eval_new_query = ""
    st.session_state.eval_new_relevant = []
    st.session_state.eval_new_note = ""


def _remove_queries() -> None:
    gone = set(st.session_state.get("eval_remove_queries", []))
    if gone:
        label = st.session_state.judgments_label or "written here"
        _judgments_changed([j for j in judgments if j.query not in gone],
                           label if label.endswith("(edited)") else f"{label} (edited)")
        st.session_state.eval_remove_queries = []


def _clear_runs() -> None:
    st.session_state.eval_runs = {}
    st.session_state.eval_errors = None


def _open_in_editor(tool_id: str | None) -> None:
    if tool_id:
        st.session_state.editor_tool = tool_id
        st.switch_page("views/editor.py")


def _run(methods: list[str], versions: list[str], top_k: int) -> None:
    runs = dict(st.session_state.eval_runs or {})
    errors = []
    for version in versions:
        cat = VERSIONS.get(version)
        if cat is None:
            continue
        for method in methods:
            name = improve.config_name(method, version)
            started = time.perf_counter()
            try:
                index = search_catalog(cat, "bm25") if method == "bm25" else dense_index(
                    cat, st.session_state.model)
                run = run_queries(index, judgments, top_k, method)
                report = evaluate(run, judgments)
            except (RanklensError, ValueError) as exc:  # e.g. EmbedderError: no model
                errors.append(f"**{name}** could not run: {exc}")
                continue
            runs[name] = improve.EvalRun(name, method, version, top_k, run, report,
                                         time.perf_counter() - started, cat.content_hash)
    st.session_state.eval_runs = runs
    st.session_state.eval_errors = errors


# First visit (or new queries): BM25 on the loaded catalog, so the page opens on results.
if st.session_state.eval_runs is None and judgments:
    _run(["bm25"], ["original"], int(st.session_state.get("eval_top_k", 10)))

run_tab, queries_tab, compare_tab, lint_tab, confusion_tab = st.tabs(
    ["Run & metrics", "Judged queries", "Compare", "Lint", f"Confusable {kind}s"])

# -- judged queries ----------------------------------------------------------------------------------

with queries_tab:
    st.caption(
        f"Each judged query is something a user might ask, with the {kind}s that should answer "
        f"it (none = no {kind} in the catalog should). Start from the set bundled with a sample "
        "catalog, upload your own JSON Lines file, or write queries here."
    )
    label = st.session_state.judgments_label or "none"
    st.markdown(f"**{ui.plural(len(judgments), 'judged query')}** · source: `{label}`")
    if st.session_state.eval_query_error:
        st.error(st.session_state.eval_query_error, icon=":material/error:")
    c1, c2 = st.columns(2)
    with c1:
        st.button("Use the set bundled with the catalog", key="eval_use_bundled",
                  on_click=_use_bundled, disabled=not st.session_state.queries_path,
                  icon=":material/inventory_2:")
        st.download_button("Download this query set (JSONL)", improve.judgments_to_jsonl(judgments),
                           file_name="queries.jsonl", mime="application/jsonl",
                           key="eval_download_queries", disabled=not judgments,
                           icon=":material/download:")
    with c2:
        st.file_uploader(
            "Upload a query set (.jsonl)", type=["jsonl", "json", "txt"], key="eval_upload",
            on_change=_upload,
            help='One JSON object per line: {"query": "...", "relevant": ["tool_id"], "note": "..."}',
        )

    with st.container(border=True):
        st.markdown("**Add a judged query**")
        st.text_input("Query, as a user would type it", key="eval_new_query",
                      placeholder="e.g. give the customer their money back")
        st.multiselect(f"The right {kind}s (leave empty when none is)", ids, key="eval_new_relevant")
        st.text_input("Note (optional)", key="eval_new_note")
        st.button("Add query", key="eval_add_query", on_click=_add_query, icon=":material/add:")

    if judgments:
        st.dataframe(
            pd.DataFrame([{"query": j.query, "relevant": ", ".join(sorted(j.relevant_ids)) or "(none)",
                           "note": j.note} for j in judgments]),
            hide_index=True, key="eval_queries_table",
        )
        st.multiselect("Remove queries", [j.query for j in judgments], key="eval_remove_queries")
        st.button("Remove selected", key="eval_remove", on_click=_remove_queries,
                  icon=":material/delete:")

# -- runs and metrics -----------------------------------------------------------------------------

with run_tab:
    st.caption(
        f"Rank every judged query with one or more methods and score the rankings. **hit@k**: a "
        f"right {kind} is in the top k; **mrr@10**: 1 / rank of the first right {kind}; "
        f"**ndcg@10**: how close the top 10 is to the ideal order; **recall@k**: share of the "
        f"right {kind}s found."
    )
    if not judgments:
        st.info("No judged queries yet: add or load some on the Judged queries tab.",
                icon=":material/info:")
    else:
        follow_default_method("eval_methods", as_list=True)  # the sidebar's default, and any change
        st.session_state.setdefault("eval_versions", ["original"])
        st.session_state.setdefault("eval_top_k", 10)
        c1, c2, c3 = st.columns([3, 3, 1])
        c1.multiselect("Methods", list(METHODS), key="eval_methods", persist_state="session",
                       help="Starts from the sidebar's default method and follows it when it "
                       "changes. semantic and hybrid load an embedding model on first use.")
        versions = ["original"] + (["working copy"] if working is not None else [])
        c2.multiselect("Catalog version", versions, key="eval_versions", persist_state="session",
                       help="The working copy exists once the What-if editor has an edit.")
        c3.number_input("Top K", min_value=1, max_value=100, step=1, key="eval_top_k",
                        persist_state="session")
        b1, b2 = st.columns([1, 5])
        if b1.button("Run", key="eval_run", type="primary", icon=":material/play_arrow:"):
            with st.spinner("Ranking the judged queries…"):
                _run(list(st.session_state.eval_methods or ["bm25"]),
                     [v for v in (st.session_state.eval_versions or ["original"]) if v in versions],
                     int(st.session_state.eval_top_k))
        b2.button("Clear results", key="eval_clear", on_click=_clear_runs)
        for message in st.session_state.eval_errors or []:
            st.error(message, icon=":material/error:")

    runs: dict[str, improve.EvalRun] = st.session_state.eval_runs or {}
    if runs and judgments:
        for r in runs.values():
            current = VERSIONS.get(r.version)
            if current is None:
                st.warning(f"**{r.name}**: there is no working copy any more (its edits were "
                           "undone); these results are of an earlier one.", icon=":material/history:")
            elif current.content_hash != r.catalog_hash:
                st.warning(f"**{r.name}** was run on an earlier state of the {r.version}; run "
                           "again to see the current one.", icon=":material/history:")
        st.subheader("Metrics")
        st.dataframe(pd.DataFrame(improve.metrics_rows(runs)), hide_index=True,
                     key="eval_metrics_table")
        d1, d2 = st.columns(2)
        d1.download_button("Export results (CSV)", improve.results_csv(runs), file_name="results.csv",
                           mime="text/csv", key="eval_download_csv", icon=":material/download:")
        d2.download_button("Export results (JSON)", improve.results_json(runs),
                           file_name="results.json", mime="application/json",
                           key="eval_download_json", icon=":material/download:")

        st.subheader("Per query")
        st.caption(f"Rank = position of the first right {kind} in the run (— = not in the top K, "
                   f"or a query no {kind} should answer). Sort to see the worst queries first.")
        names = list(runs)
        s1, s2 = st.columns([3, 2])
        sort_by = s1.selectbox(f"Sort by rank of the first right {kind} under", names,
                               key="eval_sort_by")
        order = s2.radio("Order", ["worst first", "best first"], key="eval_sort_order",
                         horizontal=True)
        frame = pd.DataFrame(improve.per_query_rows(runs))
        column = f"rank · {sort_by}"
        if column in frame:
            # Not found (NaN) counts as worst; no-tool queries go last either way.
            frame = frame.sort_values(column, ascending=order == "best first",
                                      na_position="first" if order == "worst first" else "last",
                                      kind="stable")
        st.dataframe(frame, hide_index=True, key="eval_per_query", placeholder="—",
                     column_config={c: st.column_config.NumberColumn(format="%d")
                                    for c in frame.columns if c.startswith("rank · ")})

        st.subheader("Why this ranking?")
        st.caption(f"Pick a query to see, for its right {kind}s and the top hit, how each query "
                   "word contributed to the score.")
        q1, q2 = st.columns([3, 2])
        drill_query = q1.selectbox("Query", [j.query for j in judgments], key="eval_drill_query")
        drill_config = q2.selectbox("Configuration", names, key="eval_drill_config")
        r = runs[drill_config]
        cat = VERSIONS.get(r.version) or catalog
        hits = r.run.get(drill_query, [])
        judgment = next(j for j in judgments if j.query == drill_query)
        rel = judgment.relevant_ids
        st.dataframe(
            pd.DataFrame([{"rank": n + 1, r.method: i, "score": round(s, 4),
                           f"right {kind}": "✓" if i in rel else ""} for n, (i, s) in enumerate(hits)]),
            hide_index=True, key="eval_drill_hits",
        )
        try:
            index = search_catalog(cat, "bm25") if r.method == "bm25" else dense_index(
                cat, st.session_state.model)
            targets = [i for i in sorted(rel) if i in index]
            if hits and hits[0][0] not in rel:
                targets.append(hits[0][0])
            for n, target in enumerate(targets):
                exp = index.explain(drill_query, target, r.method)
                if n == 0:
                    st.dataframe(ui.query_words_frame(exp, len(index), kind), hide_index=True,
                                 key="eval_drill_words")
                role = f"right {kind}" if target in rel else f"top hit (not a right {kind})"
                where = "not matched" if exp.rank is None else f"BM25 rank {exp.rank + 1}"
                st.markdown(f"**`{target}`** — {role} · BM25 score {exp.score:.4f} · {where}")
                st.dataframe(ui.term_table(exp), hide_index=True, key=f"eval_drill_terms_{n}")
        except RanklensError as exc:
            st.error(str(exc), icon=":material/error:")

# -- compare --------------------------------------------------------------------------------------

with compare_tab:
    st.caption(
        "Put two configurations side by side. Each difference comes with a 95% **paired bootstrap** "
        "interval: the queries are resampled 1,000 times; when the interval excludes 0, the "
        "difference is unlikely to be chance."
    )
    runs = st.session_state.eval_runs or {}
    if len(runs) < 2:
        st.info("Run at least two configurations on the Run & metrics tab (e.g. bm25 and hybrid, "
                "or the original and the working copy).", icon=":material/info:")
    else:
        names = list(runs)
        c1, c2 = st.columns(2)
        base = c1.selectbox("Baseline", names, key="eval_cmp_base")
        other = c2.selectbox("Compared with", [n for n in names if n != base], key="eval_cmp_other")
        try:
            comparison = compare(
                {base: runs[base].report, other: runs[other].report}, judgments,
                methods={base: runs[base].method, other: runs[other].method},
            )
        except RanklensError as exc:
            st.error(str(exc), icon=":material/error:")
        else:
            st.dataframe(
                pd.DataFrame([_delta_row(d, base, other) for d in comparison.deltas]),
                hide_index=True, key="eval_cmp_table",
            )
            st.caption(f"Rank = rank of the first right {kind} with **{base}** → with "
                       f"**{other}** (— = not in the top K). {comparison.key_metric} = the change of "
                       "that query's score, which decides better or worse.")
            key_metric = comparison.key_metric
            for title, changes, name in ((f"Better with {other}", comparison.better[other], "better"),
                                         (f"Worse with {other}", comparison.worse[other], "worse")):
                st.markdown(f"**{title}: {ui.plural(len(changes), 'query')}**")
                if changes:
                    st.dataframe(
                        pd.DataFrame(improve.change_rows(changes, key_metric),
                                     columns=["rank", "query", key_metric]),
                        hide_index=True, key=f"eval_cmp_{name}", width="stretch",
                        column_config={
                            "rank": st.column_config.TextColumn(width="small"),
                            "query": st.column_config.TextColumn(width="large"),
                            key_metric: st.column_config.NumberColumn(format="%+.3f", width="small"),
                        },
                    )

# -- lint -----------------------------------------------------------------------------------------

with lint_tab:
    current = current_catalog()
    st.caption(
        "What in each definition hurts its ranking, grouped by rule. With judged queries the "
        f"query rules run too ({kind}s no query reaches, {kind}s that shadow the right one). "
        + ("Linting the working copy." if working is not None else "")
    )
    findings = lint_with_queries(current, judgments)
    if not findings:
        st.success("No findings.", icon=":material/check_circle:")
    icons = {"error": ":material/error:", "warning": ":material/warning:", "info": ":material/info:"}
    for rule, group in improve.findings_by_rule(findings):
        meta = RULES[rule]
        with st.expander(f"{rule} · {meta.severity} · {len(group)}", icon=icons[meta.severity]):
            st.caption(meta.rationale)
            # A static table wraps long problems and suggestions instead of cutting them off.
            st.table(
                pd.DataFrame([{kind: f.tool_id, "where": f.path, "problem": f.message,
                               "suggestion": f.suggestion, "related": f.related or ""} for f in group]),
                hide_index=True, height=600 if len(group) > 12 else "content",
            )
            l1, l2 = st.columns([3, 1], vertical_alignment="bottom")
            choice = l1.selectbox(f"{kind.title()}", list(dict.fromkeys(f.tool_id for f in group)),
                                  key=f"lint_tool_{rule}")
            if l2.button("Open in editor", key=f"lint_open_{rule}", icon=":material/edit_note:"):
                _open_in_editor(choice)

# -- confusability ----------------------------------------------------------------------------------

with confusion_tab:
    current = current_catalog()
    items = current.skills if kind == "skill" else current.tools
    st.caption(
        f"Pairs of {kind}s whose indexed words mostly coincide (cosine of idf-weighted term counts "
        f"over name, description and {'input schema' if kind == 'tool' else 'tags'}; 1 = the same "
        f"words). BM25 scores such {kind}s nearly alike for every query, so the wrong one often "
        "wins: make each say what sets it apart."
    )
    st.session_state.setdefault("conf_top_n", 12)
    top_n = st.slider("Pairs to show", 3, 40, key="conf_top_n", persist_state="session")
    pairs = confusable(current, int(top_n))
    if not pairs:
        st.info(f"No two {kind}s share an indexed word.", icon=":material/info:")
    else:
        st.dataframe(
            pd.DataFrame([{f"{kind} A": p.a, f"{kind} B": p.b, "similarity": round(p.similarity, 3),
                           "shared terms (rarest first)": ", ".join(p.shared[:12])} for p in pairs]),
            hide_index=True, key="conf_table",
        )
        axis, matrix = similarity_matrix(items, pair_ids(pairs))
        fig = go.Figure(go.Heatmap(
            z=matrix, x=axis, y=axis, zmin=0, zmax=1, colorscale="Reds",
            text=[[f"{v:.2f}" for v in row] for row in matrix], texttemplate="%{text}",
            hovertemplate="%{y} · %{x}<br>similarity %{z:.3f}<extra></extra>",
            colorbar={"title": "similarity"},
        ))
        fig.update_layout(height=max(360, 28 * len(axis) + 160), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                          yaxis={"autorange": "reversed"})
        st.plotly_chart(fig, key="conf_heatmap")
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        choice = c1.selectbox(kind.title(), pair_ids(pairs), key="conf_tool")
        if c2.button("Open in editor", key="conf_open", icon=":material/edit_note:"):
            _open_in_editor(choice)
