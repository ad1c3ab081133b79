"""Heavy objects behind ``st.cache_resource``: searchable indexes and models.

Keyed by the catalog's content hash, so two sessions looking at the same
catalog share one index, and an edited catalog gets its own. Pages call these
helpers; they never build indexes themselves.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

from core.cachesim import STRATEGIES, Conversation, StrategySim, simulate_all  # improve pages
from core.capabilities import CapabilityHost  # improve pages
from core.catalog import Catalog
from core.embedding import EmbeddingCache, embed_with_cache, make_embedder
from core.errors import RanklensError
from core.evaluation import Judgment, load_queries
from core.lint import Finding, lint_catalog
from core.projection import project_skill, project_tool
from core.search import Explanation, SearchResult, SkillCatalog, ToolCatalog, catalog_for
from core.whatif import ConfusablePair, confusable_pairs, item_kind  # improve pages


@st.cache_resource(max_entries=16, show_spinner="Indexing the catalog…")
def _indexed(content_hash: str, method: str, model: str | None, _catalog: Catalog) -> ToolCatalog | SkillCatalog:
    return catalog_for(_catalog, method=method, model=model)


def search_catalog(catalog: Catalog, method: str = "bm25", model: str | None = None) -> ToolCatalog | SkillCatalog:
    """The searchable index of ``catalog`` for ``method`` (built once, then shared)."""
    return _indexed(catalog.content_hash, method, model, catalog)


@st.cache_resource(max_entries=8, show_spinner=False)
def _probe_embedder(model: str | None):
    return make_embedder(model)


def model_loaded(model: str | None = None) -> bool:
    """Whether semantic and hybrid search with ``model`` can start without loading a model:
    this app process holds it already, or it needs no loading (the hashing embedder).

    False too when the model cannot be found: the page then shows the error when
    the user asks for semantic search, not on its own.
    """
    try:
        embedder = _probe_embedder(model)
    except (RanklensError, ValueError):
        return False
    return bool(getattr(embedder, "loaded", True))


def dense_index(catalog: Catalog, model: str | None = None) -> ToolCatalog | SkillCatalog:
    """The index with embeddings that semantic and hybrid search share (loads the model once).

    What the embedding layer reports only through Python warnings is shown here,
    where the user can see it: a slow model load only in the run that loaded the
    model (not in every later session of the app process); a cache kept in
    memory or rebuilt once per session.
    """
    was_loaded = model_loaded(model)
    loaders: list[object] = []
    if (catalog.content_hash, model) not in st.session_state.embeddings_warmed:
        loaders.append(_warm_embeddings(catalog, model))
        st.session_state.embeddings_warmed.add((catalog.content_hash, model))
    index = _indexed(catalog.content_hash, "hybrid", model, catalog)
    embedder = index.embedder
    loaders.append(embedder)
    if not getattr(embedder, "loaded", True):
        # Load now rather than inside the first search, so the load happens in this
        # call and its notice is shown here.
        with st.spinner("Loading the embedding model (first use since the app started; "
                        "about 10 s)…"):
            embedder.load()  # type: ignore[union-attr]
    if not was_loaded:
        for notice in dict.fromkeys(n for n in (load_notice(e) for e in loaders) if n):
            st.warning(notice, icon=":material/info:")
    shown = st.session_state.embedding_notices_shown
    for notice in embedding_notices(index):
        if notice not in shown:
            shown.add(notice)
            st.warning(notice, icon=":material/info:")
    return index


def _warm_embeddings(catalog: Catalog, model: str | None) -> object:
    """Embed what the on-disk cache lacks, with a progress bar, before the cached index is built.

    (A progress bar cannot be drawn from inside an ``st.cache_resource``
    function; the index built afterwards finds every vector in the cache.)
    Returns the embedder it used (which loaded the model if anything was missing).
    """
    items = catalog.tools or catalog.skills
    project = project_tool if catalog.tools else project_skill
    texts = [project(item) for item in items]  # type: ignore[arg-type]
    embedder = make_embedder(model)
    cache = EmbeddingCache.for_embedder(embedder)
    if not cache.get_many(texts)[1]:
        return embedder
    bar = st.progress(0.0, text="Loading the embedding model…")

    def progress(done: int, total: int) -> None:
        bar.progress(
            done / total,
            text=f"Embedding {done:,} of {total:,} texts with the model "
            "(kept in the on-disk cache: next time this is instant)…",
        )

    embed_with_cache(embedder, texts, cache, progress)
    bar.empty()
    return embedder


def load_notice(embedder: object) -> str | None:
    """The slow-load message of an embedder that loaded the model, in words a user can act on."""
    notice = getattr(embedder, "load_notice", None)
    if not notice:
        return None
    return f"{notice} (once per app process; later searches are fast)."


def embedding_notices(index: ToolCatalog | SkillCatalog) -> list[str]:
    """Non-fatal events of a dense index's embedding cache, in words a user can act on.

    (A slow model load is reported apart, by `load_notice`, only where it happened.)
    """
    notices = []
    cache = index.embedding_cache
    if cache is not None and cache.degraded_reason:
        notices.append(f"Embeddings are kept in memory only this session: {cache.degraded_reason}")
    if cache is not None and cache.rebuilt_reason:
        notices.append(f"The embedding cache was rebuilt: {cache.rebuilt_reason}")
    return notices


def run_search(
    catalog: Catalog, query: str, top_k: int, method: str = "bm25", model: str | None = None
) -> SearchResult:
    """Search ``catalog`` with any method.

    BM25 uses the BM25-only index; semantic and hybrid use `dense_index`,
    whose first use loads the embedding model (may raise EmbedderError).
    """
    if method == "bm25":
        return search_catalog(catalog, "bm25").search_with(query, top_k, "bm25")
    return dense_index(catalog, model).search_with(query, top_k, method)


def explain_many(catalog: Catalog, query: str, ids: list[str]) -> dict[str, Explanation]:
    """BM25 explanations of ``ids`` for ``query`` (per term: tf, df, idf, contribution, fields)."""
    index = search_catalog(catalog, "bm25")
    return {i: index.explain(query, i) for i in ids if i in index}


@st.cache_data(max_entries=16, show_spinner=False)
def _lint(content_hash: str, _catalog: Catalog) -> list[Finding]:
    return lint_catalog(_catalog)


def lint_findings(catalog: Catalog) -> list[Finding]:
    """The definition linter's findings for ``catalog`` (computed once per catalog content)."""
    return _lint(catalog.content_hash, catalog)


