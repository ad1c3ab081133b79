"""Ranklens workbench: the Streamlit entry point.

Run with ``make run`` (or ``streamlit run workbench/app.py``). The entry
script only sets up the page, the shared session state and the sidebar, then
routes to one small module per page under ``workbench/views/``.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `streamlit run workbench/app.py` from a checkout
    sys.path.insert(0, str(ROOT))

from workbench.state import init_state, render_sidebar  # noqa: E402

VIEWS = Path(__file__).resolve().parent / "views"

st.set_page_config(page_title="Ranklens", page_icon=":material/manage_search:", layout="wide")
init_state()

pages = {
    "Explore": [
        st.Page(VIEWS / "catalog.py", title="Catalog", icon=":material/inventory_2:", url_path="catalog"),
        st.Page(VIEWS / "playground.py", title="Query playground", icon=":material/search:", url_path="playground", default=True),
        st.Page(VIEWS / "compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    ],
    "Improve": [
        st.Page(VIEWS / "editor.py", title="What-if editor", icon=":material/edit_note:", url_path="editor"),
        st.Page(VIEWS / "evaluation.py", title="Evaluation", icon=":material/fact_check:", url_path="evaluation"),
        st.Page(VIEWS / "recall.py", title="Eager recall", icon=":material/forum:", url_path="recall"),
    ],
}
page = st.navigation(pages)
render_sidebar(page.url_path)
try:
    page.run()
except Exception as exc:  # st.stop()/rerun are BaseExceptions and pass through
    # One failing core call must not take the workbench down: say what failed,
    # keep the details at hand, and leave every other page usable.
    st.error(
        f"This page stopped on an unexpected error: {type(exc).__name__}: {exc}. "
        "The loaded catalog and your edits are unchanged; the other pages still work.",
        icon=":material/error:",
    )
    with st.expander("Technical details (for a bug report)"):
        st.code("".join(traceback.format_exception(exc)), language="text")
