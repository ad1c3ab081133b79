"""What-if editor: edit a tool in a working copy and see which judged queries it wins or loses."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from core.errors import CatalogError
from core.whatif import (
    Autosave,
    WhatIfSession,
    item_data,
    param_fields,
    parse_item_json,
    with_fields,
)
from workbench import improve, ui
from workbench.state import current_judgments, require_catalog, warn_unknown_judged_ids

SUMMARY_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")
MODES = ("Form", "JSON")

st.title("What-if editor")
st.caption(
    "Change a definition in a **working copy** and see, before you ship it, what the change does "
    "to the ranking: for every judged query, the rank of the right tool (or skill) before and after, the "
    "queries won and lost, the metric changes, and which words the edit added to or removed from "
    "what the index sees. The loaded catalog stays as it is; every change is autosaved."
)

catalog = require_catalog(original=True)


# -- the session -------------------------------------------------------------------------------


def _session() -> WhatIfSession:
    """The what-if session of the loaded catalog (created once, kept in the session state)."""
    session: WhatIfSession | None = st.session_state.whatif
    judgments = current_judgments()
    if session is None or session.original.content_hash != catalog.content_hash:
        with st.spinner("Indexing the working copy and ranking the judged queries…"):
            session = WhatIfSession(
                catalog, judgments, autosave=Autosave(st.session_state.autosave_dir),
                label=st.session_state.catalog_label,
            )
        st.session_state.whatif = session
    elif tuple(judgments) != session.judgments:
        session.set_judgments(judgments)
    return session


session = _session()
warn_unknown_judged_ids(catalog, list(session.judgments))
kind = session.kind
ids = [i.id for i in session.items]


def _sync() -> None:
    """Share the working copy with the other pages (None when it equals the original)."""
    st.session_state.working = session.working if session.changed_ids() else None


# -- callbacks: every change happens here, before the page is drawn ---------------------------


def _apply_form() -> None:
    tool_id = st.session_state.editor_tool
    current = session.item(tool_id)
    params = param_fields(current) if kind == "tool" else []
    descriptions, enums = {}, {}
    for n, field in enumerate(params):
        text = st.session_state.get(f"editor_param_desc_{n}", field.description or "")
        if text != (field.description or ""):
            descriptions[field.path] = text
        if field.enum is not None:
            values = [v.strip() for v in st.session_state.get(f"editor_param_enum_{n}", "").splitlines()]
            values = [v for v in values if v]
            if tuple(values) != field.enum:
                enums[field.path] = values
    try:
        tags = None
        if kind == "skill":
            tags = [t.strip() for t in st.session_state.get("editor_tags", "").split(",") if t.strip()]
        edited = with_fields(
            current,
            name=st.session_state.get("editor_name", current.name),
            description=st.session_state.get("editor_description", current.description),
            param_descriptions=descriptions, param_enums=enums, tags=tags,
            source=f"edit of {tool_id!r}",
        )
        session.edit(edited)
        _clear_errors()
    except CatalogError as exc:
        st.session_state.editor_form_error = str(exc)
    _sync()


def _apply_json() -> None:
    tool_id = st.session_state.editor_tool
    try:
        edited = parse_item_json(st.session_state.get("editor_json", ""), kind, tool_id,
                                 source=f"JSON of {tool_id!r}")
        session.edit(edited)
        _clear_errors()
    except CatalogError as exc:
        st.session_state.editor_json_error = str(exc)
        st.session_state.editor_mode = "JSON"  # stay on the JSON tab, where the error is shown
    _sync()


def _clear_errors() -> None:
    st.session_state.editor_error = None
    st.session_state.editor_form_error = None
    st.session_state.editor_json_error = None


def _pick() -> None:
    st.session_state.editor_tool = st.session_state.editor_tool_select
    _clear_errors()


def _show_touched() -> None:
    """After undo, redo, revert or restore, show the item that change concerns (the current
    one when it is among the items changed)."""
    touched = session.touched
    if touched and st.session_state.editor_tool not in touched:
        st.session_state.editor_tool = touched[0]


def _undo() -> None:
    session.undo()
    _clear_errors()
    _show_touched()
    _sync()


def _redo() -> None:
    session.redo()
    _clear_errors()
    _show_touched()
    _sync()


def _revert() -> None:
    session.revert_all()
    _clear_errors()
    _show_touched()
    _sync()


def _restore(saved) -> None:
    _clear_errors()
    try:
        session.restore(saved)
        _show_touched()
    except CatalogError as exc:
        st.session_state.editor_error = str(exc)
    st.session_state.autosave_declined = catalog.content_hash
    _sync()


def _discard_autosave() -> None:
    if session.autosave is not None:
        session.autosave.discard(catalog.content_hash)
    st.session_state.autosave_declined = catalog.content_hash


# -- autosave offer ------------------------------------------------------------------------------

if (session.autosave is not None and not session.history and not session.redo_stack
        and st.session_state.autosave_declined != catalog.content_hash):
    try:
        saved = session.autosave.load(catalog.content_hash)
    except CatalogError as exc:
        saved = None
        st.warning(f"An autosave of this catalog cannot be read: {exc}", icon=":material/warning:")
        st.button("Discard it", key="editor_discard_autosave", on_click=_discard_autosave)
    if saved is not None and saved.applied:
        with st.container(border=True):
            edited = list(dict.fromkeys(e.item_id for e in saved.applied))
            st.markdown(
                f"**An autosave of this catalog holds {ui.plural(saved.n_edits, 'edit')}** "
                f"(of {', '.join(f'`{i}`' for i in edited[:5])}{'…' if len(edited) > 5 else ''}; "
                f"saved {ui.saved_time(saved.saved_at)}). Restore it to continue where you left "
                "off; editing without restoring replaces it."
            )
            where = f"The autosave file: {saved.path}"
            c1, c2 = st.columns(2)
            c1.button("Restore the autosave", key="editor_restore", type="primary",
                      on_click=_restore, args=(saved,), icon=":material/restore:", help=where)
            c2.button("Discard it", key="editor_discard_autosave", on_click=_discard_autosave,
                      help=f"Deletes it. {where}")

# -- toolbar ---------------------------------------------------------------------------------------

bar = st.columns([1, 1, 1.3, 2.8], vertical_alignment="center")
bar[0].button("Undo", key="editor_undo", on_click=_undo, disabled=not session.can_undo,
              icon=":material/undo:", width="stretch")
bar[1].button("Redo", key="editor_redo", on_click=_redo, disabled=not session.can_redo,
              icon=":material/redo:", width="stretch")
bar[2].button("Revert all", key="editor_revert", on_click=_revert, disabled=not session.can_undo,
              help="Back to the original; the edits can be redone one by one.",
              width="stretch")
try:
    content, filename, mime = session.export_file()
    what = ("a zip of <skill>/SKILL.md folders, which the Catalog page loads back"
            if mime == "application/zip" else f"the format it was loaded in ({session.original.format})")
    bar[3].download_button(
        f"Download ({session.original.format})", content, file_name=filename, mime=mime,
        key="editor_download", icon=":material/download:", width="stretch",
        help=f"The working copy as `{filename}`: {what}.",
    )
except CatalogError as exc:
    bar[3].download_button(
        "Download (native JSON)", json.dumps(session.working.to_data("native"), indent=2),
        file_name="catalog.edited.json", mime="application/json", key="editor_download",
        icon=":material/download:", width="stretch",
        help=f"The original format cannot hold this edit: {exc}",
    )
changed = session.changed_ids()
n_edits = len(session.history)
status = (f"{ui.plural(n_edits, 'edit')} applied · {ui.plural(len(changed), kind)} "
          f"{ui.verb(len(changed), 'differs', 'differ')} from the original")
if changed:
    status += " (" + ", ".join(f"`{i}`" for i in changed[:6]) + ("…" if len(changed) > 6 else "") + ")"
if session.result is not None:
    status += (f" · re-ranked {ui.plural(len(session.judgments), 'query')} in "
               f"{session.result.seconds * 1000:.0f} ms")
st.caption(status)
if session.autosave_error:
    st.warning(session.autosave_error, icon=":material/warning:")
if st.session_state.editor_error:
    st.error(st.session_state.editor_error, icon=":material/error:")

# -- the edit --------------------------------------------------------------------------------------

# The selected tool lives in `editor_tool`, so other pages can open one here.
if st.session_state.editor_tool not in ids:
    st.session_state.editor_tool = ids[0]
if st.session_state.get("editor_tool_select") != st.session_state.editor_tool:
    st.session_state.editor_tool_select = st.session_state.editor_tool

left, right = st.columns([5, 6], gap="large")
with left:
    # Labels are the ids alone: a label that changes with the edits (say, a mark on edited
    # items) makes the browser send back a label that no longer exists, and the selection
    # jumps to the first item.
    st.selectbox(f"{kind.title()} to edit", ids, key="editor_tool_select", on_change=_pick,
                 help=f"Edited {kind}s are listed above the form.")
    tool_id = st.session_state.editor_tool
    item = session.item(tool_id)
    params = param_fields(item) if kind == "tool" else []

    # Fill the edit widgets from the working copy when the tool or the working copy changed.
    loaded = (tool_id, session.revision)
    if st.session_state.editor_loaded != loaded or "editor_description" not in st.session_state:
        st.session_state.editor_name = item.name
        st.session_state.editor_description = item.description
        st.session_state.editor_json = json.dumps(item_data(item), indent=2, ensure_ascii=False)
        if kind == "skill":
            st.session_state.editor_tags = ", ".join(item.tags)  # type: ignore[union-attr]
        for n, field in enumerate(params):
            st.session_state[f"editor_param_desc_{n}"] = field.description or ""
            st.session_state[f"editor_param_enum_{n}"] = "\n".join(field.enum or ())
        st.session_state.editor_loaded = loaded

    # Keyed, state-tracking tabs: the open tab survives reruns (a failed Apply JSON keeps
    # the JSON tab open, with its error above the text).
    form_tab, json_tab = st.tabs(list(MODES), key="editor_mode", on_change="rerun")
    with form_tab:
        if st.session_state.editor_form_error:
            st.error(st.session_state.editor_form_error, icon=":material/error:")
        st.text_input("Name", key="editor_name")
        st.text_area("Description", key="editor_description", height=160)
        if kind == "skill":
            st.text_input("Tags (comma-separated)", key="editor_tags")
        if params:
            st.markdown("**Parameters** — descriptions and string enum values are indexed.")
        for n, field in enumerate(params):
            with st.container(border=True):
                st.text_area(f"Description of `{field.label}`", key=f"editor_param_desc_{n}",
                             height=68, placeholder="(no description)")
                if field.enum is not None:
                    st.text_area(f"Enum values of `{field.label}`, one per line",
                                 key=f"editor_param_enum_{n}", height=68)
                elif field.other_enum:
                    st.caption(f"`{field.label}` has an enum with non-string values (not "
                               "indexed): edit them in the JSON tab.")
        st.button("Apply edit", key="editor_apply", type="primary", on_click=_apply_form,
                  icon=":material/check:")
    with json_tab:
        st.caption("The whole definition as the loaders read it; it is checked like a loaded "
                   "file. The id must stay the same (judged queries refer to it).")
        if st.session_state.editor_json_error:
            st.error(st.session_state.editor_json_error, icon=":material/error:")
        st.text_area("Definition (JSON)", key="editor_json", height=420,
                     label_visibility="collapsed")
        st.button("Apply JSON", key="editor_apply_json", type="primary", on_click=_apply_json,
                  icon=":material/data_object:")

# -- what the edits do -------------------------------------------------------------------------------

result = session.result
with right:
    if result is None:
        st.info("No judged queries for this catalog, so there is nothing to re-rank. Load or "
                "write a judged query set on the Evaluation page.", icon=":material/info:")
        st.page_link("views/evaluation.py", label="Open the Evaluation page",
                     icon=":material/fact_check:")
    else:
        st.subheader("Effect on the judged queries")
        st.caption(
            f"{ui.plural(len(session.judgments), 'judged query')}, ranked with BM25 against the "
            f"original catalog and the working copy. Rank = position of the first right {kind} in "
            "the full ranking (— = it matches no query word). Every query is listed below."
        )
        cols = st.columns(len(SUMMARY_METRICS))
        for col, key in zip(cols, SUMMARY_METRICS, strict=True):
            m = result.metric(key)
            col.metric(key, f"{m.after:.3f}", delta=f"{m.delta:+.3f}" if m.delta else None,
                       help=f"Original {m.before:.3f} → working copy {m.after:.3f}")
        won, lost = result.won, result.lost
        w_col, l_col = st.columns(2)
        with w_col:
            st.markdown(f"**:green[▲ Won: {len(won)}]** — the right {kind} moved up")
            for o in won:
                st.markdown(f"- {o.query} — {improve.rank_text(o.rank_before)} → "
                            f"**{improve.rank_text(o.rank_after)}**")
        with l_col:
            st.markdown(f"**:red[▼ Lost: {len(lost)}]** — the right {kind} moved down")
            for o in lost:
                st.markdown(f"- {o.query} — {improve.rank_text(o.rank_before)} → "
                            f"**{improve.rank_text(o.rank_after)}**")

    diff = session.term_diff(tool_id)
    st.markdown(f"**Indexed words of `{tool_id}`, working copy vs original**")
    if diff.unchanged:
        st.caption("No change: the index sees the same terms as in the original.")
    else:
        added = " ".join(f":green-background[+{t}]" for t in diff.added) or "none"
        removed = " ".join(f":red-background[−{t}]" for t in diff.removed) or "none"
        st.markdown(f"Added: {added}  \nRemoved: {removed}")
        st.caption(f"Projection length {diff.length_before} → {diff.length_after} terms "
                   "(longer projections weigh each word a little less).")
        with st.expander("Every term whose count changed"):
            st.dataframe(pd.DataFrame(diff.counts, columns=["term", "before", "after"]),
                         hide_index=True, key="editor_term_counts")

    if result is not None:
        with st.expander("All metric changes"):
            st.dataframe(
                pd.DataFrame([{"metric": m.metric, "original": round(m.before, 4),
                               "working copy": round(m.after, 4), "delta": round(m.delta, 4)}
                              for m in result.metrics]),
                hide_index=True, key="editor_metric_table",
            )

# -- every judged query (full width, so the rank columns are in view) ----------------------------

if result is not None:
    st.subheader("Every judged query, before and after")
    only_changed = st.toggle("Only queries whose rank changed", key="editor_only_changed",
                             persist_state="session")
    rows = improve.outcome_rows(result, only_changed=only_changed)
    st.dataframe(
        pd.DataFrame(rows, columns=improve.OUTCOME_COLUMNS), hide_index=True, key="editor_outcomes",
        width="stretch", placeholder="—",
        column_config={
            "rank before": st.column_config.NumberColumn(
                format="%d", width="small",
                help=f"Rank of the first right {kind} in the original (— = matches no query word)."),
            "rank after": st.column_config.NumberColumn(
                format="%d", width="small", help=f"Rank of the first right {kind} in the working copy."),
            "change": st.column_config.TextColumn(width="small"),
            "last edit": st.column_config.TextColumn(
                width="small", help="How the most recent change (edit, undo, redo) moved it."),
            "query": st.column_config.TextColumn(width=360),
        },
    )

# -- diff against the original ---------------------------------------------------------------------

st.subheader("Working copy vs original")
diffs = session.diff()
if not diffs:
    st.caption("No differences yet: apply an edit above.")
for d in diffs:
    with st.expander(f"{d.item_id} — +{len(d.terms.added)} / −{len(d.terms.removed)} indexed terms"):
        st.code(d.unified, language="diff")
