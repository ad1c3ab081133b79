"""Tests for core.evaluation: metrics on hand-computed fixtures, loading, comparison, CLI,
and the stabletoolbench validation against the reference figures."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from core import evaluation as ev
from core.errors import QueryError, RanklensError
from core.evaluation import (
    Judgment,
    apply_floor,
    compare,
    evaluate,
    hit_at_k,
    load_queries,
    load_run,
    mrr_at_k,
    ndcg_at_k,
    paired_bootstrap,
    parse_config,
    precision_at_k,
    recall_at_k,
    run_queries,
    save_run,
)
from tests.conftest import keys_sorted

HERE = Path(__file__).parent
STB = Path(__file__).resolve().parents[2] / "shared" / "eval" / "stabletoolbench"
LOG3 = math.log2(3)  # discount of rank 2: 1.5849625

# --------------------------------------------------------------------------- fixture
#
# Four judged queries and one run, computed by hand below with ks = (1, 3).
#
#   q1 relevant {a, b}            run: x, a, y, b
#   q2 relevant {c: 2, d: 1}      run: d, c
#   q3 relevant {} (no tool)      run: z (score 1.0)
#   q4 relevant {e}               run: (nothing)

JUDGMENTS = [
    Judgment("q1", {"a": 1.0, "b": 1.0}, "two tools"),
    Judgment("q2", {"c": 2.0, "d": 1.0}, "graded"),
    Judgment("q3", {}, "out of catalog"),
    Judgment("q4", {"e": 1.0}, "missed"),
]
RUN = {
    "q1": [("x", 3.0), ("a", 2.0), ("y", 1.5), ("b", 1.0)],
    "q2": [("d", 5.0), ("c", 4.0)],
    "q3": [("z", 1.0)],
    "q4": [],
}
KS = (1, 3)

# q1: ndcg@3 = (1/log2 3) / (1 + 1/log2 3) = 0.63093 / 1.63093
Q1_NDCG3 = (1 / LOG3) / (1 + 1 / LOG3)
# q2: ranked d (grade 1), c (grade 2); ideal c, d
#     ndcg@1 = 1 / 2 ; ndcg@3 = (1 + 2/log2 3) / (2 + 1/log2 3) = 2.26186 / 2.63093
Q2_NDCG1 = 0.5
Q2_NDCG3 = (1 + 2 / LOG3) / (2 + 1 / LOG3)


def test_q1_is_about_0_387_and_q2_about_0_860():
    # guards the constants above against a typo
    assert abs(Q1_NDCG3 - 0.386853) < 1e-6
    assert abs(Q2_NDCG3 - 0.859719) < 1e-6


# --------------------------------------------------------------------------- metrics


def test_hit_at_k():
    assert hit_at_k(["x", "a"], {"a"}, 1) == 0.0
    assert hit_at_k(["x", "a"], {"a"}, 2) == 1.0
    assert hit_at_k([], {"a"}, 5) == 0.0


def test_recall_at_k():
    # 1 of 2 relevant in the top 3
    assert recall_at_k(["x", "a", "y", "b"], {"a", "b"}, 3) == 0.5
    assert recall_at_k(["x", "a", "y", "b"], {"a", "b"}, 4) == 1.0
    assert recall_at_k(["x"], set(), 3) == 0.0


def test_precision_divides_by_k_even_when_fewer_hits():
    # 2 relevant among 2 returned, but k = 3: 2/3
    assert precision_at_k(["d", "c"], {"c", "d"}, 3) == pytest.approx(2 / 3)
    assert precision_at_k(["x", "a"], {"a"}, 1) == 0.0


def test_mrr_at_k():
    assert mrr_at_k(["x", "a"], {"a"}, 2) == 0.5
    assert mrr_at_k(["x", "a"], {"a"}, 1) == 0.0  # first relevant beyond k
    assert mrr_at_k(["x", "y", "a"], {"a", "x"}, 3) == 1.0


def test_ndcg_binary_uses_ideal_of_min_relevant_k():
    # 3 relevant, k = 2: ideal list has 2 hits: 1 + 1/log2 3
    # run r1, x: dcg = 1  -> 1 / (1 + 1/log2 3) = 0.61315
    assert ndcg_at_k(["r1", "x"], {"r1", "r2", "r3"}, 2) == pytest.approx(1 / (1 + 1 / LOG3))
    assert ndcg_at_k(["r1", "r2"], {"r1", "r2", "r3"}, 2) == pytest.approx(1.0)


def test_ndcg_graded_uses_linear_gain():
    assert ndcg_at_k(["d", "c"], {"c": 2, "d": 1}, 1) == Q2_NDCG1
    assert ndcg_at_k(["d", "c"], {"c": 2, "d": 1}, 3) == pytest.approx(Q2_NDCG3)
    # with 2**g - 1 gains this would be (1 + 3/log2 3)/(3 + 1/log2 3) = 0.7852, not 0.8597
    assert ndcg_at_k(["d", "c"], {"c": 2, "d": 1}, 3) != pytest.approx(0.7852, abs=1e-3)


def test_ndcg_counts_a_repeated_id_once_and_ignores_zero_grades():
    # "a" twice: second copy earns nothing -> dcg 1, idcg 1 + 1/log2 3 (a, b)
    assert ndcg_at_k(["a", "a"], {"a": 1, "b": 1}, 2) == pytest.approx(1 / (1 + 1 / LOG3))
    # grade 0 is "judged not relevant"
    assert ndcg_at_k(["z"], {"z": 0, "a": 1}, 1) == 0.0


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k_is_rejected(k):
    with pytest.raises(QueryError, match="positive integer"):
        hit_at_k(["a"], {"a"}, k)


def test_parse_metric_key():
    assert ev.parse_metric_key("ndcg@10") == ("ndcg", 10)
    assert ev.parse_metric_key("no_tool@floor") == ("no_tool@floor", None)
    with pytest.raises(QueryError, match="valid metrics"):
        ev.parse_metric_key("map@10")
    with pytest.raises(QueryError):
        ev.parse_metric_key("ndcg@0")


# --------------------------------------------------------------------------- evaluate


def test_evaluate_means_over_answerable_queries():
    report = evaluate(RUN, JUDGMENTS, KS)
    m = report.metrics
    # three answerable queries: q1, q2, q4 (q4 scores 0 everywhere)
    assert m["hit@1"] == pytest.approx(1 / 3)  # only q2
    assert m["hit@3"] == pytest.approx(2 / 3)  # q1, q2
    assert m["recall@1"] == pytest.approx((0 + 1 / 2 + 0) / 3)
    assert m["recall@3"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert m["precision@1"] == pytest.approx(1 / 3)
    assert m["precision@3"] == pytest.approx((1 / 3 + 2 / 3 + 0) / 3)
    assert m["mrr@1"] == pytest.approx(1 / 3)
    assert m["mrr@3"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert m["ndcg@1"] == pytest.approx((0 + Q2_NDCG1 + 0) / 3)
    assert m["ndcg@3"] == pytest.approx((Q1_NDCG3 + Q2_NDCG3 + 0) / 3)
    assert report.n_queries == 4 and report.n_answerable == 3 and report.n_no_tool == 1


def test_no_tool_metrics():
    report = evaluate(RUN, JUDGMENTS, KS)
    # q3 returned z: not answered with nothing
    assert report.metrics["no_tool@floor"] == 0.0
    # median rank-1 score of queries right at rank 1 (only q2: 5.0) minus q3's 1.0
    assert report.metrics["no_tool_margin"] == pytest.approx(4.0)
    floored = evaluate(apply_floor(RUN, 1.5), JUDGMENTS, KS)
    assert floored.metrics["no_tool@floor"] == 1.0
    assert floored.metrics["no_tool_margin"] == pytest.approx(5.0)  # 5.0 - 0
    # the floor dropped q1's "b" (1.0 < 1.5), which was at rank 4: @3 unchanged
    assert floored.metrics["ndcg@3"] == pytest.approx(report.metrics["ndcg@3"])


def test_no_tool_keys_absent_without_no_tool_queries():
    report = evaluate(RUN, [j for j in JUDGMENTS if not j.is_no_tool], KS)
    assert "no_tool@floor" not in report.metrics


def test_rows_and_worst():
    report = evaluate(RUN, JUDGMENTS, KS)
    q1 = report.row("q1")
    assert q1.first_rank == 2 and q1.top == ("x", "a", "y") and q1.top_score == 3.0
    assert q1.relevant == ("a", "b") and q1.note == "two tools"
    assert report.row("q4").first_rank is None
    assert report.row("q3").no_tool and report.row("q3").metrics == {}
    # ndcg@3 ascending: q4 (0), q1 (0.387), q2 (0.860); the no-tool q3 is not listed
    assert [r.query for r in report.worst(10)] == ["q4", "q1", "q2"]
    assert [r.query for r in report.worst(1)] == ["q4"]


def test_query_missing_from_run_counts_as_empty():
    report = evaluate({"q2": RUN["q2"]}, JUDGMENTS, KS)
    assert report.row("q1").metrics["hit@3"] == 0.0
    assert report.metrics["no_tool@floor"] == 1.0


def test_report_to_dict_is_json():
    data = json.loads(json.dumps(evaluate(RUN, JUDGMENTS, KS).to_dict(worst=2)))
    assert data["metrics"]["hit@3"] == pytest.approx(2 / 3)
    assert [w["query"] for w in data["worst"]] == ["q4", "q1"]


def test_format_report_lists_metrics_and_worst():
    text = ev.format_report(evaluate(RUN, JUDGMENTS, KS), worst=2)
    assert "ndcg" in text and "0.667" in text  # hit@3
    assert "worst 2 queries" in text and "'q4'" in text and "note: missed" in text


# --------------------------------------------------------------------------- loading


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_queries_list_grades_and_extra(tmp_path):
    path = _write(
        tmp_path,
        [
            '{"query": "refund an order", "relevant": ["refund"], "note": "n1"}',
            "",
            '{"query": "weather on mars", "relevant": [], "source_id": "G1:3"}',
            '{"query": "card declined", "relevant": {"charge": 2, "card": 1}}',
        ],
    )
    a, b, c = load_queries(path)
    assert a == Judgment("refund an order", {"refund": 1.0}, "n1")
    assert b.is_no_tool and b.extra == {"source_id": "G1:3"} and b.note == ""
    assert c.relevant == {"charge": 2.0, "card": 1.0}
    assert c.relevant_ids == {"charge", "card"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a"]', "expected a JSON object"),
        ('{"relevant": ["a"]}', "'query' must be a non-empty string"),
        ('{"query": "x"}', "'relevant' is missing"),
        ('{"query": "x", "relevant": "a"}', "must be a list of ids"),
        ('{"query": "x", "relevant": [3]}', "must be a non-empty string"),
        ('{"query": "x", "relevant": {"a": -1}}', "must be a number >= 0"),
        ('{"query": "x", "relevant": {"a": true}}', "must be a number >= 0"),
        ('{"query": "x", "relevant": [], "note": 5}', "'note' must be a string"),
    ],
)
def test_load_queries_errors_name_file_and_line(tmp_path, line, message):
    path = _write(tmp_path, ['{"query": "ok", "relevant": []}', line])
    with pytest.raises(RanklensError, match=message) as info:
        load_queries(path)
    assert f"{path}:2:" in str(info.value)
    assert "Fix:" in str(info.value)


def test_load_queries_rejects_repeated_query(tmp_path):
    path = _write(
        tmp_path,
        ['{"query": "a", "relevant": ["x"]}', '{"query": "a", "relevant": ["y"]}'],
    )
    with pytest.raises(QueryError, match=r"q.jsonl:2: .*already appears on line 1"):
        load_queries(path)


def test_load_queries_missing_and_empty(tmp_path):
    with pytest.raises(QueryError, match="not found"):
        load_queries(tmp_path / "nope.jsonl")
    with pytest.raises(QueryError, match="empty"):
        load_queries(_write(tmp_path, [""]))


def test_run_roundtrip(tmp_path):
    path = tmp_path / "run.json"
    save_run(RUN, path, method="bm25")
    assert load_run(path) == RUN
    assert json.loads(path.read_text())["meta"] == {"method": "bm25"}
    bare = tmp_path / "bare.json"
    bare.write_text('{"q": [["a", 1]]}')
    assert load_run(bare) == {"q": [("a", 1.0)]}
    bare.write_text('{"q": [["a"]]}')
    with pytest.raises(QueryError, match="pairs"):
        load_run(bare)


# --------------------------------------------------------------------------- compare

BETTER_RUN = {
    "q1": [("a", 9.0), ("b", 8.0)],  # ndcg@3 0.387 -> 1, rank 2 -> 1
    "q2": [("d", 5.0), ("c", 4.0)],  # unchanged
    "q3": [],  # no-tool query now answered with nothing
    "q4": [("e", 1.0)],  # ndcg@3 0 -> 1, rank - -> 1
}


def test_paired_bootstrap_constant_and_deterministic():
    # every paired difference is 0.25: the interval collapses onto it
    assert paired_bootstrap([0, 0.5], [0.25, 0.75]) == pytest.approx((0.25, 0.25, 0.25))
    one = paired_bootstrap([0, 0, 0, 0], [1, 0, 0, 1], n_boot=200, seed=3)
    assert one == paired_bootstrap([0, 0, 0, 0], [1, 0, 0, 1], n_boot=200, seed=3)
    delta, low, high = one
    assert delta == 0.5 and 0.0 <= low < 0.5 < high <= 1.0
    with pytest.raises(QueryError):
        paired_bootstrap([1], [1, 2])


def test_compare_deltas_and_query_changes():
    cmp = compare({"old": RUN, "new": BETTER_RUN}, JUDGMENTS, ["ndcg@3", "hit@1", "no_tool@floor"],
                  n_boot=500, seed=0, ks=KS)
    assert cmp.baseline == "old" and cmp.configs == ("old", "new")
    d = cmp.delta("new", "ndcg@3")
    # per-query differences: q1 1 - 0.38685, q2 0, q4 1 -> mean 0.53772
    assert d.delta == pytest.approx((1 - Q1_NDCG3 + 0 + 1) / 3)
    assert d.baseline == pytest.approx((Q1_NDCG3 + Q2_NDCG3) / 3)
    assert d.value == pytest.approx((1 + Q2_NDCG3 + 1) / 3)
    assert 0.0 <= d.ci_low <= d.delta <= d.ci_high <= 1.0 and d.n == 3
    # hit@1: q1 and q4 now hit at rank 1: +2/3
    assert cmp.delta("new", "hit@1").delta == pytest.approx(2 / 3)
    # no-tool: the single no-tool query went from answered to empty
    nt = cmp.delta("new", "no_tool@floor")
    assert (nt.delta, nt.ci_low, nt.ci_high, nt.n) == (1.0, 1.0, 1.0, 1)
    better = {c.query: (c.baseline_rank, c.rank) for c in cmp.better["new"]}
    assert better == {"q1": (2, 1), "q4": (None, 1), "q3": (None, None)}
    # ties in |delta| (q3 and q4 both +1) are broken by query text
    assert [c.query for c in cmp.better["new"]] == ["q3", "q4", "q1"]
    assert cmp.worse["new"] == ()
    # and the reverse direction swaps better and worse
    back = compare({"new": BETTER_RUN, "old": RUN}, JUDGMENTS, ["ndcg@3"], ks=KS)
    assert {c.query for c in back.worse["old"]} == {"q1", "q3", "q4"}
    assert back.delta("old", "ndcg@3").delta == pytest.approx(-d.delta)


def test_compare_is_seeded():
    a = compare({"a": RUN, "b": BETTER_RUN}, JUDGMENTS, ["ndcg@3"], n_boot=300, seed=7, ks=KS)
    b = compare({"a": RUN, "b": BETTER_RUN}, JUDGMENTS, ["ndcg@3"], n_boot=300, seed=7, ks=KS)
    assert a.deltas == b.deltas
    assert json.loads(json.dumps(a.to_dict()))["deltas"][0]["metric"] == "ndcg@3"


def test_compare_accepts_reports_and_checks_inputs():
    rep = evaluate(RUN, JUDGMENTS, KS)
    cmp = compare({"a": rep, "b": BETTER_RUN}, JUDGMENTS, ["mrr@3"], ks=KS)
    # mrr@3: q1 0.5 -> 1, q4 0 -> 1: +1.5/3
    assert cmp.delta("b", "mrr@3").delta == pytest.approx(0.5)
    with pytest.raises(QueryError, match="at least two"):
        compare({"a": RUN}, JUDGMENTS)
    with pytest.raises(QueryError, match="valid metrics"):
        compare({"a": RUN, "b": RUN}, JUDGMENTS, ["bogus"])
    with pytest.raises(QueryError, match="same ks"):
        compare({"a": rep, "b": evaluate(RUN, JUDGMENTS, (1, 10))}, JUDGMENTS, ks=KS)
    with pytest.raises(QueryError, match="lacks"):
        compare({"a": evaluate(RUN, JUDGMENTS[:1], KS), "b": RUN}, JUDGMENTS, ks=KS)


def test_format_comparison():
    cmp = compare({"old": RUN, "new": BETTER_RUN}, JUDGMENTS, ["ndcg@3"], ks=KS)
    text = ev.format_comparison(cmp)
    assert "new vs old" in text and "better: 3 queries" in text and "worse: 0 queries" in text
    assert "rank 2 -> 1" in text and "rank - -> 1" in text and "now answered with nothing" in text


def test_parse_config():
    assert parse_config("bm25:cat.json") == ev.ConfigSpec("bm25:cat.json", "bm25", "cat.json")
    assert parse_config("v2=hybrid@0.5:a/b.json") == ev.ConfigSpec("v2", "hybrid", "a/b.json", 0.5)
    assert parse_config("cat.json", "semantic") == ev.ConfigSpec("semantic:cat.json", "semantic",
                                                                 "cat.json")
    assert parse_config("run:r.json").method == "run"
    with pytest.raises(QueryError, match="not a number"):
        parse_config("bm25@high:c.json")


def test_fail_under_parsing_and_check():
    assert ev.parse_fail_under(["ndcg@10=0.8", "hit@1 = 0.5"]) == {"ndcg@10": 0.8, "hit@1": 0.5}
    for bad in ("ndcg@10", "ndcg@10=high", "nope@3=1"):
        with pytest.raises(QueryError):
            ev.parse_fail_under([bad])
    assert ev.check_thresholds({"ndcg@10": 0.7}, {"ndcg@10": 0.8}) == [
        "ndcg@10 = 0.7000 is below 0.8"
    ]
    assert ev.check_thresholds({"ndcg@10": 0.8}, {"ndcg@10": 0.8}) == []
    with pytest.raises(QueryError, match="not computed"):
        ev.check_thresholds({"ndcg@10": 0.8}, {"ndcg@20": 0.5})


# --------------------------------------------------------------------------- run_queries with a fake catalog


@dataclass(frozen=True)
class FakeHit:
    id: str
    score: float
    rank: int


class FakeCatalog:
    """Deterministic: ranks ids by how many of the query's words they contain."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.docs = docs
        self.calls: list[tuple[str, int, str]] = []

    def _rank(self, query: str, top_k: int) -> list[FakeHit]:
        words = query.split()
        scored = [(sum(w in text.split() for w in words), i) for i, text in self.docs.items()]
        scored = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:top_k]
        return [FakeHit(i, float(s), r) for r, (s, i) in enumerate(scored)]

    def search(self, query: str, top_k: int = 10) -> list[FakeHit]:
        self.calls.append((query, top_k, "bm25"))
        return self._rank(query, top_k)

    def search_with(self, query: str, top_k: int = 10, method: str | None = None):
        self.calls.append((query, top_k, method or "bm25"))
        return self._rank(query, top_k)


