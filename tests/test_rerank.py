"""Reranking: the timeout/fallback runner on fakes, and a tiny real cross-encoder."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

from core.errors import RerankerError
from core.rerank import CrossEncoderReranker, Reranker, RerankOutcome, run_rerank

ROOT = Path(__file__).parent.parent
CANDIDATES = [("t1", "send an email"), ("t2", "delete a calendar event"), ("t3", "search files")]


class LengthReranker:
    """Scores a candidate by the length of its text."""

    def rerank(self, query, candidates):
        return sorted(((i, float(len(t))) for i, t in candidates), key=lambda p: (-p[1], p[0]))


class BlockingReranker:
    """Waits until released: stands in for a reranker that hangs."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    def rerank(self, query, candidates):
        self.release.wait(10)
        self.finished.set()
        return [(i, 1.0) for i, _ in candidates]


class BrokenReranker:
    def __init__(self, result=None, error: Exception | None = None) -> None:
        self.result, self.error = result, error

    def rerank(self, query, candidates):
        if self.error is not None:
            raise self.error
        return self.result


def test_fakes_satisfy_the_protocol():
    assert isinstance(LengthReranker(), Reranker)


def test_successful_rerank_orders_by_score_then_id():
    outcome = run_rerank(LengthReranker(), "q", CANDIDATES, timeout_s=5)
    assert outcome.reranked and outcome.reason is None
    assert outcome.order == ("t2", "t1", "t3")
    assert outcome.scores == (23.0, 13.0, 12.0)


def test_ties_in_reranker_scores_are_broken_by_id():
    reranker = BrokenReranker(result=[("t3", 1.0), ("t1", 1.0), ("t2", 2.0)])
    assert run_rerank(reranker, "q", CANDIDATES).order == ("t2", "t1", "t3")


def test_timeout_falls_back_to_the_input_order_and_says_so():
    slow = BlockingReranker()
    try:
        outcome = run_rerank(slow, "q", CANDIDATES, timeout_s=0.05)
        assert outcome == RerankOutcome(
            order=("t1", "t2", "t3"),
            reranked=False,
            reason=outcome.reason,
            scores=None,
            seconds=outcome.seconds,
        )
        assert "did not answer within 0.05 s; kept the input order" in (outcome.reason or "")
        assert outcome.seconds > 0.04  # it waited for the timeout before falling back
        # while the timed-out call still runs, the same reranker is not started again
        busy = run_rerank(slow, "q", CANDIDATES, timeout_s=5)
        assert not busy.reranked and "still busy" in (busy.reason or "")
    finally:
        slow.release.set()
        assert slow.finished.wait(5)


def test_timeout_raises_when_configured():
    slow = BlockingReranker()
    try:
        with pytest.raises(RerankerError, match=r"did not answer within 0\.05 s"):
            run_rerank(slow, "q", CANDIDATES, timeout_s=0.05, on_error="raise")
    finally:
        slow.release.set()
        assert slow.finished.wait(5)


def test_error_falls_back_or_raises():
    broken = BrokenReranker(error=RuntimeError("model exploded"))
    outcome = run_rerank(broken, "q", CANDIDATES)
    assert outcome.order == ("t1", "t2", "t3") and not outcome.reranked
    assert "RuntimeError: model exploded; kept the input order" in (outcome.reason or "")
    with pytest.raises(RerankerError, match="model exploded") as info:
        run_rerank(broken, "q", CANDIDATES, on_error="raise")
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([("t1", 1.0), ("t2", 0.5), ("zz", 0.1)], "'zz', which is not a candidate"),
        ([("t1", 1.0), ("t2", 0.5)], r"dropped candidates \['t3'\]"),
        ([("t1", 1.0), ("t1", 0.5), ("t2", 0.1)], "'t1' twice"),
        ([("t1", math.nan), ("t2", 0.5), ("t3", 0.1)], "non-finite"),
        ([("t1",), ("t2", 0.5), ("t3", 0.1)], "not an"),
        (None, "not a list"),
    ],
)
def test_invalid_reranker_output_falls_back(result, message):
    outcome = run_rerank(BrokenReranker(result=result), "q", CANDIDATES)
    assert not outcome.reranked and outcome.order == ("t1", "t2", "t3")
    assert re.search(message, outcome.reason or "")


