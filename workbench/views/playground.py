"""Query playground: rank the catalog for a query and explain every score."""

from __future__ import annotations

import streamlit as st

from core.errors import RanklensError
from core.search import METHODS
from workbench import ui
from workbench.services import dense_index, explain_many, run_search
from workbench.state import current_judgments, follow_default_method, require_catalog

cat = require_catalog()
st.title("Query playground")
st.caption(
    "Type what a user might ask the agent. See which tools (or skills) the engine would offer, in what "
    "order, and why each one scores what it does."
)

kind = "skill" if cat.skills and not cat.tools else "tool"
items = cat.tools if kind == "tool" else cat.skills
judgments = current_judgments()

# The first visit seeds the widgets; persist_state keeps them across page switches.
if "playground_query" not in st.session_state:
    st.session_state.playground_query = st.session_state.query or (judgments[0].query if judgments else "")
follow_default_method("playground_method")  # the sidebar's default, and any change of it
st.session_state.setdefault("playground_top_k", st.session_state.top_k)


def _use_example() -> None:
    example = st.session_state.get("playground_example")
    if example:
        st.session_state.playground_query = example


q_col, m_col, k_col = st.columns([6, 3, 1], vertical_alignment="bottom")
q_col.text_input("Query", key="playground_query", placeholder="e.g. refund a duplicate charge",
                  persist_state="session")
m_col.segmented_control("Method", list(METHODS), key="playground_method", required=True,
                       persist_state="session")
k_col.number_input("Top K", min_value=1, max_value=100, step=1, key="playground_top_k",
                    persist_state="session")
if judgments:
    st.selectbox(
        "Or try one of the judged queries",
        [j.query for j in judgments], index=None, key="playground_example",
        placeholder="Pick an example query…", on_change=_use_example,
    )

query: str = st.session_state.playground_query
method: str = st.session_state.playground_method or "bm25"
top_k = int(st.session_state.playground_top_k)
st.session_state.query = query
st.caption(ui.method_help(method, kind))

# -- search ------------------------------------------------------------------
try:
    if method == "bm25":
        result = run_search(cat, query, top_k, "bm25")
    else:
        with st.spinner("Loading the embedding model and embedding the catalog (first use only; "
                        "this can take a few seconds)…"):
            result = run_search(cat, query, top_k, method, st.session_state.model)
except RanklensError as exc:
    st.error(f"**{method} search is not available.** {exc}", icon=":material/error:")
    st.info("Showing BM25 results instead: BM25 needs no model.")
    method = "bm25"
    result = run_search(cat, query, top_k, "bm25")

for note in result.notes:
    st.caption(f"Note: {note}")

ids = result.ids()
explanations = explain_many(cat, query, ids)
relevant = next((j.relevant_ids for j in judgments if j.query == query), None)
descriptions = {i.id: i.description for i in items}
any_id = ids[0] if ids else items[0].id
words_expl = explanations.get(any_id) or explain_many(cat, query, [any_id])[any_id]

st.markdown("**Query terms**: how the query was analysed before searching")
st.html(ui.query_words_html(words_expl, len(items), kind))
with st.expander("What do these mean?"):
    st.markdown(
        f"Each query word is lowercased, dropped if it is a **stop word** (grey: too common to "
        f"search on) and otherwise **stemmed** to its index term (→). Green terms occur in the "
        f"given number of {kind}s. " + ui.worded(ui.ABSENT_HELP, kind)
    )
    st.dataframe(ui.query_words_frame(words_expl, len(items), kind), key="playground_words",
                 hide_index=True, width="stretch")

st.subheader("Results")
if not result.hits:
    st.info(f"No results: {result.reason or 'nothing matched'}.")
else:
    cap = (f"Top {len(result)} of {ui.plural(len(items), kind)} for “{query}”, best first, "
           f"by **{method}**.")
    if relevant is not None:
        cap += f" This is a judged query: a ticked box marks the {kind}s judged relevant."
    st.caption(cap)
    st.container(key="playground_results_box").dataframe(
        ui.results_frame(result, explanations, descriptions, relevant),
        key="playground_results", hide_index=True, width="stretch",
        column_config={
            "rank": st.column_config.NumberColumn("rank", width="small"),
            "id": st.column_config.TextColumn("id", width="medium"),
            "score": st.column_config.NumberColumn(
                "score", format="%.4f",
                help={"bm25": "BM25 score: the sum of the term contributions charted below.",
                      "semantic": f"Cosine similarity between the query and the {kind}'s embedding.",
                      "hybrid": "Fused score: the sum of each ranking's 1 / (60 + rank)."}[method]),
            "BM25 share of score": st.column_config.ProgressColumn(
                "BM25 share of score", min_value=0.0, max_value=1.0, format="percent",
                help="How much of the fused score came from the BM25 ranking; the rest came "
                "from the semantic ranking."),
            "judged relevant": st.column_config.CheckboxColumn("judged relevant"),
            "matched terms": st.column_config.TextColumn(
                "matched terms", help=f"Query terms found in the {kind}'s text."),
            "description": st.column_config.TextColumn("description", width="large"),
        },
    )
    if method == "hybrid":
        st.caption(
            "BM25 rank and semantic rank are the hit's place in each ranking over the whole "
            "catalog (— = not in the top 100 of that ranking)."
        )