DOCS = {"refund": "refund an order payment", "card": "update card payment", "ship": "track order"}


def test_run_queries_sync_and_async():
    cat = FakeCatalog(DOCS)
    js = [Judgment("refund order", {"refund": 1}), Judgment("payment card", {"card": 1})]
    run = run_queries(cat, js, top_k=2)
    assert run == {
        "refund order": [("refund", 2.0), ("ship", 1.0)],
        "payment card": [("card", 2.0), ("refund", 1.0)],
    }
    assert cat.calls == [("refund order", 2, "bm25"), ("payment card", 2, "bm25")]
    cat.calls.clear()
    assert run_queries(cat, js, top_k=2, method="hybrid") == run
    assert cat.calls == [("refund order", 2, "hybrid"), ("payment card", 2, "hybrid")]
    with pytest.raises(QueryError, match="valid methods"):
        run_queries(cat, js, method="magic")


# --------------------------------------------------------------------------- CLI


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ranklens")
    ev.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def fake_loader(monkeypatch):
    """Replace catalog loading by the fake: 'good' knows payment; 'bad' ranks ship first."""
    bad = {"refund": "refund", "card": "card", "ship": "track order payment refund card"}

    def load(path, method="bm25", skills=None, **options):
        return FakeCatalog(DOCS if Path(str(path)).stem == "good" else bad)

    monkeypatch.setattr(ev, "load_search_catalog", load)


