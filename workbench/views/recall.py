"""Eager recall: what the model receives each turn under four tool strategies, and what it costs."""

from __future__ import annotations

import json

import pandas as pd
import plotly.express as px
import streamlit as st

from core.cachesim import STRATEGIES, TOKEN_UNIT, load_conversation
from core.errors import RanklensError
from core.recall import FORMATS
from workbench import improve, ui
from workbench.services import simulate_conversation
from workbench.state import SAMPLES, current_catalog, load_sample

SAMPLE_CONVERSATION = SAMPLES / "conversations" / "workday.conversation.json"
SAMPLE_CATALOG = "mcp_workspace.json"
STRATEGY_LABELS = {
    "all-tools": "All tools — every definition in every prompt",
    "top-k": "Top-K pre-filter — each turn's best K tools",
    "eager-recall": "Eager recall — the host inserts a search_capabilities call",
    "on-demand": "On demand — the model calls search_capabilities itself",
}
SOURCES = ("Sample: a working day", "Write one", "Upload a JSON file")
EXAMPLE_TEXT = (
    "What's on my calendar tomorrow?\n"
    "assistant: You have a design review at 10:00.\n"
    "Find the emails from Dana about the invoice\n"
    "Move the design review to Thursday afternoon\n"
)

st.title("Eager recall")
st.caption(
    "An agent needs tool definitions in its prompt. Four ways to provide them: **all tools** "
    "every turn; a **top-K** pre-filter per message (the tool list changes every turn, which "
    "breaks the provider's prompt cache); **eager recall**, where the host answers each user "
    "message with a `search_capabilities` call and its result before the model sees it, so the "
    "prompt only grows at the end; and **on demand**, where the model makes that call itself "
    "(one more model request per turn). Replay a conversation to see the prompts and what they "
    f"cost. Token counts are **{TOKEN_UNIT}**; *cached* = the part of a prompt identical to the "
    "start of the previous turn's prompt."
)

catalog = current_catalog()
if catalog is None or catalog.is_empty:
    st.info("Load a catalog on the Catalog page.")
    st.stop()
skills_only = not catalog.tools
strategies = ("eager-recall", "on-demand") if skills_only else STRATEGIES
if skills_only:
    with st.container(border=True):
        st.markdown(
            f"**This catalog has only skills ({ui.plural(len(catalog.skills), 'skill')}).** "
            "All tools and top-K put tool definitions in the prompt, so with no tools they have "
            "nothing to show: only **eager recall** and **on demand** apply, where "
            "`search_capabilities` returns the best skills for each message. Load a catalog with "
            f"tools (e.g. `{SAMPLE_CATALOG}`) to compare all four strategies."
        )
        st.button(f"Load {SAMPLE_CATALOG}", key="recall_load_catalog", on_click=load_sample,
                  args=(SAMPLE_CATALOG,), icon=":material/inventory_2:")

# -- the conversation ------------------------------------------------------------------------------

st.session_state.setdefault("recall_source", SOURCES[0])
st.session_state.setdefault("recall_text", EXAMPLE_TEXT)
st.session_state.setdefault("recall_top_k", 5)
st.session_state.setdefault("recall_format", "anthropic")
st.session_state.setdefault("recall_top_k_skills", 3)
st.session_state.setdefault("recall_cached_price", improve.DEFAULT_CACHED_PRICE)
st.radio("Conversation", SOURCES, key="recall_source", horizontal=True, persist_state="session")
source = st.session_state.recall_source
conversation = None
try:
    if source == SOURCES[0]:
        conversation = load_conversation(SAMPLE_CONVERSATION)
        st.caption("Five turns of a working day, with tool calls and replies, written for the "
                   f"`{SAMPLE_CATALOG}` sample catalog.")
    elif source == SOURCES[1]:
        st.text_area("One user message per line; a line starting with `assistant:` is the reply "
                     "to the message above it", key="recall_text", height=150,
                     persist_state="session")
        st.text_input("System prompt (optional)", key="recall_system", persist_state="session")
        conversation = improve.conversation_from_text(st.session_state.recall_text,
                                                      st.session_state.get("recall_system", ""))
    else:
        upload = st.file_uploader(
            "Conversation JSON", type=["json"], key="recall_upload",
            help='{"system": "...", "turns": [{"user": "...", "assistant": "...", '
                 '"tool_calls": [{"tool": "<tool id>", "args": {}}]}]}',
        )
        if upload is not None:
            conversation = improve.conversation_from_upload(upload.getvalue(), upload.name)
except (RanklensError, ValueError) as exc:
    st.error(str(exc), icon=":material/error:")

if conversation is None:
    st.stop()
st.session_state.conversation = conversation

conversation, dropped = improve.drop_unknown_calls(conversation, (t.id for t in catalog.tools))
if dropped:
    st.warning(
        f"The conversation calls {ui.plural(len(dropped), 'tool')} the loaded catalog does not "
        f"have ({', '.join(dropped[:5])}{'…' if len(dropped) > 5 else ''}); those calls are left out.",
        icon=":material/warning:",
    )
    if source == SOURCES[0] and st.session_state.catalog_label != SAMPLE_CATALOG and not skills_only:
        st.button(f"Load {SAMPLE_CATALOG}, the catalog it was written for", key="recall_load_catalog",
                  on_click=load_sample, args=(SAMPLE_CATALOG,))

c1, c2, c3 = st.columns(3)
if skills_only:
    c1.number_input("K: skills per search", min_value=1, max_value=50, step=1,
                    key="recall_top_k_skills", persist_state="session")
else:
    c1.number_input("K: tools per search (top-K and recall)", min_value=1, max_value=50, step=1,
                    key="recall_top_k", persist_state="session")