# -- contribution chart --------------------------------------------------------
st.subheader("Why each hit scores what it does")
st.caption(ui.worded(ui.CONTRIBUTION_HELP, kind)
           + " Hover a bar segment for tf, df, idf and the fields the term matched.")
if method != "bm25":
    st.info(
        f"These bars explain the **BM25** score of each {method} hit. "
        + ("Semantic similarity cannot be split into words, so it is not charted; "
           if method == "semantic" else
           "The hybrid order also uses the semantic ranking, which cannot be split into words; ")
        + "a hit with no bar shares no word with the query.",
        icon=":material/info:",
    )
frame = ui.contributions_frame(result, explanations)
if len(frame):
    st.plotly_chart(ui.contribution_figure(frame), key="playground_chart", width="stretch",
                    config={"displayModeBar": False})
    with st.expander("The numbers behind the chart"):
        st.dataframe(frame.drop(columns=["term key", "hit"]), key="playground_contributions",
                     hide_index=True, width="stretch",
                     column_config={"idf": st.column_config.NumberColumn(format="%.4f"),
                                    "contribution": st.column_config.NumberColumn(format="%.4f"),
                                    "bm25 score": st.column_config.NumberColumn(format="%.4f")})
else:
    st.caption("Nothing to chart: no hit shares a word with the query.")

# -- why not -------------------------------------------------------------------
st.subheader(f"Why not this {kind}?")
st.caption(
    f"Pick any {kind} to see where it ranks for this query, its score term by term, and which "
    f"query terms it lacks that the {kind}s above it have."
)
all_ids = [i.id for i in items]
if st.session_state.get("playground_why_not") not in all_ids:
    st.session_state.pop("playground_why_not", None)
target = st.selectbox(kind.capitalize(), all_ids, index=None, key="playground_why_not",
                      placeholder=f"Pick a {kind}…")
if target is not None:
    expl = explain_many(cat, query, [target])[target]
    position = ids.index(target) if target in ids else None
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(f"Rank in these {method} results", ui.rank_label(position) if position is not None
              else f"not in top {top_k}")
    m2.metric("BM25 rank, whole catalog", ui.rank_label(expl.rank),
              help=f"Its BM25 rank among all {ui.plural(len(items), kind)}. — means it shares no "
              "term with the query, so BM25 does not rank it at all.")
    m3.metric("BM25 score", f"{expl.score:.4f}")
    if method != "bm25":
        try:
            dense = dense_index(cat, st.session_state.model).explain(query, target, "hybrid")
            sem = next(a for a in dense.arms if a.method == "semantic")
            m4.metric("Semantic rank, whole catalog", ui.rank_label(sem.rank),
                      help=f"Its semantic rank among all {ui.plural(len(items), kind)}"
                      + (f" (cosine similarity {sem.score:.4f})." if sem.score is not None else "."))
        except RanklensError as exc:
            m4.caption(f"Semantic rank unavailable: {exc}")
    st.dataframe(ui.term_table(expl), key="playground_why_not_terms", hide_index=True, width="stretch",
                 column_config={"idf": st.column_config.NumberColumn(format="%.4f"),
                                "contribution": st.column_config.NumberColumn(format="%.4f")})
    winners = [explanations[i] for i in (ids[:position] if position is not None else ids)
               if i in explanations]
    lacking = ui.lacking_terms(expl, winners)
    if position == 0:
        st.success(f"**{target}** is the top hit for this query.")
    elif len(lacking):
        st.warning(
            f"**{target}** lacks {ui.plural(len(lacking), 'query term')} that {kind}s ranked above "
            "it have: "
            + ", ".join(f"“{t}”" for t in lacking["term"])
            + ". Adding those words (where true) to its description would raise its BM25 score.",
            icon=":material/lightbulb:",
        )
        st.dataframe(lacking, key="playground_lacking", hide_index=True, width="stretch",
                     column_config={"idf": st.column_config.NumberColumn(format="%.4f")})
    elif winners:
        st.info(
            f"**{target}** has every query term the {kind}s above it have; they outscore it "
            "through more occurrences, rarer terms, or a shorter text."
        )
    if expl.absent_terms:
        st.caption(f"Absent from the whole catalog (no {kind} can match them): "
                   + ", ".join(f"“{t}”" for t in expl.absent_terms))