@pytest.fixture
def qfile(tmp_path) -> Path:
    return _write(
        tmp_path,
        [
            '{"query": "refund order", "relevant": ["refund"], "note": "n"}',
            '{"query": "payment card", "relevant": ["card"]}',
            '{"query": "weather", "relevant": []}',
        ],
    )


def test_cli_eval_table_json_run_out(fake_loader, qfile, tmp_path, capsys):
    assert _cli(["eval", "good.json", str(qfile)]) == 0
    out = capsys.readouterr().out
    assert "hit" in out and "1.000" in out and "no_tool@floor" in out
    run_out = tmp_path / "run.json"
    assert _cli(["eval", "bad.json", str(qfile), "--json", "--run-out", str(run_out)]) == 0
    data = json.loads(capsys.readouterr().out)
    # bad: ship ranks first for both queries, the right tool second: mrr@10 = 0.5
    assert data["metrics"]["mrr@10"] == 0.5 and data["metrics"]["hit@1"] == 0.0
    assert data["failures"] == [] and data["config"]["method"] == "bm25"
    assert load_run(run_out)["refund order"][0][0] == "ship"


def test_cli_eval_fail_under(fake_loader, qfile, capsys):
    assert _cli(["eval", "bad.json", str(qfile), "--fail-under", "hit@1=0.5",
                 "--fail-under", "hit@5=0.5"]) == 1
    err = capsys.readouterr().err
    assert "FAIL: hit@1 = 0.0000 is below 0.5" in err and "hit@5" not in err
    assert _cli(["eval", "good.json", str(qfile), "--fail-under", "ndcg@10=0.99"]) == 0


