"""Reciprocal Rank Fusion on hand-computed fixtures."""

from __future__ import annotations

import math

import pytest

from core.fusion import ArmContribution, FusedHit, reciprocal_rank_fusion, rrf_share

# Arm 0 (say BM25) and arm 1 (say semantic), best first.
BM25 = [("a", 12.0), ("b", 9.5), ("c", 3.0)]
SEMANTIC = [("c", 0.91), ("a", 0.80), ("d", 0.5)]


def test_hand_computed_scores_and_order():
    hits = reciprocal_rank_fusion([BM25, SEMANTIC])
    # a: 1/60 + 1/61 = 121/3660; c: 1/62 + 1/60 = 122/3720; b: 1/61; d: 1/62
    assert [h.id for h in hits] == ["a", "c", "b", "d"]
    expected = [121 / 3660, 122 / 3720, 1 / 61, 1 / 62]
    for hit, value in zip(hits, expected, strict=True):
        assert hit.score == pytest.approx(value, rel=1e-15, abs=0)
    assert hits[0].score == pytest.approx(0.03306010928961749, rel=1e-15)


def test_top_hit_of_a_single_run_scores_exactly_one_sixtieth():
    hits = reciprocal_rank_fusion([[("only", 99.0), ("next", 1.0)]])
    assert hits[0].score == 1 / 60
    assert hits[1].score == 1 / 61
    assert rrf_share(0) == 1 / 60


def test_rrf_k_changes_the_constant():
    hits = reciprocal_rank_fusion([BM25], rrf_k=1)
    assert [h.score for h in hits] == [1.0, 0.5, 1 / 3]


def test_contributions_explain_the_score():
    hit = reciprocal_rank_fusion([BM25, SEMANTIC])[1]
    assert hit.id == "c"
    assert hit.contributions == (
        ArmContribution(arm=0, rank=2, raw_score=3.0, share=1 / 62),
        ArmContribution(arm=1, rank=0, raw_score=0.91, share=1 / 60),
    )
    assert hit.arms[1].rank == 0
    assert math.fsum(c.share for c in hit.contributions) == hit.score
    for h in reciprocal_rank_fusion([BM25, SEMANTIC]):
        assert math.fsum(c.share for c in h.contributions) == h.score
    only_semantic = reciprocal_rank_fusion([BM25, SEMANTIC])[3]
    assert only_semantic.id == "d" and set(only_semantic.arms) == {1}


def test_ties_are_broken_by_id():
    first = [("y", 5.0), ("x", 4.0)]
    second = [("x", 0.9), ("y", 0.8)]
    hits = reciprocal_rank_fusion([first, second])
    assert [h.id for h in hits] == ["x", "y"]
    assert hits[0].score == hits[1].score


def test_three_way_tie_is_exact_whatever_the_arm_order():
    # each id holds ranks {0, 1, 2} once: equal sums, whichever order they are added in
    runs = [
        [("z", 0.0), ("x", 0.0), ("y", 0.0)],
        [("y", 0.0), ("z", 0.0), ("x", 0.0)],
        [("x", 0.0), ("y", 0.0), ("z", 0.0)],
    ]
    hits = reciprocal_rank_fusion(runs)
    assert [h.id for h in hits] == ["x", "y", "z"]
    assert len({h.score for h in hits}) == 1


def test_fusion_does_not_depend_on_the_order_of_runs():
    forward = reciprocal_rank_fusion([BM25, SEMANTIC])
    backward = reciprocal_rank_fusion([SEMANTIC, BM25])
    assert [(h.id, h.score) for h in forward] == [(h.id, h.score) for h in backward]


def test_depth_cuts_each_run_before_fusing():
    hits = reciprocal_rank_fusion([BM25, SEMANTIC], depth=2)
    # c is rank 2 in BM25 (cut) and d rank 2 in semantic (cut)
    assert [h.id for h in hits] == ["a", "c", "b"]
    assert hits[1].score == 1 / 60
    assert set(hits[1].arms) == {1}
    assert reciprocal_rank_fusion([BM25, SEMANTIC], depth=0) == []


def test_k_cuts_the_output():
    assert [h.id for h in reciprocal_rank_fusion([BM25, SEMANTIC], k=2)] == ["a", "c"]
    assert reciprocal_rank_fusion([BM25, SEMANTIC], k=0) == []
    assert len(reciprocal_rank_fusion([BM25, SEMANTIC], k=100)) == 4


def test_default_k_is_ten_and_depth_one_hundred():
    run = [(f"t{i:03d}", float(-i)) for i in range(150)]
    hits = reciprocal_rank_fusion([run])
    assert len(hits) == 10
    assert len(reciprocal_rank_fusion([run], k=1000)) == 100


def test_empty_inputs():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


def test_hits_are_frozen():
    hit = reciprocal_rank_fusion([BM25])[0]
    assert isinstance(hit, FusedHit)
    with pytest.raises(AttributeError):
        hit.score = 1.0  # type: ignore[misc]
    assert hash(hit) == hash(reciprocal_rank_fusion([BM25])[0])


@pytest.mark.parametrize(
    ("kwargs", "name", "value"),
    [
        ({"rrf_k": 0}, "rrf_k", "0"),
        ({"rrf_k": -5}, "rrf_k", "-5"),
        ({"rrf_k": 60.5}, "rrf_k", "60.5"),
        ({"depth": -1}, "depth", "-1"),
        ({"k": -1}, "k", "-1"),
        ({"k": True}, "k", "True"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, name, value):
    with pytest.raises(ValueError, match=rf"{name} must be an integer.*{value}"):
        reciprocal_rank_fusion([BM25], **kwargs)


def test_bad_runs_are_rejected_with_the_culprit():
    with pytest.raises(ValueError, match=r"run 1: id 'a' appears more than once"):
        reciprocal_rank_fusion([BM25, [("a", 1.0), ("a", 0.5)]])
    with pytest.raises(ValueError, match=r"id must be a string, got 7"):
        reciprocal_rank_fusion([[(7, 1.0)]])
    with pytest.raises(ValueError, match=r"expected an \(id, score\) pair"):
        reciprocal_rank_fusion([["abc"]])
    with pytest.raises(ValueError, match=r"expected an \(id, score\) pair"):
        reciprocal_rank_fusion([["ab"]])
    with pytest.raises(ValueError, match="run 0 must be a sequence"):
        reciprocal_rank_fusion(["abc"])
    with pytest.raises(ValueError, match="runs must be a sequence"):
        reciprocal_rank_fusion("abc")  # type: ignore[arg-type]
