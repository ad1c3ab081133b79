"""BM25 index: hand-computed scores, result semantics, incremental updates, explanations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.bm25 import BM25Index, idf

# A three-document corpus, analysed by hand (terms are already index terms).
DOCS = {
    "d1": ["file", "search"],  # dl 2
    "d2": ["file", "file", "read", "data"],  # dl 4
    "d3": ["mail"],  # dl 1
}


@pytest.fixture
def index() -> BM25Index:
    idx = BM25Index()
    for doc_id, terms in DOCS.items():
        idx.add_terms(doc_id, terms)
    return idx


def bm25_by_hand(tf: int, dl: int, df: int, n: int = 3, avgdl: float = 7 / 3) -> float:
    """The textbook formula in float64: k1 0.9, b 0.4, Lucene idf."""
    idf_ = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf_ * tf * 1.9 / (tf + 0.9 * (0.6 + 0.4 * dl / avgdl))


def test_scores_equal_the_formula_computed_by_hand(index):
    # "file": df 2, idf ln(1.6) = 0.4700036; d2 has tf 2 in 4 tokens.
    ranked = index.search_terms(["file"], 10)
    assert [d for d, _ in ranked] == ["d2", "d1"]
    assert ranked[0][1] == pytest.approx(0.5657060, rel=1e-6)
    assert ranked[0][1] == pytest.approx(bm25_by_hand(2, 4, 2), rel=1e-6)
    assert ranked[1][1] == pytest.approx(bm25_by_hand(1, 2, 2), rel=1e-6)
    assert idf(3, 2) == pytest.approx(math.log(1.6), rel=1e-7)


def test_only_matching_documents_are_returned_never_padded(index):
    assert [d for d, _ in index.search_terms(["mail"], 10)] == ["d3"]
    assert index.search_terms(["nothing"], 10) == []


def test_top_k_zero_and_empty_index_return_nothing(index):
    assert index.search_terms(["file"], 0) == []
    assert BM25Index().search_terms(["file"], 5) == []


def test_query_duplicates_are_counted(index):
    once = dict(index.search_terms(["mail"], 10))["d3"]
    twice = dict(index.search_terms(["mail", "mail"], 10))["d3"]
    assert twice == pytest.approx(2 * once, rel=1e-7)


def test_ties_break_by_id_in_byte_order():
    idx = BM25Index()
    for doc_id in ["b", "a", "B", "é", "aa"]:
        idx.add_terms(doc_id, ["same"])
    assert [d for d, _ in idx.search_terms(["same"], 10)] == ["B", "a", "aa", "b", "é"]
    # The cut at top_k keeps the id order among equal scores.
    assert [d for d, _ in idx.search_terms(["same"], 2)] == ["B", "a"]


def test_replacing_a_document_updates_df_and_lengths(index):
    index.add_terms("d3", ["file"])  # replace d3
    assert index.df("file") == 3
    assert index.df("mail") == 0
    assert len(index) == 3
    assert index.total_tokens == 7


def test_register_then_unregister_restores_the_ranking_exactly(index):
    before = index.search_terms(["file", "read", "mail"], 10)
    index.add_terms("d4", ["file", "mail", "mail"])
    assert index.search_terms(["file", "read", "mail"], 10) != before
    index.remove("d4")
    assert index.search_terms(["file", "read", "mail"], 10) == before


def test_compaction_keeps_rankings():
    idx = BM25Index()
    ref = BM25Index()
    for i in range(3000):
        idx.add_terms(f"t{i:04d}", ["common", f"w{i % 7}"] + ["x"] * (i % 5))
    for i in range(0, 3000, 3):
        idx.remove(f"t{i:04d}")  # past 1024 tombstones: compaction runs
    for i in range(3000):
        if i % 3:
            ref.add_terms(f"t{i:04d}", ["common", f"w{i % 7}"] + ["x"] * (i % 5))
    assert idx._dead < 1024
    for q in (["common"], ["w3", "x"], ["w1", "w1", "common"]):
        assert idx.search_terms(q, 50) == ref.search_terms(q, 50)


def test_remove_unknown_names_it(index):
    with pytest.raises(KeyError, match="nope"):
        index.remove("nope")


def test_rank_of_counts_ties_by_id(index):
    index.add_terms("d0", ["file", "search"])  # same score as d1, sorts before it
    assert index.rank_of(["file"], "d2") == 0
    assert index.rank_of(["file"], "d0") == 1
    assert index.rank_of(["file"], "d1") == 2
    assert index.rank_of(["file"], "d3") is None


vocab = st.sampled_from(["file", "read", "data", "user", "mail", "send", "zip", "log"])


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(vocab, min_size=0, max_size=12), min_size=1, max_size=25),
    query=st.lists(vocab, min_size=1, max_size=6),
)
def test_explanation_contributions_sum_to_the_ranked_score(docs, query):
    idx = BM25Index()
    for i, terms in enumerate(docs):
        idx.add_terms(f"d{i:02d}", terms)
    ranked = dict(idx.search_terms(query, len(docs)))
    for doc_id in (f"d{i:02d}" for i in range(len(docs))):
        stats, score = idx.explain_terms(query, doc_id)
        total = np.float32(0)
        for s in stats:
            if s.tf:
                total = np.float32(total + np.float32(s.contribution))
        assert float(total) == score
        if doc_id in ranked:
            assert ranked[doc_id] == score
        else:
            assert all(s.tf == 0 for s in stats)
