"""Deterministic synthetic tool catalogs and queries for the benchmarks.

Tools look like real ones: a verb_noun name, one to three sentences of
description drawn from a domain vocabulary with a Zipf-like long tail of
product and field names, and an input schema of two to six properties with
descriptions and string enums; half have an output schema.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.catalog import Tool

VERBS = """get list create update delete search find send fetch sync export import archive restore
merge close open assign schedule cancel approve reject publish deploy rollback validate resolve
summarize translate convert upload download share invite remove rename move copy tag label
notify track refund charge verify escalate""".split()
NOUNS = """user account invoice payment refund ticket issue repository branch commit pipeline build
deployment release environment secret token file folder document page comment message thread
channel email draft calendar event meeting attendee report dashboard metric query table column
dataset experiment order customer subscription plan coupon product inventory shipment address
contact lead campaign segment alert incident log trace span job schedule task project milestone
note template workflow webhook permission role team member organization""".split()
ADJ = """active archived pending failed recent public private shared default primary internal
external monthly weekly daily overdue unread starred critical minor stale duplicate""".split()
FILLER = """for the a by with from in on of to and or its their all any current given selected
specified matching optional required new existing""".split()
PHRASES = [
    "Use when the user asks to {v} a {n}.",
    "Returns the {a} {n} records with their {n2} details.",
    "Supports filtering by {n2}, {a} state and date range.",
    "Requires permission to {v} {n}s in the {n2} workspace.",
    "Pagination uses a cursor; results are ordered by {n2} time.",
    "Fails when the {n} is {a} or locked by another {n2}.",
]


def _rare(rng: random.Random) -> str:
    syll = ["ka", "lo", "mi", "ne", "zu", "ta", "ri", "po", "xe", "va", "qu", "sh", "dr", "el", "on"]
    return "".join(rng.choice(syll) for _ in range(rng.randint(2, 4)))


def make_tool(i: int, rng: random.Random, rare: list[str]) -> Tool:
    """One synthetic tool; ``i`` makes the id unique."""
    v, n = rng.choice(VERBS), rng.choice(NOUNS)
    name = f"{v}_{n}" if rng.random() < 0.7 else f"{v}{n.capitalize()}{rng.choice(['', 's', 'ById'])}"
    sentences = []
    for _ in range(rng.randint(1, 3)):
        tpl = rng.choice(PHRASES)
        sentences.append(tpl.format(v=rng.choice(VERBS), n=rng.choice(NOUNS), n2=rng.choice(NOUNS), a=rng.choice(ADJ)))
    if rng.random() < 0.6:
        sentences.append(f"Works with {rng.choice(rare)} and {rng.choice(rare)} {rng.choice(NOUNS)}s.")
    props = {}
    for _ in range(rng.randint(2, 6)):
        key = rng.choice([f"{rng.choice(NOUNS)}_id", f"{rng.choice(ADJ)}{rng.choice(NOUNS).capitalize()}", rng.choice(NOUNS)])
        prop = {"type": "string", "description": f"The {rng.choice(ADJ)} {rng.choice(NOUNS)} {rng.choice(FILLER)} {rng.choice(NOUNS)}."}
        if rng.random() < 0.25:
            prop["enum"] = rng.sample(ADJ, 3)
        props[key] = prop
    output = {}
    if rng.random() < 0.5:
        output = {"type": "object", "properties": {
            f"{n}s": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string"}, rng.choice(NOUNS): {"type": "string", "description": f"The {rng.choice(NOUNS)}."}}}},
            "next_cursor": {"type": "string", "description": "Cursor for the next page."}}}
    return Tool(
        id=f"{name}_{i:06d}", name=name, description=" ".join(sentences),
        input_schema={"type": "object", "properties": props, "required": list(props)[:1]},
        output_schema=output,
    )


def make_tools(n: int, seed: int = 0) -> list[Tool]:
    """``n`` synthetic tools, the same for the same seed."""
    rng = random.Random(seed)
    rare = [_rare(rng) for _ in range(max(50, n // 5))]
    return [make_tool(i, rng, rare) for i in range(n)]


def make_queries(n: int, seed: int = 1) -> list[str]:
    """``n`` realistic queries (4 to 12 words, some stop words)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = ["please", rng.choice(VERBS), "the", rng.choice(ADJ), rng.choice(NOUNS)]
        words += rng.sample(FILLER + NOUNS + VERBS, rng.randint(0, 7))
        out.append(" ".join(words))
    return out