def test_cli_eval_input_errors_exit_2(fake_loader, qfile, tmp_path, capsys):
    assert _cli(["eval", "good.json", str(tmp_path / "missing.jsonl")]) == 2
    assert "not found" in capsys.readouterr().err
    assert _cli(["eval", "good.json", str(qfile), "--fail-under", "ndcg10=1"]) == 2
    assert "error:" in capsys.readouterr().err
    assert _cli(["eval", "good.json", str(qfile), "--top-k", "0"]) == 2
    with pytest.raises(SystemExit) as info:
        _cli(["eval", "good.json", str(qfile), "--method", "magic"])
    assert info.value.code == 2


def test_cli_compare(fake_loader, qfile, tmp_path, capsys):
    assert _cli(["compare", str(qfile), "bad.json", "good.json"]) == 0
    out = capsys.readouterr().out
    assert "bm25:good.json vs bm25:bad.json" in out and "rank 2 -> 1" in out
    assert _cli(["compare", str(qfile), "--config", "old=bm25:bad.json",
                 "--config", "new=hybrid@1.5:good.json", "--json", "--n-boot", "50"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["configs"] == ["old", "new"]
    hit1 = next(d for d in data["deltas"] if d["metric"] == "hit@1")
    assert hit1["delta"] == 1.0
    # the floor 1.5 leaves the no-tool query empty (the fake returns nothing for it anyway)
    assert data["metrics"]["new"]["no_tool@floor"] == 1.0


def test_cli_compare_saved_run_and_errors(fake_loader, qfile, tmp_path, capsys):
    run_out = tmp_path / "r.json"
    assert _cli(["eval", "bad.json", str(qfile), "--run-out", str(run_out)]) == 0
    capsys.readouterr()
    assert _cli(["compare", str(qfile), f"run:{run_out}", "good.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["baseline"] == f"run:{run_out}"
    assert _cli(["compare", str(qfile), "good.json"]) == 2
    assert "at least two" in capsys.readouterr().err
    assert _cli(["compare", str(qfile), "good.json", "good.json"]) == 2
    assert "named" in capsys.readouterr().err


# --------------------------------------------------------------------------- real catalog


def test_cli_eval_on_a_real_catalog_file(tmp_path, capsys):
    pytest.importorskip("core.search", reason="core.search (the lead's facade) not written yet")
    cat = tmp_path / "cat.json"
    cat.write_text(
        json.dumps(
            {
                "tools": [
                    {"id": "refund_order", "name": "refund_order",
                     "description": "Refund a customer's order. Use when a customer asks for money back."},
                    {"id": "track_shipment", "name": "track_shipment",
                     "description": "Where a parcel is now. Use when a customer asks where an order is."},
                ]
            }
        )
    )
    q = _write(tmp_path, ['{"query": "money back please", "relevant": ["refund_order"]}'])
    assert _cli(["eval", str(cat), str(q), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["hit@1"] == 1.0


# --------------------------------------------------------------------------- stabletoolbench

# README "reference engine BM25 (ratel-ai 0.12.0)" row, top 10, binary relevance.
README_ROW = {"hit@1": 0.620, "hit@5": 0.924, "recall@5": 0.662, "mrr@10": 0.749, "ndcg@10": 0.670}
# The figures to 4 decimals, the same from the reference engine and from ours. mrr@10 is
# 0.748487 (255.982 / 342): it rounds to 0.748, and to the README's 0.749 only by way of
# 0.7485, so the README row looks rounded twice. Metric conventions cannot explain the gap:
# the first relevant rank of every query is the engine's, and resolving score ties
# optimistically would give mrr@10 0.7490 but recall@5 0.664. So the exact figures are
# pinned here and the README row is matched within one unit of its 3rd decimal (< 0.001).
OUR_ROW = {"hit@1": 0.6199, "hit@5": 0.9240, "recall@5": 0.6623, "mrr@10": 0.7485, "ndcg@10": 0.6697}


def _stb():
    if not (STB / "catalog.json").is_file() or not (STB / "queries.jsonl").is_file():
        pytest.skip(f"stabletoolbench data not found at {STB} (it lives in ../shared/eval/, "
                    "outside the repository)")
    return json.loads((STB / "catalog.json").read_text(encoding="utf-8")), load_queries(
        STB / "queries.jsonl"
    )


def _check_row(metrics: dict[str, float]) -> None:
    for key, value in README_ROW.items():
        assert abs(metrics[key] - value) < 1e-3, (key, metrics[key], value)
        assert round(metrics[key], 4) == OUR_ROW[key], (key, metrics[key])


def _our_run(items, judgments):
    search = pytest.importorskip("core.search", reason="core.search (the lead's facade) is missing")
    from core.catalog import Tool

    tools = [
        Tool(id=t["name"], name=t["name"], description=t.get("description") or "",
             input_schema=t.get("input_schema") or {}, output_schema=t.get("output_schema") or {})
        for t in items
    ]
    return run_queries(search.ToolCatalog(tools), judgments, 10)


def test_stabletoolbench_metrics_with_our_engine():
    items, judgments = _stb()
    report = evaluate(_our_run(items, judgments), judgments)
    assert report.n_queries == 342 and report.n_no_tool == 0
    _check_row(report.metrics)


@pytest.mark.oracle
def test_stabletoolbench_metrics_with_reference_engine():
    ratel_ai = pytest.importorskip("ratel_ai", reason="the oracle ratel-ai==0.12.0 is not installed")
    items, judgments = _stb()
    reg = ratel_ai.ToolRegistry()
    asyncio.run(reg.register([
        ratel_ai.Tool(id=t["name"], name=t["name"], description=t.get("description") or "",
                      input_schema=t.get("input_schema") or {},
                      output_schema=t.get("output_schema") or {})
        for t in items
    ]))
    run = {j.query: [(h.tool_id, h.score) for h in reg.search(j.query, 10)] for j in judgments}
    _check_row(evaluate(run, judgments).metrics)
    # Our engine returns the same ranked ids for every query but one: in the restaurant
    # query the reference engine gives the term 'moder' (moderate) df 2 instead of 1, a 32-bit
    # term-hash collision (engine-contract.md: an artefact not to reproduce), which moves
    # 'Bing Web Search_v2::Web Search' from rank 9 to 10 there. Ranks 9-10 leave every
    # figure above unchanged.
    ours = _our_run(items, judgments)
    differ = [q for q in run if [i for i, _ in run[q]] != [i for i, _ in ours[q]]]
    assert len(differ) <= 1, differ[:3]
    assert all(q.startswith("Could you assist me in finding a restaurant") for q in differ)


def test_stabletoolbench_loads_with_load_catalog():
    pytest.importorskip("core.search", reason="core.search (the lead's facade) is missing")
    items, _ = _stb()
    catalog = ev.load_search_catalog(STB / "catalog.json")
    assert len(catalog) == len(items) == 965


# --------------------------------------------------------------------------- compare as a regression gate


def test_cli_compare_fail_under_delta(fake_loader, qfile, capsys):
    # good -> bad: both answerable queries lose rank 1 (hit@1 delta -1, mrr@10 delta -0.5)
    assert _cli(["compare", str(qfile), "good.json", "bad.json", "--fail-under", "hit@1=-0.01",
                 "--fail-under", "ndcg@10=-0.9"]) == 1
    captured = capsys.readouterr()
    assert "bm25:good.json" in captured.out  # the table is printed before the verdict
    fails = [line for line in captured.err.splitlines() if "FAIL" in line]
    assert fails == ["ranklens compare: FAIL: hit@1 delta of bm25:bad.json vs bm25:good.json "
                     "= -1.0000 is below -0.01"]
    # the improvement passes the same gate
    assert _cli(["compare", str(qfile), "bad.json", "good.json", "--fail-under", "hit@1=-0.01"]) == 0
    assert "FAIL" not in capsys.readouterr().err


def test_cli_compare_fail_under_names_every_failing_config(fake_loader, qfile, capsys):
    assert _cli(["compare", str(qfile), "--config", "a=bm25:good.json", "--config", "b=bm25:bad.json",
                 "--config", "c=bm25:good.json", "--fail-under", "mrr@10=0", "--json",
                 "--n-boot", "50"]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert keys_sorted(data)
    assert data["failures"] == ["mrr@10 delta of b vs a = -0.5000 is below 0"]
    assert "FAIL: mrr@10 delta of b vs a" in captured.err and " c vs a" not in captured.err


def test_cli_compare_fail_under_adds_a_metric_left_out_of_the_comparison(fake_loader, qfile, capsys):
    # recall@1 is computed (k = 1) but not among the default compared metrics
    assert _cli(["compare", str(qfile), "good.json", "bad.json", "--fail-under", "recall@1=-0.5"]) == 1
    captured = capsys.readouterr()
    assert "recall@1" in captured.out and "FAIL: recall@1 delta" in captured.err
    assert _cli(["compare", str(qfile), "good.json", "bad.json", "--metrics", "hit@5",
                 "--fail-under", "hit@10=0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["metric"] for d in data["deltas"]] == ["hit@5", "hit@10"] and data["failures"] == []


def test_cli_compare_fail_on_regression(fake_loader, qfile, capsys):
    assert _cli(["compare", str(qfile), "good.json", "bad.json", "--fail-on-regression"]) == 1
    err = capsys.readouterr().err
    # every answerable query got worse on hit@1, so the whole interval is below 0
    assert ("FAIL: hit@1 of bm25:bad.json regressed vs bm25:good.json: delta -1.0000, "
            "95% CI [-1.0000, -1.0000] lies below 0") in err
    assert "hit@5" not in err  # unchanged metrics do not fail
    assert _cli(["compare", str(qfile), "bad.json", "good.json", "--fail-on-regression"]) == 0
    assert _cli(["compare", str(qfile), "good.json", "copy/good.json", "--fail-on-regression"]) == 0


def test_cli_compare_gate_input_errors_exit_2(fake_loader, qfile, capsys):
    for spec, message in (("hit@1", "write METRIC=VALUE, e.g. ndcg@10=-0.01"),
                          ("hit@1=abc", "is not a number"),
                          ("hit@1=nan", "must be finite"),
                          ("ndcg10=0", "unknown metric"),
                          ("ndcg@20=0", "not computed")):
        assert _cli(["compare", str(qfile), "good.json", "bad.json", "--fail-under", spec]) == 2, spec
        assert message in capsys.readouterr().err, spec


def test_check_deltas_on_a_comparison():
    base = {"q1": [("a", 1.0)], "q2": [("c", 1.0)], "q4": [("e", 1.0)]}
    worse = {"q1": [("x", 1.0), ("a", 0.5)], "q2": [("c", 1.0)], "q4": []}
    judgments = [JUDGMENTS[0], JUDGMENTS[1], JUDGMENTS[3]]
    comparison = compare({"base": base, "new": worse}, judgments, ["hit@1", "mrr@10"], n_boot=0)
    assert ev.check_deltas(comparison, {}) == []
    assert ev.check_deltas(comparison, {"hit@1": -1.0}) == []
    assert ev.check_deltas(comparison, {"hit@1": -0.5}) == [
        "hit@1 delta of new vs base = -0.6667 is below -0.5"
    ]
    # n_boot=0: the interval is the point delta, so any drop lies below 0
    assert [f.split(":")[0] for f in ev.check_deltas(comparison, {}, fail_on_regression=True)] == [
        "hit@1 of new regressed vs base", "mrr@10 of new regressed vs base"
    ]
    with pytest.raises(QueryError, match="not compared; compared metrics: hit@1, mrr@10"):
        ev.check_deltas(comparison, {"ndcg@10": 0})


def test_cli_eval_json_keys_are_sorted(fake_loader, qfile, capsys):
    assert _cli(["eval", "bad.json", str(qfile), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert keys_sorted(data) and list(data)[:2] == ["answerable", "config"]


# --------------------------------------------------------------------------- progress


def test_run_queries_reports_progress():
    calls: list[tuple[int, int]] = []
    js = [Judgment("refund order", {"refund": 1}), Judgment("payment card", {"card": 1}),
          Judgment("track order", {"ship": 1})]
    run_queries(FakeCatalog(DOCS), js, top_k=2, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_run_queries_parallel_one_job_reports_both_progresses(monkeypatch):
    seen: dict[str, object] = {}

    def load(path, method="bm25", skills=None, progress=None, **options):
        seen["embed_progress"] = progress
        return FakeCatalog(DOCS)

    monkeypatch.setattr(ev, "load_search_catalog", load)
    calls: list[tuple[int, int]] = []

    def embed(done: int, total: int) -> None:
        pass

    run = ev.run_queries_parallel("good.json", ["refund order", "payment card"], 2, jobs=1,
                                  progress=lambda d, t: calls.append((d, t)), embed_progress=embed)
    assert list(run) == ["refund order", "payment card"]
    assert calls == [(1, 2), (2, 2)] and seen["embed_progress"] is embed


def test_run_queries_parallel_workers_report_progress(tmp_path):
    pytest.importorskip("core.search", reason="core.search (the lead's facade) is missing")
    cat = tmp_path / "cat.json"
    cat.write_text(json.dumps({"tools": [
        {"id": "refund_order", "name": "refund_order", "description": "Refund a customer's order."},
        {"id": "track_shipment", "name": "track_shipment", "description": "Where a parcel is now."},
    ]}))
    queries = ["refund my order", "where is my parcel", "refund the parcel", "order status"]
    calls: list[tuple[int, int]] = []
    run = ev.run_queries_parallel(cat, queries, 5, jobs=2, progress=lambda d, t: calls.append((d, t)))
    assert list(run) == queries
    assert calls == [(1, 4), (2, 4), (4, 4)]  # this process's two queries, then the worker's two


def test_load_search_catalog_passes_the_embedding_progress(monkeypatch, tmp_path):
    pytest.importorskip("core.search", reason="core.search (the lead's facade) is missing")
    import core.search as search

    seen = []

    class Recording(search.ToolCatalog):
        def __init__(self, tools, **options):
            seen.append(options)
            super().__init__(tools, **options)

    monkeypatch.setattr(search, "ToolCatalog", Recording)
    cat = tmp_path / "cat.json"
    cat.write_text(json.dumps({"tools": [{"id": "a", "name": "a", "description": "Alpha."}]}))
    progress = lambda d, t: None  # noqa: E731
    ev.load_search_catalog(cat, progress=progress)
    ev.load_search_catalog(cat)
    assert seen[0]["progress"] is progress and "progress" not in seen[1]


class _Terminal:
    """A stand-in stderr that says it is a terminal."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_cli_progress_bar_only_on_a_terminal(fake_loader, qfile, capsys, monkeypatch):
    assert _cli(["eval", "good.json", str(qfile)]) == 0
    assert _cli(["compare", str(qfile), "good.json", "bad.json"]) == 0
    assert capsys.readouterr().err == ""  # stderr is not a terminal under capsys
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert _cli(["eval", "good.json", str(qfile)]) == 0
    assert "ranking" in terminal.text and "3/3" in terminal.text
    terminal.text = ""
    assert _cli(["compare", str(qfile), "good.json", "bad.json"]) == 0
    assert "ranking bm25:good.json" in terminal.text and "ranking bm25:bad.json" in terminal.text


# --------------------------------------------------------------------------- bench/quality.py


def _bench_quality():
    import importlib.util

    path = HERE.parent / "bench" / "quality.py"
    spec = importlib.util.spec_from_file_location("bench_quality", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_quality_runs_all_three_methods_by_default(monkeypatch, tmp_path, capsys):
    quality = _bench_quality()
    (tmp_path / "catalog.json").write_text("[]")
    asked = []

    def measure(methods, data, model=None):
        asked.append(methods)
        return [{"method": m, "metrics": dict.fromkeys(quality.KEYS, 0.5), "build_s": 0.0,
                 "search_s": 0.0, "queries": 1} for m in methods]

    monkeypatch.setattr(quality, "measure", measure)
    assert quality.main(["--data", str(tmp_path)]) == 0
    assert quality.main(["--data", str(tmp_path), "--methods", "bm25"]) == 0
    assert asked == [["bm25", "semantic", "hybrid"], ["bm25"]]
    assert "ranklens hybrid" in capsys.readouterr().out


# --------------------------------------------------------------------------- judged ids vs the catalog


def _real_catalog(tmp_path: Path, skills: bool = False) -> Path:
    cat = tmp_path / "cat.json"
    data: dict = {"tools": [
        {"id": "refund_order", "name": "refund_order",
         "description": "Refund a customer's order. Use when a customer asks for money back."},
        {"id": "track_shipment", "name": "track_shipment",
         "description": "Where a parcel is now. Use when a customer asks where an order is."},
        {"id": "cancel_order", "name": "cancel_order",
         "description": "Cancel an order before it ships. Use when a customer changes their mind."},
    ]}
    if skills:
        data["skills"] = [{"name": "returns-policy", "description": "How returns work."}]
    cat.write_text(json.dumps(data))
    return cat


def test_unknown_relevant_ids_and_their_message():
    judgments = ev.parse_queries_text(
        '{"query": "money back", "relevant": ["refund_ordr"]}\n'
        '{"query": "where is it", "relevant": {"track_shipment": 1, "nope": 0}}\n'
        '{"query": "refund again", "relevant": ["refund_ordr"]}\n'
        '{"query": "nothing fits", "relevant": []}\n'
        '{"query": "stop it", "relevant": ["cancel_order", "refund_order"]}\n', "q.jsonl")
    known = {"refund_order", "track_shipment", "cancel_order"}
    unknown = ev.unknown_relevant_ids(judgments, known)
    # every judged id counts, grade 0 included; only queries with an unknown id appear
    assert unknown == {"money back": ["refund_ordr"], "where is it": ["nope"],
                       "refund again": ["refund_ordr"]}
    assert ev.unknown_relevant_ids(judgments, known | {"refund_ordr", "nope"}) == {}
    message = ev.describe_unknown(unknown, known, judgments, source="q.jsonl")
    assert message.startswith("the query set does not match this catalog: 2 judged tool ids are not in it\n")
    assert "  q.jsonl:1 (also line 3): unknown tool 'refund_ordr' (did you mean 'refund_order'?)\n" in message
    assert "  q.jsonl:2: unknown tool 'nope'\n" in message
    single = {"money back": ["refund_ordr"]}
    assert ev.describe_unknown(single, known, judgments, source="q.jsonl", catalog="cat.json") == (
        "q.jsonl:1: unknown tool 'refund_ordr' (did you mean 'refund_order'?) — the query set "
        "does not match cat.json. Fix: correct the ids (a catalog's ids are in its file and in "
        "the output of `ranklens search CATALOG QUERY`), or pass the query set written for this catalog")
    # judgments built in code have no line: the query is named instead
    built = [Judgment("money back", {"refund_ordr": 1.0}), Judgment("x", {"refund_order": 1.0}),
             Judgment("y", {"track_shipment": 1.0})]
    assert ev.describe_unknown(ev.unknown_relevant_ids(built, known), known, built).startswith(
        "query 'money back': unknown tool 'refund_ordr' (did you mean 'refund_order'?)")
    assert ev.describe_unknown({}, known) == ""
    with pytest.raises(QueryError, match="does not match"):
        ev.check_judgments(judgments, known, source="q.jsonl")
    ev.check_judgments(judgments[3:], known)  # nothing unknown there


def test_a_query_set_for_another_catalog_is_called_that():
    judgments = [Judgment(f"q{i}", {f"other_{i}": 1.0}) for i in range(4)] + [
        Judgment("q9", {"refund_order": 1.0})]
    message = ev.describe_unknown(ev.unknown_relevant_ids(judgments, {"refund_order"}),
                                  {"refund_order"}, judgments, source="q.jsonl", catalog="cat.json")
    assert message.startswith("q.jsonl: 4 of 5 judged tool ids are not in cat.json (e.g. "
                              "'other_0', 'other_1', 'other_2', …): the query set is probably for "
                              "another catalog.")


def test_cli_eval_and_compare_refuse_unknown_judged_ids(tmp_path, capsys):
    cat = _real_catalog(tmp_path)
    q = _write(tmp_path, ['{"query": "money back please", "relevant": ["refund_order"]}',
                          '{"query": "where is my parcel", "relevant": ["track_shipment"]}',
                          '{"query": "stop my order", "relevant": ["cancel_ordr"]}'])
    assert _cli(["eval", str(cat), str(q)]) == 2
    err = capsys.readouterr().err
    assert (f"ranklens eval: error: {q}:3: unknown tool 'cancel_ordr' (did you mean "
            f"'cancel_order'?) — the query set does not match {cat}") in err
    assert _cli(["compare", str(q), str(cat), str(cat) + "x"]) == 2  # checked before the 2nd
    assert f"{q}:3: unknown tool 'cancel_ordr'" in capsys.readouterr().err
    assert _cli(["eval", str(cat), str(q), "--jobs", "2"]) == 2


def test_cli_eval_skills_on_a_catalog_without_skills(tmp_path, capsys):
    cat = _real_catalog(tmp_path)
    q = _write(tmp_path, ['{"query": "money back please", "relevant": ["refund_order"]}'])
    assert _cli(["eval", str(cat), str(q), "--skills"]) == 2
    assert f"{cat} has no skills, so --skills has nothing to rank. Fix: drop --skills to rank its 3 tools" in (
        capsys.readouterr().err)
    # a query set naming the catalog's skills, ranked as tools: the hint says --skills
    cat = _real_catalog(tmp_path, skills=True)
    q = _write(tmp_path, ['{"query": "how do returns work", "relevant": ["returns-policy"]}'])
    assert _cli(["eval", str(cat), str(q)]) == 2
    assert "Those ids are the catalog's skills: pass --skills." in capsys.readouterr().err
    assert _cli(["eval", str(cat), str(q), "--skills"]) == 0


def test_cli_eval_refuses_an_empty_catalog(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    q = _write(tmp_path, ['{"query": "x", "relevant": []}'])
    assert _cli(["eval", str(empty), str(q)]) == 2
    assert f"{empty} has no tools or skills" in capsys.readouterr().err


def test_parse_config_checks_the_method_first(tmp_path, monkeypatch):
    with pytest.raises(QueryError) as info:
        parse_config("bm52:cat.json")
    assert str(info.value) == ("unknown method 'bm52' in --config 'bm52:cat.json'; valid: bm25, "
                               "semantic, hybrid, run")
    with pytest.raises(QueryError, match="unknown method 'hybird'"):
        parse_config("v2=hybird@0.5:cat.json")
    # a file whose name holds a colon is still a path; so is a drive letter
    monkeypatch.chdir(tmp_path)
    (tmp_path / "v1:cat.json").write_text("[]")
    assert parse_config("v1:cat.json") == ev.ConfigSpec("bm25:v1:cat.json", "bm25", "v1:cat.json")
    assert parse_config("C:/cat.json").source == "C:/cat.json"


def test_cli_compare_unknown_method_exits_2(fake_loader, qfile, capsys):
    assert _cli(["compare", str(qfile), "--config", "bm52:good.json", "--config", "bm25:bad.json"]) == 2
    assert "unknown method 'bm52' in --config 'bm52:good.json'; valid: bm25, semantic, hybrid, run" in (
        capsys.readouterr().err)


# --------------------------------------------------------------------------- score-scale metrics


def test_no_tool_margin_has_no_delta_across_methods():
    other = {**RUN, "q3": [("z", 0.2)]}
    cmp = compare({"a": RUN, "b": other}, JUDGMENTS, ["hit@1", "no_tool_margin"], ks=KS,
                  methods={"a": "bm25", "b": "hybrid"})
    d = cmp.delta("b", "no_tool_margin")
    assert (d.delta, d.ci_low, d.ci_high, d.significant, d.comparable) == (None, None, None, False, False)
    assert d.note == "different score scales" and d.value != d.baseline
    assert d.to_dict()["delta"] is None and d.to_dict()["note"] == "different score scales"
    assert cmp.delta("b", "hit@1").delta == 0.0  # rank-based metrics are still compared
    assert "no_tool_margin     4.000    4.800      n/a  (different score scales)" in ev.format_comparison(cmp)
    # never gating, whatever the threshold
    assert ev.check_deltas(cmp, {"no_tool_margin": 100.0}, fail_on_regression=True) == []
    # same method: compared as before (and gated)
    same = compare({"a": RUN, "b": other}, JUDGMENTS, ["no_tool_margin"], ks=KS, n_boot=0,
                   methods={"a": "bm25", "b": "bm25"})
    assert same.delta("b", "no_tool_margin").delta == pytest.approx(0.8)
    assert ev.check_deltas(same, {"no_tool_margin": 1.0}) != []
    # a method not known (a bare run file) is not assumed to match
    unknown = compare({"a": RUN, "b": other}, JUDGMENTS, ["no_tool_margin"], ks=KS,
                      methods={"a": "bm25", "b": None})
    assert unknown.delta("b", "no_tool_margin").note == "unknown score scale"
    # without methods every delta is computed (the caller vouches for the scales)
    assert compare({"a": RUN, "b": other}, JUDGMENTS, ["no_tool_margin"], ks=KS).delta(
        "b", "no_tool_margin").delta == pytest.approx(0.8)
    assert ev.SCORE_SCALE_METRICS == ("no_tool_margin",)


def test_cli_compare_marks_no_tool_margin_across_methods(fake_loader, qfile, tmp_path, capsys):
    assert _cli(["compare", str(qfile), "--config", "bm25:bad.json", "--config", "hybrid:good.json",
                 "--json", "--fail-on-regression", "--fail-under", "no_tool_margin=5"]) == 0
    data = json.loads(capsys.readouterr().out)
    margin = next(d for d in data["deltas"] if d["metric"] == "no_tool_margin")
    assert margin["delta"] is None and margin["ci_low"] is None and margin["significant"] is False
    assert margin["note"] == "different score scales" and data["failures"] == []
    # a saved run carries its method: bm25 vs a bm25 run is compared
    run_out = tmp_path / "r.json"
    assert _cli(["eval", "bad.json", str(qfile), "--run-out", str(run_out)]) == 0
    capsys.readouterr()
    assert _cli(["compare", str(qfile), "good.json", f"run:{run_out}", "--json"]) == 0
    margin = next(d for d in json.loads(capsys.readouterr().out)["deltas"]
                  if d["metric"] == "no_tool_margin")
    assert margin["delta"] is not None and margin["note"] == ""


# --------------------------------------------------------------------------- --floor


def test_cli_eval_floor_takes_arm_equals_score_and_a_bare_number(tmp_path, capsys):
    cat = _real_catalog(tmp_path)
    q = _write(tmp_path, ['{"query": "money back please", "relevant": ["refund_order"]}',
                          '{"query": "customer order", "relevant": []}'])
    outputs = []
    for floor in ("bm25=99", "99"):
        assert _cli(["eval", str(cat), str(q), "--floor", floor, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["config"]["floors"] == {"bm25": 99.0}
        outputs.append(data["metrics"])
    assert outputs[0] == outputs[1] and outputs[0]["no_tool@floor"] == 1.0
    assert _cli(["eval", str(cat), str(q), "--floor", "bm25=99"]) == 0
    assert "· floor bm25=99" in capsys.readouterr().out
    for floor, message in (("bm25", "write ARM=NUMBER"), ("bm52=1", "unknown arm 'bm52'"),
                           ("semantic=0.3", "changes nothing with --method bm25")):
        assert _cli(["eval", str(cat), str(q), "--floor", floor]) == 2, floor
        assert message in capsys.readouterr().err, floor


def test_eval_floors_by_method():
    assert ev.parse_eval_floors(["2"], "bm25") == {"bm25": 2.0}
    assert ev.parse_eval_floors(["bm25=2", "semantic=0.3"], "hybrid") == {"bm25": 2.0, "semantic": 0.3}
    with pytest.raises(QueryError, match="a bare number is the BM25 floor"):
        ev.parse_eval_floors(["0.3"], "semantic")
    with pytest.raises(QueryError, match="changes nothing with --method semantic"):
        ev.parse_eval_floors(["bm25=2"], "semantic")


def test_format_report_counts_in_the_singular():
    report = evaluate({"q1": [("a", 1.0)]}, [Judgment("q1", {"b": 1.0})], (1,))
    text = ev.format_report(report)
    assert "1 query (1 with a right tool, 0 no-tool)" in text and "worst 1 query (by" in text
