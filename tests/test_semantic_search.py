"""Semantic and hybrid search through the catalog facade (deterministic hashing embedder)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from core.catalog import Tool
from core.embedding import HashingEmbedder
from core.errors import QueryError
from core.fusion import reciprocal_rank_fusion
from core.search import ToolCatalog

TOOLS = [
    Tool(id="mail__send", name="send_email", description="Send an email message to a recipient."),
    Tool(id="chat__post", name="post_message", description="Post a message in a chat channel."),
    Tool(id="cal__create", name="create_event", description="Create a calendar event with attendees."),
    Tool(id="fs__read", name="read_file", description="Read the contents of a file."),
]


def dense(method="hybrid", **kw) -> tuple[ToolCatalog, HashingEmbedder]:
    emb = HashingEmbedder(64)
    return ToolCatalog(TOOLS, method=method, model=emb, persistent_cache=False, **kw), emb


def run(coro):
    return asyncio.run(coro)


def test_bm25_catalog_holds_no_vectors_and_imports_no_torch():
    import subprocess

    code = (
        "import sys; from core.search import ToolCatalog; from core.catalog import Tool;"
        "c = ToolCatalog([Tool(id='a', name='a', description='x')]); c.search('x', 1);"
        "print('torch' in sys.modules, c.embedder is None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_search_is_bm25_only_on_a_dense_catalog():
    cat, _ = dense("semantic")
    with pytest.raises(QueryError, match="search_async"):
        cat.search("email", 3)
    # the per-call method wins
    assert run(cat.search_async("email", 3, method="bm25")).method == "bm25"


def test_semantic_ranks_by_cosine_of_the_projection_text():
    cat, emb = dense("semantic")
    result = run(cat.search_async("send an email message", 2))
    assert result.method == "semantic" and len(result) == 2
    assert result[0].score >= result[1].score
    # only the query is embedded at search time
    before = emb.texts_embedded
    run(cat.search_async("another query", 2))
    assert emb.texts_embedded == before and emb.query_calls >= 2


def test_hybrid_is_rrf_of_both_arms_with_per_arm_explanations():
    cat, _ = dense("hybrid")
    query = "post a message"
    result = run(cat.search_async(query, 4))
    bm25 = [(h.id, h.score) for h in run(cat.search_async(query, 100, method="bm25"))]
    sem = [(h.id, h.score) for h in run(cat.search_async(query, 100, method="semantic"))]
    expected = reciprocal_rank_fusion([bm25, sem], rrf_k=60, depth=100, k=4)
    assert [h.id for h in result] == [f.id for f in expected]
    top = result[0]
    assert [a.method for a in top.arms] == ["bm25", "semantic"]
    assert top.score == pytest.approx(sum(a.share for a in top.arms))
    for arm in top.arms:
        if arm.rank is not None:
            assert arm.share == pytest.approx(1 / (60 + arm.rank))
    exp = cat.explain(query, top.id, method="hybrid")
    assert exp.fused_score == pytest.approx(top.score)
    assert [(a.rank, a.share) for a in exp.arms] == [(a.rank, a.share) for a in top.arms]


def test_register_embeds_only_changed_tools_in_one_batch():
    cat, emb = dense("semantic")
    calls, texts = emb.calls, emb.texts_embedded
    assert cat.register(TOOLS) == []  # unchanged: nothing embedded
    assert (emb.calls, emb.texts_embedded) == (calls, texts)
    edited = TOOLS[0].model_copy(update={"description": "Deliver a mail."})
    cat.register([edited, TOOLS[1]])
    assert emb.calls == calls + 1 and emb.texts_embedded == texts + 1


def test_embedding_failure_registers_nothing():
    class Broken(HashingEmbedder):
        def embed_documents(self, texts, *, progress=None):
            raise RuntimeError("boom")

    from core.errors import EmbedderError

    cat = ToolCatalog(TOOLS[:2], method="semantic", model=HashingEmbedder(64), persistent_cache=False)
    cat._embedder = Broken(64)
    new = Tool(id="x", name="x", description="new tool")
    with pytest.raises(EmbedderError):
        cat.register(new)
    assert "x" not in cat and "x" not in cat.index


def test_relevance_floor_returns_nothing_with_a_reason():
    cat = ToolCatalog(TOOLS, floors={"bm25": 50.0})
    result = cat.search("email", 5)
    assert len(result) == 0 and "relevance floor 50" in result.reason
    with pytest.raises(QueryError, match="per arm"):
        ToolCatalog(TOOLS, floors={"rrf": 0.1})


def test_reranker_reorders_the_head_and_a_failing_one_falls_back_with_a_note():
    class Reverse:
        def rerank(self, query, candidates):
            return [(cid, float(i)) for i, (cid, _) in enumerate(candidates)]

    class Broken:
        def rerank(self, query, candidates):
            raise RuntimeError("model crashed")

    plain = ToolCatalog(TOOLS).search("message", 5)
    reranked = ToolCatalog(TOOLS, reranker=Reverse()).search("message", 5)
    assert [h.id for h in reranked] == [h.id for h in reversed(plain.hits)]
    assert "reranked" in reranked.notes[0]
    fallback = ToolCatalog(TOOLS, reranker=Broken()).search("message", 5)
    assert [h.id for h in fallback] == [h.id for h in plain]
    assert "reranker not applied" in fallback.notes[0]


@pytest.mark.slow
def test_real_default_model_hybrid_finds_a_paraphrase(tmp_path):
    cat = ToolCatalog(TOOLS, method="hybrid", cache_dir=tmp_path)
    result = run(cat.search_async("write to someone's inbox", 2))
    assert result[0].id == "mail__send"
    # warm reopen embeds nothing
    again = ToolCatalog(TOOLS, method="semantic", cache_dir=tmp_path)
    assert again.embedding_cache is not None and len(again.embedding_cache) >= len(TOOLS)
