"""Eager recall: what the model receives each turn under four tool strategies, and what it costs."""

from __future__ import annotations

import json

import pandas as pd
import plotly.express as px
import streamlit as st

from core.cachesim import STRATEGIES, TOKEN_UNIT, load_conversation
from core.errors import RanklensError
from core.recall import FORMATS
from workbench import improve
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
if catalog is None or catalog.is_empty or not catalog.tools:
    st.info("Load a catalog with tools on the Catalog page.")
    st.stop()

# -- the conversation ------------------------------------------------------------------------------

st.session_state.setdefault("recall_source", SOURCES[0])
st.session_state.setdefault("recall_text", EXAMPLE_TEXT)
st.session_state.setdefault("recall_top_k", 5)
st.session_state.setdefault("recall_format", "anthropic")
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
        f"The conversation calls {len(dropped)} tool(s) the loaded catalog does not have "
        f"({', '.join(dropped[:5])}{'…' if len(dropped) > 5 else ''}); those calls are left out.",
        icon=":material/warning:",
    )
    if source == SOURCES[0] and st.session_state.catalog_label != SAMPLE_CATALOG:
        st.button(f"Load {SAMPLE_CATALOG}, the catalog it was written for", key="recall_load_catalog",
                  on_click=load_sample, args=(SAMPLE_CATALOG,))

c1, c2 = st.columns(2)
c1.number_input("K: tools per search (top-K and recall)", min_value=1, max_value=50, step=1,
                key="recall_top_k", persist_state="session")
c2.selectbox("Message format", list(FORMATS), key="recall_format", persist_state="session",
             help="The provider shape the prompt is written in; token counts differ slightly.")

try:
    sims = simulate_conversation(catalog, conversation, int(st.session_state.recall_top_k),
                                 st.session_state.recall_format)
except (RanklensError, ValueError) as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()

# -- cost per turn -----------------------------------------------------------------------------------

st.subheader("Input tokens per turn")
frame = pd.DataFrame(improve.token_rows(sims))
fig = px.bar(
    frame, x="turn", y="tokens", color="part", facet_col="strategy",
    category_orders={"strategy": list(STRATEGIES), "part": ["cached", "uncached"]},
    color_discrete_map={"cached": "#74b816", "uncached": "#f76707"},
    labels={"tokens": TOKEN_UNIT, "turn": "turn", "part": ""},
)
fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
fig.update_layout(barmode="stack", height=380, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                  legend={"orientation": "h", "y": 1.15})
fig.update_xaxes(dtick=1)
st.plotly_chart(fig, key="recall_chart")

st.subheader("Totals")
totals = improve.totals_rows(sims)
cols = st.columns(len(sims))
for col, row in zip(cols, totals, strict=True):
    col.metric(f"{row['strategy']} · uncached", f"{row['uncached tokens']:,}", border=True,
               help=f"uncached {TOKEN_UNIT} over the conversation")
    col.caption(f"{row['input tokens']:,} input · {row['cached share']:.0%} cached · "
                f"{row['model calls']} model calls")
st.dataframe(pd.DataFrame(totals), hide_index=True, key="recall_totals")
st.caption("Uncached tokens are what a provider charges in full; cached ones are billed at a "
           "discount when the provider's cache holds the prefix. Eager recall and on-demand keep "
           "the prompt append-only, so each turn reuses the whole previous prompt.")

# -- the prompts --------------------------------------------------------------------------------------

st.subheader("The prompt, as the model receives it")
st.session_state.setdefault("recall_strategy", "eager-recall")
p1, p2 = st.columns([3, 2])
strategy = p1.selectbox("Strategy", list(STRATEGIES), key="recall_strategy",
                        format_func=STRATEGY_LABELS.get, persist_state="session")
sim = next(s for s in sims if s.strategy == strategy)
turn_no = p2.selectbox("Turn", [t.turn for t in sim.turns], key="recall_turn",
                       format_func=lambda n: f"{n}: {sim.turns[n - 1].user[:60]}")
turn = sim.turns[(turn_no or 1) - 1]
st.caption(
    f"{turn.input_tokens:,} {TOKEN_UNIT}: {turn.cached_tokens:,} cached, {turn.uncached_tokens:,} "
    f"new · {len(turn.visible_tools)} catalog tools visible"
    + (f" · **called but not visible: {', '.join(turn.missing_tools)}**" if turn.missing_tools else "")
)
pair_label = ("inserted by the host (eager recall)" if strategy == "eager-recall"
              else "the model's own call (on demand)")
for n, line in enumerate(improve.prompt_lines(turn.prompt)):
    pretty = json.dumps(json.loads(line.text), indent=2, ensure_ascii=False)
    if line.kind == "tools":
        n_tools = len(json.loads(line.text).get("tools", []))
        with st.expander(f"Tool list — {n_tools} definitions", icon=":material/build:"):
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
