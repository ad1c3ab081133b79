from __future__ import annotations

import pytest

from core.analysis import (
    DEFAULT_ANALYZER,
    NLTK_ENGLISH_STOP_WORDS,
    Analyzer,
    segment,
    transliterate,
)


def test_stop_list_is_nltk_english_179_words():
    assert len(NLTK_ENGLISH_STOP_WORDS) == 179
    for w in ("s", "t", "d", "ll", "m", "o", "re", "ve", "y", "don't", "won't", "the"):
        assert w in NLTK_ENGLISH_STOP_WORDS


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("snake_case and camelCase", ["snake_case", "and", "camelcase"]),
        ("kebab-case", ["kebab", "case"]),
        ("foo.bar a:b don't", ["foo.bar", "a:b", "don't"]),
        ("1.5 1,000 1;2 3'4", ["1.5", "1,000", "1;2", "3'4"]),
        ("a.1 1.a a..b", ["a", "1", "1", "a", "a", "b"]),
        ("1a.b a1.2", ["1a.b", "a1.2"]),
        ("path/to/file.txt", ["path", "to", "file.txt"]),
        ("___ __x_ --", ["__x_"]),
        ("end. start", ["end", "start"]),
    ],
)
def test_segmentation_follows_uax29_on_ascii(text, words):
    assert segment(transliterate(text)) == words


def test_transliterates_then_lowercases():
    assert transliterate("Crème BRÛLÉE") == "creme brulee"
    assert transliterate("plain ASCII") == "plain ascii"


def test_chain_drops_stop_words_before_stemming_and_stems_like_rust_stemmers():
    assert DEFAULT_ANALYZER.analyze("I added the files") == ["ad", "file"]
    # Queries are never identifier-split.
    assert DEFAULT_ANALYZER.analyze("get_weather") == ["get_weath"]


def test_tokens_report_what_happened_to_each_word():
    toks = DEFAULT_ANALYZER.tokens("Send the emails")
    assert [(t.word, t.term, t.stop_word) for t in toks] == [
        ("send", "send", False),
        ("the", None, True),
        ("emails", "email", False),
    ]


def test_unknown_profile_lists_valid_ones():
    with pytest.raises(ValueError, match=r"ratel-0\.12"):
        Analyzer("porter")