@st.cache_data(max_entries=16, show_spinner=False)
def _queries(path: str, mtime: float) -> list[Judgment]:
    return load_queries(path)


def judged_queries(path: str | None) -> list[Judgment]:
    """The judged query set at ``path`` (empty when there is none or it cannot be read)."""
    if not path or not Path(path).exists():
        return []
    try:
        return _queries(path, Path(path).stat().st_mtime)
    except RanklensError:
        return []


# -- improve pages: evaluation lint, confusability, eager recall --------------------------------


@st.cache_data(max_entries=16, show_spinner="Linting the catalog against the judged queries…")
def _lint_judged(content_hash: str, queries_key: str, _catalog: Catalog, _judgments: tuple[Judgment, ...]) -> list[Finding]:
    return lint_catalog(_catalog, list(_judgments))


def lint_with_queries(catalog: Catalog, judgments: list[Judgment] | tuple[Judgment, ...] | None) -> list[Finding]:
    """Lint findings including the query-set rules (unreachable, shadowing...) when there are judgments."""
    if not judgments:
        return lint_findings(catalog)
    from workbench.improve import judgments_to_jsonl

    key = hashlib.sha256(judgments_to_jsonl(judgments).encode()).hexdigest()
    return _lint_judged(catalog.content_hash, key, catalog, tuple(judgments))


@st.cache_data(max_entries=16, show_spinner=False)
def _confusable(content_hash: str, top_n: int, _catalog: Catalog) -> list[ConfusablePair]:
    items = _catalog.skills if item_kind(_catalog) == "skill" else _catalog.tools
    return confusable_pairs(items, top_n)


def confusable(catalog: Catalog, top_n: int = 20) -> list[ConfusablePair]:
    """The ``top_n`` most confusable item pairs of ``catalog`` (see `core.whatif.confusable_pairs`)."""
    return _confusable(catalog.content_hash, top_n, catalog)


@st.cache_data(max_entries=32, show_spinner="Replaying the conversation under each strategy…")
def _simulate(content_hash: str, conversation_json: str, top_k: int, top_k_skills: int,
              strategies: tuple[str, ...], format: str, method: str, model: str | None,
              _catalog: Catalog) -> list[StrategySim]:
    options = {"model": model} if model and method != "bm25" else {}
    host = CapabilityHost.from_catalog(_catalog, method=method, **options)
    conversation = Conversation.model_validate_json(conversation_json)
    return simulate_all(host, conversation, strategies, top_k=top_k, top_k_skills=top_k_skills,
                        format=format)


def simulate_conversation(catalog: Catalog, conversation: Conversation, top_k: int = 5,
                          format: str = "anthropic", method: str = "bm25",
                          model: str | None = None, *, top_k_skills: int = 3,
                          strategies: tuple[str, ...] = STRATEGIES) -> list[StrategySim]:
    """`core.cachesim.simulate_all` over ``catalog`` (cached per catalog, conversation and options).

    ``top_k`` tools and ``top_k_skills`` skills per search; a catalog of skills
    only is searched for skills (its tool list is empty).
    """
    return _simulate(catalog.content_hash, conversation.model_dump_json(), top_k, top_k_skills,
                     tuple(strategies), format, method, model, catalog)
