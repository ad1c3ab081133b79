"""Catalog page: load a catalog, browse its tools or skills, see what the index sees."""

from __future__ import annotations

import streamlit as st

from core.catalog import Catalog, Skill, Tool
from core.projection import skill_projection, tool_projection
from workbench import ui
from workbench.services import lint_findings
from workbench.state import (
    PASTE_FORMATS,
    current_catalog,
    load_pasted,
    load_sample,
    load_upload,
    sample_choices,
)

UPLOAD_TYPES = ["json", "yaml", "yml", "zip", "md"]
PASTE_EXAMPLES = {
    "JSON": '[{"name": "get_user", "description": "Fetch one user by id.", '
            '"input_schema": {"type": "object", "properties": {"user_id": {"type": "string"}}}}]',
    "YAML": "- name: get_user\n  description: Fetch one user by id.\n  input_schema:\n"
            "    type: object\n    properties:\n      user_id: {type: string}",
}


def _on_upload() -> None:
    uploaded = st.session_state.get("catalog_upload")
    if uploaded is not None:
        load_upload(uploaded.getvalue(), uploaded.name)


def _on_paste() -> None:
    fmt = st.session_state.get("catalog_paste_format") or "JSON"
    if load_pasted(st.session_state.get("catalog_paste", ""), fmt=fmt):
        st.toast(f"Loaded the pasted catalog, read as {fmt}.", icon=":material/check_circle:")


def _on_sample() -> None:
    load_sample(st.session_state.catalog_sample)


st.title("Catalog")
st.caption(
    "Load the tools (or skills) an agent is offered, browse them, and see exactly which text "
    "the search index reads for each one."
)

# -- loading -----------------------------------------------------------------
samples = list(sample_choices())
with st.container(border=True):
    st.markdown("**Load a catalog**")
    tab_sample, tab_upload, tab_paste = st.tabs(["Bundled sample", "Upload a file",
                                                 "Paste JSON or YAML"])
    with tab_sample:
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        label = st.session_state.catalog_label
        left.selectbox(
            "Sample catalog", samples, key="catalog_sample",
            index=samples.index(label) if label in samples else 0,
            help="Catalogs shipped with Ranklens, each with a judged query set.",
        )
        right.button("Load sample", key="catalog_load_sample", on_click=_on_sample, width="stretch")
    with tab_upload:
        st.file_uploader(
            "Catalog file", type=UPLOAD_TYPES, key="catalog_upload", on_change=_on_upload,
            help="JSON or YAML in any supported shape (native, MCP tools/list, MCP workspace, "
            "OpenAI or Anthropic tool lists), one SKILL.md, or a .zip of SKILL.md folders.",
        )
    with tab_paste:
        paste_format = st.segmented_control(
            "Read the text as", list(PASTE_FORMATS), key="catalog_paste_format", default="JSON",
            required=True, help="Strict: JSON must be valid JSON (double quotes, no trailing "
            "commas); it is never read as YAML instead.",
        ) or "JSON"
        st.text_area(
            f"Catalog {paste_format}", key="catalog_paste", height=140,
            placeholder=PASTE_EXAMPLES[paste_format],
        )
        st.button("Load pasted catalog", key="catalog_load_paste", on_click=_on_paste)

if st.session_state.catalog_error:
    st.error(f"**That catalog could not be loaded.** {st.session_state.catalog_error}", icon=":material/error:")
    if st.session_state.catalog_error.startswith("pasted JSON: invalid JSON"):
        st.caption("Pasted YAML? Choose **YAML** above the text box: JSON is read strictly.")
    if st.session_state.catalog is not None:
        st.caption(f"Still loaded: **{st.session_state.catalog_label}** (nothing was changed).")

cat: Catalog | None = current_catalog()
if cat is None:
    st.info("No catalog is loaded yet: pick a sample above, upload a file or paste JSON or YAML.")
    st.stop()

findings = lint_findings(cat)

# -- overview ----------------------------------------------------------------
st.subheader(f"{st.session_state.catalog_label}")
if st.session_state.working is not None:
    st.caption("Showing the edited working copy from the What-if editor.")