c2.selectbox("Message format", list(FORMATS), key="recall_format", persist_state="session",
             help="The provider shape the prompt is written in; token counts differ slightly.")
c3.number_input(
    "Price of a cached token (share of full price)", min_value=0.0, max_value=1.0, step=0.05,
    format="%.2f", key="recall_cached_price", persist_state="session",
    help="What a provider bills for an input token read from its prompt cache, as a share of "
    "an uncached input token. 0.10 = Anthropic's cache reads (other providers bill 0.10 to 0.50; "
    "cache writes, which some providers bill extra, are not counted).",
)
cached_price = float(st.session_state.recall_cached_price)

try:
    sims = simulate_conversation(catalog, conversation, int(st.session_state.recall_top_k),
                                 st.session_state.recall_format,
                                 top_k_skills=int(st.session_state.recall_top_k_skills),
                                 strategies=strategies)
except (RanklensError, ValueError) as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()

# -- cost per turn -----------------------------------------------------------------------------------

st.subheader("Input tokens per turn")
frame = pd.DataFrame(improve.token_rows(sims))
fig = px.bar(
    frame, x="turn", y="tokens", color="part", facet_col="strategy",
    category_orders={"strategy": list(strategies), "part": ["cached", "uncached"]},
    color_discrete_map={"cached": "#74b816", "uncached": "#f76707"},
    labels={"tokens": TOKEN_UNIT, "turn": "turn", "part": ""},
)
fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
fig.update_layout(barmode="stack", height=380, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                  legend={"orientation": "h", "y": 1.15})
fig.update_xaxes(dtick=1)
st.plotly_chart(fig, key="recall_chart")

st.subheader("Totals")
totals = improve.totals_rows(sims, cached_price)
st.caption(
    f"**Cost** = uncached tokens + {cached_price:.0%} of cached tokens, in full-price input "
    f"{TOKEN_UNIT} over the whole conversation (assumption: a cached token is billed at "
    f"{cached_price:.2f} of the full price; change it above). Output tokens and cache writes are "
    "not counted."
)
cols = st.columns(len(sims))
for col, row in zip(cols, totals, strict=True):
    col.metric(f"{row['strategy']} · cost", f"{row[improve.COST_COLUMN]:,}", border=True,
               help=f"full-price input {TOKEN_UNIT} over the conversation: "
               f"{row['uncached tokens']:,} uncached + {cached_price:.2f} × "
               f"{row['cached tokens']:,} cached")
    missing = row["tools missing when called"]
    col.caption(f"{row['input tokens']:,} input · {row['uncached tokens']:,} uncached · "
                f"{row['cached share']:.0%} cached · {ui.plural(row['model calls'], 'model call')}"
                + (f" · **{ui.plural(missing, 'called tool')} not in the prompt**" if missing else ""))
st.dataframe(pd.DataFrame(totals), hide_index=True, key="recall_totals",
             column_config={improve.COST_COLUMN: st.column_config.NumberColumn(
                 help="uncached + cached × the cached-token price, in whole tokens")})
st.caption("Uncached tokens are what a provider charges in full; cached ones are billed at a "
           "discount when the provider's cache holds the prefix. Eager recall and on-demand keep "
           "the prompt append-only, so each turn reuses the whole previous prompt. Top-K sends "
           "fewer tokens but changes the tool list every turn, so little of it is cached, and the "
           "tool the model needs may not be in it (tools missing when called).")

# -- the prompts --------------------------------------------------------------------------------------

st.subheader("The prompt, as the model receives it")
st.session_state.setdefault("recall_strategy", "eager-recall")
p1, p2 = st.columns([3, 2])
if st.session_state.recall_strategy not in strategies:
    st.session_state.recall_strategy = "eager-recall"
strategy = p1.selectbox("Strategy", list(strategies), key="recall_strategy",
                        format_func=STRATEGY_LABELS.get, persist_state="session")
sim = next(s for s in sims if s.strategy == strategy)
turn_no = p2.selectbox("Turn", [t.turn for t in sim.turns], key="recall_turn",
                       format_func=lambda n: f"{n}: {sim.turns[n - 1].user[:60]}")
turn = sim.turns[(turn_no or 1) - 1]
st.caption(
    f"{turn.input_tokens:,} {TOKEN_UNIT}: {turn.cached_tokens:,} cached, {turn.uncached_tokens:,} "
    f"new · {ui.plural(len(turn.visible_tools), 'catalog tool')} visible"
    + (f" · **called but not visible: {', '.join(turn.missing_tools)}**" if turn.missing_tools else "")
)
pair_label = ("inserted by the host (eager recall)" if strategy == "eager-recall"
              else "the model's own call (on demand)")
for n, line in enumerate(improve.prompt_lines(turn.prompt)):
    pretty = json.dumps(json.loads(line.text), indent=2, ensure_ascii=False)
    if line.kind == "tools":
        n_tools = len(json.loads(line.text).get("tools", []))
        with st.expander(f"Tool list — {ui.plural(n_tools, 'definition')}", icon=":material/build:"):
            st.code(pretty, language="json", wrap_lines=True)
    elif line.kind == "system":
        with st.expander("System prompt", icon=":material/settings:"):
            st.code(pretty, language="json", wrap_lines=True)
    elif line.is_capability:
        with st.container(border=True, key=f"recall_capability_{n}"):
            what = "call" if line.kind == "capability_call" else "result"
            st.markdown(f":orange-background[**search_capabilities {what}**] — {pair_label}")
            st.code(pretty, language="json", wrap_lines=True)
    else:
        st.caption(line.role)
        st.code(pretty, language="json", wrap_lines=True)