def test_empty_candidates_do_not_call_the_reranker():
    outcome = run_rerank(BrokenReranker(error=RuntimeError("called")), "q", [])
    assert (
        outcome.order == () and not outcome.reranked and outcome.reason == "no candidates to rerank"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"on_error": "ignore"}, "on_error must be one of fallback, raise, got 'ignore'"),
        ({"timeout_s": 0}, "timeout_s must be a positive finite number"),
        ({"timeout_s": math.inf}, "timeout_s must be a positive finite number"),
    ],
)
def test_bad_options_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_rerank(LengthReranker(), "q", CANDIDATES, **kwargs)


def test_repeated_candidate_ids_are_rejected():
    with pytest.raises(ValueError, match="repeated id"):
        run_rerank(LengthReranker(), "q", [("a", "x"), ("a", "y")])


def test_cross_encoder_folder_errors_say_how_to_fix(tmp_path):
    with pytest.raises(
        RerankerError, match="does not exist; point --reranker at a local cross-encoder"
    ):
        CrossEncoderReranker(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RerankerError, match=r"has no config\.json"):
        CrossEncoderReranker(tmp_path / "empty")


def test_constructing_a_cross_encoder_reranker_does_not_import_torch(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    code = (
        "import sys\n"
        "from core.rerank import CrossEncoderReranker\n"
        "CrossEncoderReranker(sys.argv[1])\n"
        "assert 'torch' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- a tiny real cross-encoder

WORDS = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "send", "an", "email", "mail", "delete", "calendar", "event", "message",
    "compose", "file", "files", "search", "the", "a", "weather", "today",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A randomly initialised one-layer BERT classifier saved as a cross-encoder folder."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    tokenizer = BertTokenizer(vocab_file=str(folder / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.5,
    )
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


def test_tiny_cross_encoder_through_the_real_code_path(tiny_cross_encoder):
    import torch

    folder, model, tokenizer = tiny_cross_encoder
    candidates = [
        ("mail", "compose a mail message"),
        ("cal", "delete the calendar event"),
        ("files", "search files"),
        ("weather", "the weather today"),
    ]
    reranker = CrossEncoderReranker(folder)
    outcome = run_rerank(reranker, "send an email", candidates, timeout_s=60, on_error="raise")
    assert outcome.reranked and sorted(outcome.order) == sorted(i for i, _ in candidates)
    # the scores are the saved model's own: recompute them with plain transformers
    texts = dict(candidates)
    encoded = tokenizer(
        ["send an email"] * len(outcome.order),
        [texts[i] for i in outcome.order],
        return_tensors="pt",
        padding=True,
    )
    with torch.no_grad():
        expected = torch.sigmoid(model(**encoded).logits).ravel().tolist()
    assert outcome.scores == pytest.approx(expected, abs=1e-5)
    assert len(set(outcome.scores or ())) > 1
    assert list(outcome.scores or ()) == sorted(outcome.scores or (), reverse=True)
    # deterministic: the same query gives the same order and scores again
    again = run_rerank(CrossEncoderReranker(folder), "send an email", candidates, timeout_s=60)
    assert (again.order, again.scores) == (outcome.order, outcome.scores)


def test_tiny_cross_encoder_broken_weights_raise_a_reranker_error(tiny_cross_encoder, tmp_path):
    folder, _, _ = tiny_cross_encoder
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in folder.iterdir():
        (broken / item.name).write_bytes(item.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not safetensors")
    reranker = CrossEncoderReranker(broken)
    with pytest.raises(RerankerError, match=r"could not load the cross-encoder from .*broken"):
        reranker.rerank("q", [("a", "b")])
    outcome = run_rerank(reranker, "q", [("a", "b"), ("c", "d")], timeout_s=60)
    assert not outcome.reranked and outcome.order == ("a", "c")