cols = st.columns(5)
cols[0].metric("Tools", len(cat.tools))
cols[1].metric("Skills", len(cat.skills))
cols[2].metric("Servers", len({t.server for t in cat.tools if t.server}))
cols[3].metric("Lint findings", len(findings), help="Problems in the definitions that hurt ranking "
               "(from the definition linter, `ranklens lint`).")
cols[4].metric("Format", cat.format)

# -- browser -----------------------------------------------------------------
kinds = [k for k, items in (("Tools", cat.tools), ("Skills", cat.skills)) if items]
kind = kinds[0]
if len(kinds) > 1:
    kind = st.segmented_control("Show", kinds, key="catalog_kind", default=kinds[0]) or kinds[0]

items: list[Tool] | list[Skill] = cat.tools if kind == "Tools" else cat.skills
table = ui.tools_frame(cat.tools, findings) if kind == "Tools" else ui.skills_frame(cat.skills, findings)
ids = [item.id for item in items]

if st.session_state.get("catalog_item") not in ids:
    st.session_state.pop("catalog_item", None)

st.text_input(
    "Filter", key="catalog_filter", placeholder="Type to filter by id, server, tags or description…",
)
if "server" in table and not table["server"].any():
    table = table.drop(columns=["server"])  # no tool has a server: an empty column only confuses
shown = ui.filter_frame(table, st.session_state.get("catalog_filter", ""))
shown_ids = list(shown["id"])


def _on_table_select() -> None:
    rows = st.session_state.catalog_table.selection.rows
    if rows and rows[0] < len(shown_ids):
        st.session_state.catalog_item = shown_ids[rows[0]]


st.caption(f"{len(shown)} of {ui.plural(len(table), kind[:-1].lower())} · click a row to inspect it")
st.dataframe(
    shown, key="catalog_table", hide_index=True, width="stretch", height=300,
    on_select=_on_table_select, selection_mode="single-row",
    column_config={
        "id": st.column_config.TextColumn("id", width="medium"),
        "description chars": st.column_config.NumberColumn(
            "description chars", help="Length of the description in characters."),
        "parameters": st.column_config.NumberColumn(
            "parameters", help="Top-level properties of the input schema."),
        "lint findings": st.column_config.NumberColumn(
            "lint findings", help="Definition problems found by the linter (see below when selected)."),
        "description": st.column_config.TextColumn("description", width="large"),
    },
)

selected = st.selectbox(
    f"Inspect one of the {kind.lower()}", ids, key="catalog_item",
    help="Or click a row of the table.",
)
if selected is None:
    st.stop()

item = next(i for i in items if i.id == selected)
projection = tool_projection(item) if isinstance(item, Tool) else skill_projection(item)

st.markdown(f"#### {item.id}")
if isinstance(item, Tool) and (item.server or item.group):
    st.caption(" · ".join(x for x in (f"server `{item.server}`" if item.server else "",
                                      f"group `{item.group}`" if item.group else "") if x))

item_findings = ui.findings_frame(findings, item.id)
if len(item_findings):
    with st.expander(f"{ui.plural(len(item_findings), 'lint finding')} for this {kind[:-1].lower()}",
                     expanded=True):
        st.table(item_findings, hide_index=True)
else:
    st.caption("No lint findings for this one.")

left, right = st.columns([3, 2])
with left:
    st.markdown("**What the index sees** (the projection)")
    st.caption(
        "The search index never reads the raw definition: it reads this text, built from the "
        "name, description and schema fields. Each piece is coloured by the field it came from; "
        "hover a piece to see its exact path. Types, `required`, titles and defaults are not indexed."
        + (" A skill's body is not indexed either." if isinstance(item, Skill) else "")
    )
    st.html(ui.projection_html(projection))
    st.html(ui.kind_legend_html(dict.fromkeys(s.kind for s in projection.spans)))
    st.markdown("**Analysed terms**")
    st.caption(
        "The projection after analysis: lowercased, split into words, stop words dropped, "
        "each word stemmed. Only these terms can match a query."
    )
    st.dataframe(ui.terms_frame(projection), hide_index=True, width="stretch", height=260,
                 key="catalog_terms")
with right:
    st.markdown("**Definition**")
    st.json(ui.definition_data(item), expanded=3)
    if isinstance(item, Skill) and item.body:
        with st.expander("Skill body (instructions; not indexed)"):
            st.markdown(item.body)
