"""The analyzer: the chain that turns text into index terms.

The same chain runs at index time and at query time, so a query is always
analysed like the documents it is scored against. The chain is a named,
versioned profile (`Analyzer.profile`); an index keeps the analyzer it was
built with and analyses every query with it, and records its profile.

The default profile, ``ratel-0.12``, is the reference engine's chain
(../shared/reference/engine-contract.md, "Analyzer"):

1. transliterate to ASCII, then lowercase;
2. segment into words by Unicode UAX #29 rules applied to ASCII;
3. drop the 179 NLTK English stop words (before stemming);
4. stem with Snowball English as implemented by ``rust-stemmers`` 1.2.0
   (wrapped by ``py_rust_stemmers==0.1.8``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from anyascii import anyascii
from py_rust_stemmers import SnowballStemmer
from unidecode import unidecode

# NLTK's English stop-word list (179 words), as the reference engine uses it.
NLTK_ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours
    yourself yourselves he him his himself she she's her hers herself it it's its itself
    they them their theirs themselves what which who whom this that that'll these those
    am is are was were be been being have has had having do does did doing a an the and
    but if or because as until while of at by for with about against between into
    through during before after above below to from up down in out on off over under
    again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don
    don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn
    didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn
    mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
    weren't won won't wouldn wouldn't
    """.split()
)

# UAX #29 word segmentation restricted to ASCII (the text is transliterated
# first). Letters, digits and "_" join (WB5, WB8-10, WB13a/b); a letter, one of
# ":" "." "'", then a letter stay one word (WB6/7); a digit, one of "," ";" "."
# "'", then a digit stay one word (WB11/12). Everything else separates.
_WORD = re.compile(
    r"[a-z0-9_]+(?:(?:(?<=[a-z])[:.'](?=[a-z])|(?<=[0-9])[,;.'](?=[0-9]))[a-z0-9_]+)*"
)
_HAS_ALNUM = re.compile(r"[a-z0-9]")


@lru_cache(maxsize=65_536)
def _ascii_char(ch: str) -> str:
    # The engine uses the Rust `deunicode` crate, whose tables derive from
    # Text::Unidecode (as Python's `unidecode` does; CJK gets a trailing space)
    # and which names emoji; `anyascii` fills what unidecode leaves empty.
    out = unidecode(ch)
    return out if out else anyascii(ch)


def transliterate(text: str) -> str:
    """ASCII transliteration, then lowercase (step 1 of the chain)."""
    if not text.isascii():
        text = "".join(ch if ch.isascii() else _ascii_char(ch) for ch in text)
    return text.lower()


def segment(text: str) -> list[str]:
    """UAX #29 words of already transliterated, lowercased ASCII text.

    Segments without a letter or digit (such as ``___``) are dropped.
    """
    return [w for w in _WORD.findall(text) if _HAS_ALNUM.search(w)]


@dataclass(frozen=True)
class Token:
    """How one word of a text was analysed.

    Attributes:
        word: the segment as it appeared after transliteration and lowercasing.
        term: the index term it became, or None when it was dropped.
        stop_word: True when the word was dropped as a stop word.
    """

    word: str
    term: str | None
    stop_word: bool


class Analyzer:
    """A named, versioned analysis chain.

    Args:
        profile: name and version of the chain, stored with every index built
            with it. Only ``ratel-0.12`` exists today.
    """

    PROFILES = ("ratel-0.12",)

    def __init__(self, profile: str = "ratel-0.12") -> None:
        if profile not in self.PROFILES:
            raise ValueError(
                f"unknown analyzer profile {profile!r}; valid profiles: {', '.join(self.PROFILES)}"
            )
        self.profile = profile
        self.stop_words = NLTK_ENGLISH_STOP_WORDS
        self._stemmer = SnowballStemmer("english")
        self._stem = lru_cache(maxsize=200_000)(self._stemmer.stem_word)

    def __repr__(self) -> str:
        return f"Analyzer(profile={self.profile!r})"

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text``, in order, duplicates kept."""
        stop = self.stop_words
        stem = self._stem
        return [stem(w) for w in segment(transliterate(text)) if w not in stop]

    def tokens(self, text: str) -> list[Token]:
        """Every word of ``text`` with what became of it (for explanations)."""
        out = []
        for w in segment(transliterate(text)):
            if w in self.stop_words:
                out.append(Token(w, None, True))
            else:
                out.append(Token(w, self._stem(w), False))
        return out


DEFAULT_ANALYZER = Analyzer()
