"""All session state, set up in one place, and the sidebar every page shares.

Pages read and write ``st.session_state`` only through the keys declared in
`DEFAULTS` (and the helpers here), so the state a page relies on is visible in
one file. Heavy objects (indexes, models) are not stored here: they live
behind ``st.cache_resource`` in `workbench.services`, keyed by the catalog's
content hash.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import streamlit as st

from core.catalog import Catalog, load_catalog, parse_catalog_bytes, parse_catalog_text
from core.errors import RanklensError

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_catalogs"
DEFAULT_SAMPLE = "support_billing.json"

# Every session key the app uses, with its initial value. Sections are owned by
# the pages that use them; add a key here before using it.
DEFAULTS: dict[str, Any] = {
    # -- shared: the loaded catalog ------------------------------------------
    "catalog": None,  # core.catalog.Catalog currently loaded
    "catalog_label": "",  # what the sidebar calls it (sample name or file name)
    "catalog_error": None,  # last load error message, shown inline; old catalog kept
    "queries_path": None,  # judged query set that goes with the catalog, if any
    "method": "bm25",  # default ranking method: bm25 | semantic | hybrid (sidebar)
    "method_seen": {},  # method widget key -> the default method it last took (see follow_default_method)
    "model": None,  # embedding model spec string; None = the bundled default
    "top_k": 10,
    "query": "",  # the last query typed in the playground or compare page (both start from it)
    # -- compare: a second catalog version -------------------------------------
    "catalog_b": None,
    "catalog_b_label": "",
    "catalog_b_error": None,  # last load error for catalog_b; the old catalog_b is kept
    # -- editor (what-if) ------------------------------------------------------
    "working": None,  # edited working copy (Catalog) or None when no edit yet
    "whatif": None,  # core.whatif.WhatIfSession of the loaded catalog (edits, undo/redo, ranks)
    "editor_tool": None,  # id of the tool the editor shows (other pages may set it)
    "autosave_dir": None,  # autosave folder; None = $RANKLENS_AUTOSAVE_DIR or the user data dir
    "autosave_declined": None,  # content hash whose autosave the user chose not to restore
    "editor_loaded": None,  # (tool id, revision) the edit widgets were last filled from
    "editor_error": None,  # message of the last undo/redo/restore that failed (shown above the form)
    "editor_form_error": None,  # message of the last form edit that could not be applied (Form tab)
    "editor_json_error": None,  # message of the last JSON edit that could not be applied (JSON tab)
    # -- evaluation -------------------------------------------------------------
    "judgments": None,  # list[core.evaluation.Judgment] for the loaded catalog
    "judgments_label": "",  # where the judged queries came from
    "eval_runs": None,  # dict config name -> workbench.improve.EvalRun, in run order
    "eval_errors": None,  # messages of configurations that could not run (e.g. no model)
    "eval_query_error": None,  # last problem with an uploaded or written judged query
    # -- eager recall ----------------------------------------------------------
    "embedding_notices_shown": set(),  # notices of the embedding layer already shown (services)
    "embeddings_warmed": set(),  # (content hash, model) whose embeddings are in the disk cache
    "conversation": None,  # core.cachesim.Conversation last simulated on the Eager recall page
}


def sample_choices() -> dict[str, Path]:
    """Bundled catalogs by display name."""
    out = {}
    for p in sorted(SAMPLES.iterdir()):
        if p.name.endswith(".queries.jsonl") or p.name in ("README.md", "conversations"):
            continue
        if p.suffix in (".json", ".yaml", ".yml") or (p.is_dir() and any(p.rglob("SKILL.md"))):
            out[p.name] = p
    return out


def queries_for(path: Path) -> Path | None:
    """The judged query set shipped beside a bundled catalog, if any."""
    stem = path.name if path.is_dir() else path.stem
    q = path.parent / f"{stem}.queries.jsonl"
    return q if q.exists() else None


def set_catalog(catalog: Catalog, label: str, queries_path: Path | None = None) -> None:
    """Make ``catalog`` the loaded one; clears page state that belonged to the old one."""
    st.session_state.catalog = catalog
    st.session_state.catalog_label = label
    st.session_state.catalog_error = None
    st.session_state.queries_path = str(queries_path) if queries_path else None
    st.session_state.working = None
    st.session_state.whatif = None
    st.session_state.editor_tool = None
    st.session_state.judgments = None
    st.session_state.eval_runs = None
    st.session_state.eval_errors = None


def load_sample(name: str) -> None:
    """Load a bundled sample by file name; on failure keep the old catalog and record the error."""
    path = sample_choices().get(name)
    if path is None:
        st.session_state.catalog_error = f"no bundled sample named {name!r}"
        return
    try:
        set_catalog(load_catalog(path), name, queries_for(path))
    except RanklensError as exc:
        st.session_state.catalog_error = str(exc)


def _load_into(slot: str, parse: Callable[[], Catalog], label: str,
               queries_path: Path | None = None) -> bool:
    """Parse a catalog into ``slot`` ("catalog" or "catalog_b").

    On failure the slot keeps its old catalog and ``<slot>_error`` holds the
    loader's message (file, item, fix); returns whether the load succeeded.
    """
    try:
        catalog = parse()
    except (RanklensError, ValueError) as exc:
        st.session_state[f"{slot}_error"] = str(exc)
        return False
    if catalog.is_empty:
        st.session_state[f"{slot}_error"] = (
            f"{label}: has no tools and no skills. Fix: load a catalog with at least one tool, "
            'e.g. [{"name": "get_user", "description": "Fetch one user by id."}].'
        )
        return False
    if slot == "catalog":
        set_catalog(catalog, label, queries_path)
    else:
        st.session_state.catalog_b = catalog
        st.session_state.catalog_b_label = label
        st.session_state.catalog_b_error = None
    return True


def load_upload(raw: bytes, filename: str, slot: str = "catalog") -> bool:
    """Load an uploaded file (JSON, YAML, MCP, OpenAI, Anthropic, SKILL.md or a zip of them)."""
    return _load_into(slot, lambda: parse_catalog_bytes(raw, filename), filename)


PASTE_FORMATS = {"JSON": ".json", "YAML": ".yaml"}
"""Formats of pasted catalog text, and the suffix the loader reads each as (strictly)."""


def load_pasted(text: str, slot: str = "catalog", fmt: str = "JSON") -> bool:
    """Load pasted catalog text, read strictly as ``fmt`` ("JSON" or "YAML"): JSON with a
    single-quoted string or a trailing comma is an error, never silently read as YAML."""
    suffix = PASTE_FORMATS.get(fmt)
    if suffix is None:
        raise ValueError(f"unknown paste format {fmt!r}; valid: {', '.join(PASTE_FORMATS)}")
    label = f"pasted {fmt}"
    return _load_into(slot, lambda: parse_catalog_text(text, label, suffix), label)


def load_sample_b(name: str) -> bool:
    """Load a bundled sample as the second catalog version (compare page)."""
    path = sample_choices().get(name)
    if path is None:
        st.session_state.catalog_b_error = f"no bundled sample named {name!r}"
        return False
    return _load_into("catalog_b", lambda: load_catalog(path), name)


def init_state() -> None:
    """Create every session key with its default, and load the starting catalog once."""
    for key, value in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = copy.copy(value)  # a fresh list/set/dict per session
    if st.session_state.catalog is None:
        start = os.environ.get("RANKLENS_CATALOG")
        if start and Path(start).exists():
            path = Path(start)
            try:
                set_catalog(load_catalog(path), path.name, queries_for(path))
                return
            except RanklensError as exc:
                st.session_state.catalog_error = f"RANKLENS_CATALOG={start}: {exc}"
        load_sample(DEFAULT_SAMPLE)


def require_catalog(*, original: bool = False) -> Catalog:
    """The catalog a page works on (see `current_catalog`; ``original`` for the loaded one).

    When none is loaded, or it is empty, say where to load one and stop the page.
    """
    cat = st.session_state.catalog if original else current_catalog()
    if cat is None or cat.is_empty:
        st.info("No catalog is loaded: open the Catalog page to load one.")
        st.stop()
    return cat


def current_catalog() -> Catalog:
    """The catalog pages work on: the edited working copy if there is one, else the loaded one."""
    return st.session_state.working or st.session_state.catalog


def current_judgments() -> list:
    """The judged queries pages work with: those loaded or written on the Evaluation page,
    else the set bundled with the catalog (empty when there is none)."""
    if st.session_state.judgments is None:
        from workbench.services import judged_queries

        path = st.session_state.queries_path
        st.session_state.judgments = list(judged_queries(path))
        st.session_state.judgments_label = Path(path).name if path else ""
    return st.session_state.judgments


def warn_unknown_judged_ids(catalog: Catalog, judgments: list) -> None:
    """Say so when the judged queries name ids the catalog does not have.

    Such queries can only score 0, so metrics would be wrong without a word;
    the message names the ids, suggests close ones, and says when the query
    set looks like it belongs to another catalog.
    """
    from core.evaluation import describe_unknown, unknown_relevant_ids

    if not judgments:
        return
    kind = "skill" if catalog.skills and not catalog.tools else "tool"
    known = {i.id for i in (catalog.skills if kind == "skill" else catalog.tools)}
    unknown = unknown_relevant_ids(judgments, known)
    if unknown:
        message = describe_unknown(
            unknown, known, judgments, source=st.session_state.get("judgments_label") or "the query set",
            kind=kind, catalog=st.session_state.get("catalog_label") or "this catalog",
        )
        st.warning(message, icon=":material/warning:")


def follow_default_method(widget_key: str, *, as_list: bool = False) -> None:
    """Make a page's method widget follow the sidebar's "Default method".

    Call it before the widget is drawn: on the page's first run, and whenever
    the default has changed since the widget last took it, the widget is set to
    the default (``[default]`` for a multi-select when ``as_list``); in between
    it keeps whatever the user picked on the page.
    """
    seen: dict[str, str] = st.session_state.method_seen
    method = st.session_state.method
    if seen.get(widget_key) != method:
        st.session_state[widget_key] = [method] if as_list else method
        seen[widget_key] = method


def autosaved_edits(cat: Catalog) -> int:
    """How many applied edits an autosave of ``cat`` holds that this session has not declined
    or restored (0 when there is none, it cannot be read, or it holds only undone edits)."""
    from core.whatif import Autosave

    if st.session_state.get("autosave_declined") == cat.content_hash:
        return 0
    if st.session_state.get("whatif") is not None:
        return 0  # the editor has already offered it in this session
    try:
        autosave = Autosave(st.session_state.get("autosave_dir"))
        stat = autosave.path_for(cat.content_hash).stat()
    except (OSError, RanklensError):
        return 0  # no autosave (the common case): one stat, no read
    return _autosaved_count(str(autosave.directory), cat.content_hash, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=16)
def _autosaved_count(directory: str, content_hash: str, mtime_ns: int, size: int) -> int:
    """Applied edits in an autosave file, read once per version of the file.

    The sidebar asks on every rerun of every page; the file holds a whole
    working catalog, so it is parsed again only when it changes (mtime, size).
    """
    from core.whatif import Autosave

    try:
        saved = Autosave(directory).load(content_hash)
    except (OSError, RanklensError):
        return 0
    return saved.n_edits if saved is not None else 0


def render_sidebar(page: str = "") -> None:
    """The loaded catalog, its size, the method and the engine profile.

    ``page`` is the url path of the page being shown: on the editor itself the
    autosave is offered in the page, so the sidebar does not repeat it.
    """
    cat: Catalog | None = st.session_state.catalog
    with st.sidebar:
        st.markdown("### Ranklens")
        if cat is None:
            st.warning("No catalog loaded. Open the Catalog page to load one.")
            return
        from workbench.ui import plural

        size = " · ".join(plural(len(items), word) for items, word in
                          ((cat.tools, "tool"), (cat.skills, "skill")) if items)
        st.markdown(f"**Catalog:** {st.session_state.catalog_label}  \n{size} · format `{cat.format}`")
        if st.session_state.working is not None:
            st.caption("Editing a working copy (the original stays loaded).")
        elif page != "editor" and (n_saved := autosaved_edits(cat)):
            st.info(f"{plural(n_saved, 'unsaved edit')} of this catalog from an earlier session "
                    f"{'was' if n_saved == 1 else 'were'} autosaved.")
            st.page_link("views/editor.py", label="Restore in the editor",
                         icon=":material/restore:", help="Open the What-if editor, which offers "
                         "to restore the autosaved edits.")
        st.session_state.method = st.selectbox(
            "Default method", ["bm25", "semantic", "hybrid"],
            index=["bm25", "semantic", "hybrid"].index(st.session_state.method),
            key="sidebar_method",
            help="The method the Query playground, Compare (catalog versions) and Evaluation "
            "start from; changing it here switches them to it (you can still pick another on "
            "each page). bm25 ranks exactly like the reference engine (ratel-ai 0.12.0). "
            "semantic and hybrid load an embedding model on first use (about 10 s).",
        )
        st.caption("Engine profile: `ratel-0.12` analyzer · BM25 k1=0.9, b=0.4 (float32)")
