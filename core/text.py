"""Wording helpers shared by the messages of every module: plurals and did-you-mean."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``"1 tool"``, ``"2 tools"``; ``plural(2, "query", "queries")`` -> ``"2 queries"``."""
    return f"{n} {singular if n == 1 else (plural_form or singular + 's')}"


def did_you_mean(word: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices`` (difflib), or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)"
