"""The definition linter: what in a tool or skill definition hurts its ranking, and schema hygiene.

Each rule has a category. ``ranking`` rules follow from how the index works
(engine-contract.md); ``schema`` rules (untyped properties, no ``required``,
no ``additionalProperties: false``) do not change the ranking: they leave the
agent guessing how to call the tool once it is found.

- BM25 (k1 = 0.9, b = 0.4) saturates term frequency quickly: with an average
  length, copies 1-4 of a term earn 1.00, 1.31, 1.46 and 1.55 times the first
  copy's weight, while every extra word lengthens the document and lowers
  the weight of all its other terms.
- The index sees only the *projection*: the name (whole and split on ``_`` and
  camelCase), the description, and each schema property's key, description
  and *string* enum values. Types, ``required``, titles and defaults are not
  indexed.
- Queries are analysed like documents (lowercase, UAX #29 words, stop words
  dropped, Snowball stems), so only words a caller actually types can match.

`lint_catalog` returns `Finding`s sorted by severity, tool id, rule and
path. `RULES` lists every rule with its severity, category and rationale.

Exit code of ``ranklens lint``: 0 when no finding is at or above the
``--fail-on`` severity (default warning, so info findings alone pass), 1 when
one is, 2 only when the catalog, the query set or an option is bad (the
message goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.analysis import DEFAULT_ANALYZER
from core.errors import QueryError, RanklensError
from core.text import plural

if TYPE_CHECKING:
    from core.evaluation import Judgment

SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
CATEGORIES: tuple[str, ...] = ("ranking", "schema")
"""``ranking``: changes what the index sees or how it scores; ``schema``: how the agent calls the tool."""
_SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
DEFAULT_FAIL_ON = "warning"
"""The least severe finding that makes ``ranklens lint`` exit 1."""

# Thresholds (module constants so tests and docs can refer to them).
MIN_DESCRIPTION_WORDS = 8
"""A description with fewer words than this is anemic."""
REPEAT_THRESHOLD = 4
"""A stem used this many times in one description saturates BM25's term frequency."""
NEAR_DUPLICATE_THRESHOLD = 0.7
"""Cosine similarity that marks near-duplicates: idf-weighted term counts of the projection
without the output schema (name, description, input schema). Output schemas are left out
because tools acting on one resource share them by design (a calendar's event object); on
the sample catalogs they alone pushed dozens of clearly distinct pairs over the line."""
PARAPHRASE_WINDOW = 8
"""Words within which three synonyms of one verb group form a paraphrase chain."""
SHADOW_MIN_QUERIES = 2
"""Queries in which a tool must outrank the same relevant tool to be reported as shadowing it."""
BM25_K1 = 0.9


@dataclass(frozen=True)
class Rule:
    """A lint rule: kebab-case id, severity, why it matters, and its category (`CATEGORIES`)."""

    id: str
    severity: str
    rationale: str
    needs_queries: bool = False
    category: str = "ranking"


_RULE_LIST = (
    Rule("missing-description", "error",
         "The description is the only prose the index sees; without it the tool matches "
         "only on its name and parameter keys."),
    Rule("anemic-description", "warning",
         f"A description under {MIN_DESCRIPTION_WORDS} words holds too few of the words "
         "callers type, so paraphrased queries miss it."),
    Rule("missing-use-when", "warning",
         "A 'Use when ...' clause adds the caller's situation in the caller's words, which is "
         "what queries are made of, and helps the agent choose between close tools."),
    Rule("repeated-term", "warning",
         f"BM25 with k1={BM25_K1} saturates: the {REPEAT_THRESHOLD}th copy of a term adds "
         "about 9% of the first copy's weight, while every extra word lengthens the document "
         "and dilutes the other terms."),
    Rule("paraphrase-chain", "info",
         "A list of synonyms ('search, find, look up, locate') inflates the document length; "
         "keep the verbs callers use and say the rest in a sentence about the situation."),
    Rule("marketing-words", "warning",
         "Words like 'powerful' or 'seamless' are never typed by callers: they match nothing "
         "and lengthen the document, lowering every other term's weight."),
    Rule("schema-in-prose", "warning",
         "Restating types in prose ('takes a string parameter', 'returns JSON') indexes "
         "'string' and 'json', so the tool matches queries about strings and JSON."),
    Rule("transport-details", "warning",
         "HTTP verbs, endpoints, timeouts and retries describe the plumbing, not the task; "
         "callers never ask for them, and they match unrelated queries."),
    Rule("near-duplicate", "warning",
         "Two definitions whose names, descriptions and inputs share nearly all their terms "
         "score nearly the same for every query, so the wrong one wins about half the time."),
    Rule("kebab-case-name", "info",
         "The projection splits names only on '_' and camelCase; a kebab-case tool name is "
         "indexed only as its parts, so the whole name (what an agent copies from a log) is no "
         "term. Skills are exempt: kebab-case is their naming convention."),
    Rule("dotted-name", "warning",
         "The analyzer keeps 'files.read' or 'fs:read' as one word and the projection does not "
         "split it, so the name's parts ('files', 'read') are never indexed."),
    Rule("vague-parameter-name", "warning",
         "Input parameter keys are indexed whole and split; 'arg1' or 'x' add no word a caller "
         "types and tell the agent nothing. Output keys are not checked: short conventional "
         "names there ('p50', 'x') are the data's own vocabulary."),
    Rule("non-string-enum", "warning",
         "The projection indexes only string enum values; numbers and booleans are skipped, so "
         "their meaning is invisible to search."),
    Rule("untyped-property", "warning",
         "A property without a type (or $ref/anyOf/oneOf/allOf/enum/const) leaves the agent "
         "guessing what to send. Types are not indexed, so ranking is unaffected.",
         category="schema"),
    Rule("missing-required", "warning",
         "Without 'required' the agent cannot tell which arguments it must supply. It is not "
         "indexed, so ranking is unaffected.", category="schema"),
    Rule("missing-additional-properties", "info",
         "Without 'additionalProperties: false' misspelt arguments are accepted silently. It is "
         "not indexed, so ranking is unaffected.", category="schema"),
    Rule("skill-without-tags", "warning",
         "A skill's tags are projected whole and split; without tags the skill has only its "
         "name and description to match on."),
    Rule("unreachable-tool", "warning",
         "Judged relevant for some queries, yet in the top k of none of them: the definition "
         "lacks the words those callers use.", needs_queries=True),
    Rule("unexercised-tool", "info",
         "No judged query names it and no query retrieves it: the query set does not test it.",
         needs_queries=True),
    Rule("shadowing-tool", "warning",
         f"Outranks the same relevant tool in {SHADOW_MIN_QUERIES} or more judged queries "
         "without being relevant itself: its terms overlap with that tool's callers' words.",
         needs_queries=True),
)
RULES: dict[str, Rule] = {r.id: r for r in _RULE_LIST}


@dataclass(frozen=True)
class Finding:
    """One problem in one definition.

    Attributes:
        rule: the rule id (a key of `RULES`).
        severity: "error", "warning" or "info".
        tool_id: the tool's (or skill's) id.
        text: the offending text, verbatim where there is one.
        suggestion: a concrete change that fixes it.
        message: what is wrong and why, in one sentence.
        path: where in the definition (``description``, ``name``,
            ``input.properties.arg1``, ``tags``); "" when it is the whole item.
        related: the other tool of a pair (near-duplicate, shadowing), or None.
        kind: "tool" or "skill".
        category: the rule's category, "ranking" or "schema" (filled in from
            `RULES`; "ranking" for a rule it does not know).
    """

    rule: str
    severity: str
    tool_id: str
    text: str
    suggestion: str
    message: str = ""
    path: str = ""
    related: str | None = None
    kind: str = "tool"
    category: str = ""

    def __post_init__(self) -> None:
        if not self.category:
            rule = RULES.get(self.rule)
            object.__setattr__(self, "category", rule.category if rule else "ranking")

    def sort_key(self) -> tuple[Any, ...]:
        return (_SEVERITY_RANK[self.severity], self.tool_id, self.rule, self.path,
                self.related or "", self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "category": self.category,
            "kind": self.kind,
            "tool_id": self.tool_id,
            "path": self.path,
            "text": self.text,
            "message": self.message,
            "suggestion": self.suggestion,
            "related": self.related,
        }


def _finding(rule: str, tool_id: str, text: str, suggestion: str, message: str,
             path: str = "", related: str | None = None, kind: str = "tool") -> Finding:
    return Finding(rule, RULES[rule].severity, tool_id, text, suggestion, message, path,
                   related, kind)


# --------------------------------------------------------------------------- description rules

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_USE_WHEN_RE = re.compile(
    r"\b(?:use|call|invoke|choose|pick)\s+(?:this\s+(?:tool|skill|function)\s+|this\s+|it\s+)?"
    r"(?:when|whenever|if|for)\b|\b(?:use|call)\s+(?:this|it)\s+(?:tool\s+|skill\s+)?to\b"
    r"|\buseful\s+(?:when|for|if)\b"
    # A sentence opening with Use/Call/Invoke and a word that names the situation:
    # "Use before answering…", "Use only after verifying…", "Call to refresh…".
    r"|(?:^|[.!?;:]\s+|\n\s*)(?:use|call|invoke)\s+(?:this\s+(?:tool|skill|function)\s+|this\s+|it\s+)?"
    r"(?:when|whenever|before|after|only|to|for|if)\b",
    re.IGNORECASE,
)
USE_WHEN_TEMPLATE = "Use when <the situation a caller is in, in their words>."
"""The sentence the missing-use-when and missing-description suggestions ask for."""
MARKETING_WORDS: tuple[str, ...] = (
    "all-in-one", "amazing", "awesome", "best-in-class", "best-of-breed", "blazing",
    "blazing-fast", "blazingly", "cutting-edge", "effortless", "effortlessly",
    "enterprise-grade", "game-changing", "hassle-free", "incredible", "incredibly",
    "industry-leading", "innovative", "intuitive", "leverage", "leverages", "lightning-fast",
    "magical", "next-gen", "next-generation", "one-stop", "powerful", "revolutionary",
    "robust", "seamless", "seamlessly", "state-of-the-art", "stunning", "supercharge",
    "supercharged", "synergy", "top-notch", "ultimate", "unmatched", "unparalleled",
    "unrivaled", "unrivalled", "world-class",
)
"""Words no caller types when asking for a tool (matched whole, case-insensitive)."""
_MARKETING_RE = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(w) for w in sorted(MARKETING_WORDS, key=len, reverse=True))
    + r")(?![\w-])",
    re.IGNORECASE,
)
_TYPE_WORDS = r"(?:strings?|integers?|ints?|floats?|numbers?|numeric|booleans?|bools?|objects?|arrays?|dicts?|dictionary|json)"
_SCHEMA_PROSE_RES = (
    re.compile(
        r"\b(?:takes|accepts|expects|requires|receives)\s+(?:(?:an?|one|two|three|the|optional|"
        r"required|single)\s+)*" + _TYPE_WORDS + r"\b", re.IGNORECASE),
    re.compile(r"\breturns?\s+(?:(?:an?|the)\s+)?(?:json|strings?|integers?|booleans?|objects?|"
               r"arrays?|dicts?|dictionary)\b", re.IGNORECASE),
    re.compile(r"\b(?:string|integer|boolean|numeric|number|object|array|optional|required)\s+"
               r"(?:parameters?|params?|arguments?|args?|fields?|inputs?)\b", re.IGNORECASE),
    re.compile(r"\bjson\s+(?:objects?|responses?|payloads?|strings?|format|body|arrays?)\b",
               re.IGNORECASE),
    re.compile(r"\(\s*(?:string|integer|int|boolean|bool|number|float|required|optional)\s*\)",
               re.IGNORECASE),
    re.compile(r"\b(?:parameters?|params|arguments?|inputs?)\s*:", re.IGNORECASE),
)
_TRANSPORT_RES = (
    re.compile(r"\bhttps?\b(?!://)", re.IGNORECASE),
    re.compile(r"\bhttps?://\S+", re.IGNORECASE),
    re.compile(r"\b(?:GET|POST|PUT|PATCH)\b"),
    re.compile(r"\bDELETE\s+(?:request|method|call|/)"),
    re.compile(r"\b(?:api|rest|restful|rpc)\s+(?:calls?|requests?|endpoints?)\b", re.IGNORECASE),
    re.compile(r"\bendpoints?\b", re.IGNORECASE),
    re.compile(r"\btime-?outs?\b|\btimed\s+out\b", re.IGNORECASE),
    re.compile(r"\bretr(?:y|ies|ied|ying)\b|\bback-?off\b", re.IGNORECASE),
    re.compile(r"\b\d+\s?(?:ms|milliseconds?)\b", re.IGNORECASE),
    re.compile(r"\bstatus\s+codes?\b|\brate[- ]limit(?:s|ed|ing)?\b", re.IGNORECASE),
    re.compile(r"\b(?:json-rpc|grpc|websockets?|curl)\b", re.IGNORECASE),
)

# Verb groups whose members callers use interchangeably; three of one group
# close together are a paraphrase chain.
SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {
    "find": ("find", "search", "look up", "lookup", "locate", "discover", "seek", "query"),
    "get": ("get", "fetch", "retrieve", "obtain", "pull", "grab", "read", "load", "access"),
    "create": ("create", "make", "add", "generate", "build", "produce", "insert"),
    "delete": ("delete", "remove", "erase", "destroy", "purge", "wipe", "discard", "drop"),
    "update": ("update", "modify", "change", "edit", "alter", "amend", "adjust", "revise"),
    "show": ("show", "display", "view", "list", "present", "render"),
    "send": ("send", "deliver", "dispatch", "transmit", "forward"),
    "stop": ("stop", "cancel", "abort", "halt", "terminate", "kill"),
}


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text)


def _split_name(name: str) -> str:
    from core.projection import split_identifier

    return split_identifier(name).replace("-", " ").replace(".", " ").replace(":", " ").strip()


def _judged_example(query: str | None) -> str:
    return f' A judged query for it: "{_truncate(query, 100)}".' if query else ""


def _describe_rules(item_id: str, name: str, description: str, kind: str,
                    example_query: str | None = None) -> Iterator[Finding]:
    desc = description.strip()
    if not desc:
        yield _finding(
            "missing-description", item_id, "",
            "Write two or three sentences: what it does in the words a caller uses, then a "
            f'sentence like: "{USE_WHEN_TEMPLATE}"' + _judged_example(example_query),
            f"The {kind} has no description, so it can match only on its name and parameters.",
            "description", kind=kind)
        return
    words = _words(desc)
    if len(words) < MIN_DESCRIPTION_WORDS:
        yield _finding(
            "anemic-description", item_id, desc,
            "Say what it acts on and returns in everyday words, and add the phrases callers use "
            f'for it ("Use when ..."); aim for {MIN_DESCRIPTION_WORDS * 2}-40 words.',
            f"The description has {len(words)} word{'s' if len(words) != 1 else ''}; "
            f"fewer than {MIN_DESCRIPTION_WORDS} leaves paraphrased queries nothing to match.",
            "description", kind=kind)
    if not _USE_WHEN_RE.search(desc):
        yield _finding(
            "missing-use-when", item_id, _truncate(desc, 120),
            f'Add a sentence like: "{USE_WHEN_TEMPLATE}"' + _judged_example(example_query),
            "The description has no 'Use when ...' clause naming the caller's situation.",
            "description", kind=kind)
    yield from _repeated_terms(item_id, desc, kind)
    yield from _paraphrase_chains(item_id, desc, kind)
    marketing = sorted({m.group(1).lower() for m in _MARKETING_RE.finditer(desc)})
    if marketing:
        yield _finding(
            "marketing-words", item_id, ", ".join(marketing),
            f"Delete {', '.join(repr(m) for m in marketing)}; if the point is speed or reliability, "
            "state the fact a caller would ask about (e.g. 'returns within a second').",
            f"Marketing words no caller types: {', '.join(marketing)}.",
            "description", kind=kind)
    prose = _matches(_SCHEMA_PROSE_RES, desc)
    if prose:
        yield _finding(
            "schema-in-prose", item_id, "; ".join(prose),
            "Remove the type talk from the description (the schema already says it); describe "
            "what the value means instead, e.g. 'the customer's email address'.",
            f"The description restates the schema: {'; '.join(repr(p) for p in prose)}.",
            "description", kind=kind)
    transport = _matches(_TRANSPORT_RES, desc)
    if transport:
        yield _finding(
            "transport-details", item_id, "; ".join(transport),
            "Remove the transport details (HTTP verbs, endpoints, timeouts, retries); describe "
            "the task and its result in the caller's words.",
            f"Transport internals in the description: {'; '.join(repr(t) for t in transport)}.",
            "description", kind=kind)


def _truncate(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _matches(patterns: Iterable[re.Pattern[str]], text: str) -> list[str]:
    found: list[str] = []
    for pattern in patterns:
        for m in pattern.finditer(text):
            snippet = " ".join(m.group(0).split())
            if snippet not in found:
                found.append(snippet)
    return found


def saturation_gain(tf: int, k1: float = BM25_K1) -> float:
    """The BM25 term part at average length, relative to one copy: tf (k1+1)/(tf+k1) / 1.

    The marginal gain of the n-th copy is ``saturation_gain(n) - saturation_gain(n - 1)``.
    """
    return tf * (k1 + 1) / (tf + k1)


def _repeated_terms(item_id: str, desc: str, kind: str) -> Iterator[Finding]:
    tokens = [t for t in DEFAULT_ANALYZER.tokens(desc) if t.term is not None]
    counts = Counter(t.term for t in tokens)
    repeated = sorted(((term, n) for term, n in counts.items()
                       if n >= REPEAT_THRESHOLD and not term.replace(".", "").isdigit()),
                      key=lambda x: (-x[1], x[0]))
    if not repeated:
        return
    words: dict[str, list[str]] = defaultdict(list)
    for t in tokens:
        if t.term in dict(repeated) and t.word not in words[t.term]:
            words[t.term].append(t.word)
    shown = ", ".join(f"{'/'.join(words[term])} ×{n}" for term, n in repeated)
    term, n = repeated[0]
    last_gain = saturation_gain(n) - saturation_gain(n - 1)
    yield _finding(
        "repeated-term", item_id, shown,
        f"Say {'/'.join(words[term])!r} once or twice and spend the other words on what callers "
        "might say instead (synonyms in a sentence, the objects and situations involved).",
        f"Repeated terms saturate BM25 (k1={BM25_K1}): copy {n} of {words[term][0]!r} adds only "
        f"{last_gain / saturation_gain(1):.0%} of the first copy's weight, while the extra words "
        "dilute every other term.",
        "description", kind=kind)


def _paraphrase_chains(item_id: str, desc: str, kind: str) -> Iterator[Finding]:
    words = [w.lower() for w in _words(desc)]
    hits: list[tuple[int, str, str]] = []  # (position, group, member)
    for i, w in enumerate(words):
        for group, members in SYNONYM_GROUPS.items():
            for member in members:
                parts = member.split()
                if words[i : i + len(parts)] == parts or (
                    len(parts) == 1 and (w == member + "s" or w == member + "es")
                ):
                    hits.append((i, group, member))
    for group in SYNONYM_GROUPS:
        positions = [(i, m) for i, g, m in hits if g == group]
        for start, _ in positions:
            window = [m for i, m in positions if start <= i < start + PARAPHRASE_WINDOW]
            distinct = list(dict.fromkeys(window))
            if len(distinct) >= 3:
                yield _finding(
                    "paraphrase-chain", item_id, ", ".join(distinct),
                    f"Keep the one or two verbs callers use most (e.g. {distinct[0]!r}) and move "
                    "other phrasings into a 'Use when ...' sentence about the situation.",
                    f"A chain of {len(distinct)} synonyms ({', '.join(distinct)}) lengthens the "
                    "description without adding a situation callers describe.",
                    "description", kind=kind)
                break


# --------------------------------------------------------------------------- name and schema rules

_DOTTED_WORD_RE = re.compile(r"[A-Za-z0-9_]*[A-Za-z](?:[.:][A-Za-z][A-Za-z0-9_]*)+")
_VAGUE_PARAM_RE = re.compile(
    r"^(?:[a-z]|args?|arguments?|params?|parameters?|vars?|foo|bar|baz|tmp|temp|thing|stuff|misc"
    r"|opts?|obj)_?\d*$"
    r"|^(?:data|value|val|input|field|item|option|str|string|num|number|int|text|key)_?\d+$",
    re.IGNORECASE,
)
REQUEST_FILLER: frozenset[str] = frozenset({
    "i'm", "im", "need", "want", "wants", "like", "would", "could", "please", "help",
    "provide", "tell", "give", "know", "let", "also", "get", "show", "find", "make", "sure",
    "thanks", "hi", "hello",
})
"""Request words that say nothing about the task (left out of unreachable-tool suggestions)."""
_TYPE_KEYS = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")


def _name_rules(item_id: str, name: str, kind: str) -> Iterator[Finding]:
    # Skill names are kebab-case by convention (Agent Skills folders), so only tools are told.
    if kind == "tool" and re.search(r"[A-Za-z0-9]-[A-Za-z0-9]", name):
        snake = name.replace("-", "_")
        yield _finding(
            "kebab-case-name", item_id, name,
            f"Rename to {snake!r}: the projection then indexes the whole name as one term plus "
            f"its parts ({_split_name(snake)!r}).",
            f"{name!r} is split into its parts only by the analyzer (hyphens separate words), so "
            "the name is indexed as loose words and never as the identity an agent or log uses; "
            "'_' and camelCase names are indexed whole and split.",
            "name", kind=kind)
    joined = _DOTTED_WORD_RE.findall(name)
    if joined:
        fixed = re.sub(r"(?<=[A-Za-z])[.:](?=[A-Za-z])", "_", name)
        parts = sorted({p.lower() for w in joined for p in re.split(r"[.:]", w)})
        yield _finding(
            "dotted-name", item_id, ", ".join(joined),
            f"Rename to {fixed!r} (or put the words {', '.join(parts)} in the description) so "
            "they are indexed.",
            f"The analyzer keeps {', '.join(repr(w) for w in joined)} as one word and the "
            f"projection does not split it, so {', '.join(repr(p) for p in parts)} never match "
            "a query through the name.",
            "name", kind=kind)


def _iter_properties(schema: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(key, path, property schema) for every property, nested ones and object items included."""
    if not isinstance(schema, Mapping):
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, prop in props.items():
            ppath = f"{path}.properties.{key}"
            yield str(key), ppath, prop
            yield from _iter_properties(prop, ppath)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _iter_properties(items, path + ".items")


def _schema_rules(tool: Any) -> Iterator[Finding]:
    tid = tool.id
    for side, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
        for key, path, prop in _iter_properties(schema, side):
            # Output keys are the data's own vocabulary (p50, x, y): only inputs are told.
            if side == "input" and _VAGUE_PARAM_RE.match(key):
                described = isinstance(prop, Mapping) and isinstance(prop.get("description"), str)
                yield _finding(
                    "vague-parameter-name", tid, key,
                    f"Rename {key!r} to what it holds (e.g. 'customer_email', 'start_date')"
                    + ("" if described else " and give it a description") + ".",
                    f"The input parameter {key!r} adds no word a caller would type.",
                    path)
            if not isinstance(prop, Mapping):
                continue
            enum = prop.get("enum")
            if isinstance(enum, list):
                bad = [v for v in enum if not isinstance(v, str)]
                if bad:
                    yield _finding(
                        "non-string-enum", tid, json.dumps(bad),
                        "Use string values that say what they mean (e.g. \"low\", \"high\" "
                        f"instead of numbers), or explain each value in the description of {key!r}.",
                        f"Enum values {json.dumps(bad)} of {key!r} are not strings, so the "
                        "projection skips them.",
                        path + ".enum")
            if not any(k in prop for k in _TYPE_KEYS):
                yield _finding(
                    "untyped-property", tid, key,
                    f'Give {key!r} a "type" (e.g. "string") or a $ref.',
                    f"The {side} property {key!r} has no type.",
                    path)
    schema = tool.input_schema
    if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping) and schema[
        "properties"
    ]:
        keys = list(schema["properties"])
        if "required" not in schema:
            yield _finding(
                "missing-required", tid, ", ".join(keys),
                f'Add "required": [...] listing the arguments the tool cannot run without '
                f'(or "required": [] when all of {", ".join(keys)} are optional).',
                "The input schema has properties but no 'required' list.",
                "input.required")
        if schema.get("additionalProperties") is not False:
            yield _finding(
                "missing-additional-properties", tid, "additionalProperties",
                'Add "additionalProperties": false to the input schema.',
                "The input schema accepts arguments it does not declare.",
                "input.additionalProperties")


# --------------------------------------------------------------------------- near-duplicates


@dataclass(frozen=True)
class TermVectors:
    """Unit-length, idf-weighted term-count vectors of texts (rows of ``unit``).

    ``idf`` is ln(1 + (N - df + 0.5) / (df + 0.5)) over the texts given, so a
    term every text has weighs little; ``unit @ unit.T`` is their cosine.
    """

    unit: Any  # scipy.sparse matrix, one row per text
    term_lists: list[list[str]]
    vocab: dict[str, int]
    idf: Any  # numpy array, by vocab index

    def shared_terms(self, a: int, b: int) -> list[str]:
        """Terms of rows ``a`` and ``b`` in common, highest idf first."""
        shared = set(self.term_lists[a]) & set(self.term_lists[b])
        return sorted(shared, key=lambda t: (-self.idf[self.vocab[t]], t))


def term_vectors(texts: Sequence[str], analyzer: Any = None) -> TermVectors:
    """`TermVectors` of ``texts`` analysed with ``analyzer`` (default: the engine's)."""
    import numpy as np
    from scipy import sparse

    analyze = (analyzer or DEFAULT_ANALYZER).analyze
    term_lists = [analyze(t) for t in texts]
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for r, terms in enumerate(term_lists):
        for term, n in Counter(terms).items():
            rows.append(r)
            cols.append(vocab.setdefault(term, len(vocab)))
            vals.append(float(n))
    n_docs = len(texts)
    matrix = sparse.csr_matrix((vals, (rows, cols)), shape=(n_docs, len(vocab)))
    df = np.bincount(np.asarray(cols, dtype=np.int64), minlength=len(vocab))
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    weighted = matrix.multiply(idf[np.newaxis, :]).tocsr()
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return TermVectors(sparse.diags(1.0 / norms) @ weighted, term_lists, vocab, idf)


def _near_duplicates(items: Sequence[Any], texts: Sequence[str], kind: str,
                     threshold: float = NEAR_DUPLICATE_THRESHOLD) -> Iterator[Finding]:
    """Pairs whose idf-weighted term-count vectors have cosine >= ``threshold``."""
    if len(items) < 2:
        return
    from scipy import sparse

    vectors = term_vectors(texts)
    if not vectors.vocab:
        return
    term_lists = vectors.term_lists
    spelled: dict[int, dict[str, str]] = {}

    def words(i: int, terms: Iterable[str]) -> list[str]:
        """The terms as the item spells them (first occurrence); stems only when no word is."""
        if i not in spelled:
            spelled[i] = {}
            for tok in DEFAULT_ANALYZER.tokens(texts[i]):
                if tok.term is not None:
                    spelled[i].setdefault(tok.term, tok.word)
        return [spelled[i].get(t, t) for t in terms]

    sims = sparse.triu(vectors.unit @ vectors.unit.T, k=1).tocoo()
    for a, b, sim in sorted(zip(sims.row, sims.col, sims.data, strict=True)):
        if sim < threshold - 1e-9:
            continue
        if items[b].id < items[a].id:
            a, b = b, a
        first, second = items[a], items[b]
        ta, tb = set(term_lists[a]), set(term_lists[b])
        shared = vectors.shared_terms(a, b)
        only_a, only_b = sorted(ta - tb), sorted(tb - ta)
        yield _finding(
            "near-duplicate", first.id,
            ", ".join(words(a, shared[:15])) + ("…" if len(shared) > 15 else ""),
            f"Make each say what sets it apart (the object, the situation, the result) in words "
            f"callers use; today only the words {_fmt_terms(words(a, only_a))} vs "
            f"{_fmt_terms(words(b, only_b))} differ. If they do the same thing, merge them.",
            f"{first.id!r} and {second.id!r} share {len(shared)} of {plural(len(ta | tb), 'analysed term')} "
            f"(cosine {sim:.2f} over idf-weighted name, description and input-schema terms).",
            "", related=second.id, kind=kind)


def _fmt_terms(terms: Sequence[str], n: int = 6) -> str:
    if not terms:
        return "nothing"
    shown = ", ".join(terms[:n])
    return f"[{shown}{', …' if len(terms) > n else ''}]"


# --------------------------------------------------------------------------- query-set rules


def _query_rules(items: Sequence[Any], search_catalog: Any, judgments: Sequence[Judgment],
                 top_k: int, kind: str) -> Iterator[Finding]:
    ids = {it.id for it in items}
    by_id = {it.id: it for it in items}
    judged_for: dict[str, list[str]] = defaultdict(list)
    for j in judgments:
        for rid in sorted(j.relevant_ids):
            judged_for[rid].append(j.query)
    retrieved: set[str] = set()
    reached: set[str] = set()
    shadows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for j in judgments:
        hits = [h.id for h in search_catalog.search(j.query, top_k)]
        retrieved.update(hits)
        rel = j.relevant_ids
        reached.update(h for h in hits if h in rel)
        for r in sorted(rel & ids):
            above = hits[: hits.index(r)] if r in hits else hits[:1]
            for x in above:
                if x not in rel:
                    shadows[(x, r)].append(j.query)
    projection_terms: dict[str, set[str]] = {}

    def terms_of(item_id: str) -> set[str]:
        if item_id not in projection_terms:
            projection_terms[item_id] = set(
                DEFAULT_ANALYZER.analyze(search_catalog.projection_text(by_id[item_id]))
            )
        return projection_terms[item_id]

    for item in items:
        queries = judged_for.get(item.id, [])
        if queries and item.id not in reached:
            have = terms_of(item.id)
            missing: dict[str, str] = {}
            for q in queries:
                for tok in DEFAULT_ANALYZER.tokens(q):
                    if (tok.term and tok.term not in have and tok.word not in REQUEST_FILLER
                            and not tok.term.replace(".", "").isdigit()):
                        missing.setdefault(tok.term, tok.word)
            words = list(missing.values())[:8]
            yield _finding(
                "unreachable-tool", item.id, " | ".join(_truncate(q, 80) for q in queries[:3]),
                f"Work the callers' words into the description or a 'Use when ...' sentence: "
                f"{', '.join(words) if words else '(they already match; reduce overlap with the tools that outrank it)'}.",
                f"Judged relevant for {plural(len(queries), 'query', 'queries')} but "
                f"in the top {top_k} of none.",
                "", kind=kind)
        elif not queries and item.id not in retrieved:
            yield _finding(
                "unexercised-tool", item.id, "",
                f"Add judged queries, in users' words, for which {item.id!r} is the right answer.",
                f"No judged query names {item.id!r} and none retrieves it in the top {top_k}.",
                "", kind=kind)
    for (x, r), queries in sorted(shadows.items()):
        if x not in ids:
            continue
        if len(queries) >= SHADOW_MIN_QUERIES:
            shared = sorted(terms_of(x) & terms_of(r))
            yield _finding(
                "shadowing-tool", x, " | ".join(_truncate(q, 80) for q in queries[:3]),
                f"Narrow {x!r} to its own situation (what it does that {r!r} does not) and make "
                f"{r!r} name its callers' words; shared terms: {_fmt_terms(shared, 10)}.",
                f"{x!r} outranks the relevant {r!r} in {plural(len(queries), 'judged query', 'judged queries')}.",
                "", related=r, kind=kind)


# --------------------------------------------------------------------------- entry points


def lint_catalog(catalog: Any, judgments: Sequence[Judgment] | None = None, *,
                 top_k: int = 10, rules: Iterable[str] | None = None) -> list[Finding]:
    """Lint every tool and skill of ``catalog`` (anything with ``.tools`` and ``.skills``).

    With ``judgments`` the query-set rules run too: each judged query is
    searched with BM25 to depth ``top_k``. ``rules`` restricts the output to
    the given rule ids (raises QueryError on an unknown id).
    """
    selected = set(RULES) if rules is None else set(rules)
    unknown = selected - set(RULES)
    if unknown:
        raise QueryError(
            f"unknown lint {'rule' if len(unknown) == 1 else 'rules'} {', '.join(sorted(unknown))}; "
            f"valid rules: {', '.join(RULES)}"
        )
    from core.projection import project_skill, tool_parts

    tools = list(getattr(catalog, "tools", None) or [])
    skills = list(getattr(catalog, "skills", None) or [])
    example: dict[str, str] = {}  # item id -> its first judged query, quoted in suggestions
    for j in judgments or ():
        for rid in sorted(j.relevant_ids):
            example.setdefault(rid, j.query)
    findings: list[Finding] = []
    for tool in tools:
        findings.extend(_describe_rules(tool.id, tool.name, tool.description or "", "tool",
                                        example.get(tool.id)))
        findings.extend(_name_rules(tool.id, tool.name, "tool"))
        findings.extend(_schema_rules(tool))
    for skill in skills:
        findings.extend(_describe_rules(skill.id, skill.name, skill.description or "", "skill",
                                        example.get(skill.id)))
        findings.extend(_name_rules(skill.id, skill.name, "skill"))
        if not skill.tags:
            words = [w for w in DEFAULT_ANALYZER.analyze(_split_name(skill.name))][:3]
            findings.append(_finding(
                "skill-without-tags", skill.id, "",
                f"Add 2-5 tags naming the domain and task in callers' words"
                f"{' (e.g. ' + ', '.join(repr(w) for w in words) + ')' if words else ''}.",
                "The skill has no tags.", "tags", kind="skill"))
    if "near-duplicate" in selected:
        texts = [" ".join(p.text for p in tool_parts(t.name, t.description, t.input_schema, {}))
                 for t in tools]
        findings.extend(_near_duplicates(tools, texts, "tool"))
        findings.extend(_near_duplicates(skills, [project_skill(s) for s in skills], "skill"))
    if judgments is not None and any(RULES[r].needs_queries for r in selected):
        from core.search import SkillCatalog, ToolCatalog

        if tools:
            findings.extend(_query_rules(tools, ToolCatalog(tools), judgments, top_k, "tool"))
        if skills:
            judged = {i for j in judgments for i in j.relevant_ids}
            if judged & {s.id for s in skills} or not tools:
                findings.extend(
                    _query_rules(skills, SkillCatalog(skills), judgments, top_k, "skill")
                )
    findings = [f for f in findings if f.rule in selected]
    return sorted(set(findings), key=Finding.sort_key)


def exit_code(findings: Iterable[Finding], fail_on: str = DEFAULT_FAIL_ON) -> int:
    """1 when any finding is at least as severe as ``fail_on`` (info < warning < error), else 0."""
    if fail_on not in _SEVERITY_RANK:
        raise QueryError(f"unknown severity {fail_on!r}; valid: {', '.join(SEVERITIES)}")
    limit = _SEVERITY_RANK[fail_on]
    return 1 if any(_SEVERITY_RANK[f.severity] <= limit for f in findings) else 0


def format_findings(findings: Sequence[Finding]) -> str:
    """Plain-text report grouped by item, worst severity first."""
    if not findings:
        return "no findings"
    lines: list[str] = []
    for f in findings:
        where = f"{f.kind} {f.tool_id}" + (f" ({f.path})" if f.path else "")
        lines.append(f"{f.severity.upper():7} {f.rule:30} {f.category:7} {where}")
        if f.message:
            lines.append(f"        {f.message}")
        if f.text:
            lines.append(f"        text: {_truncate(f.text, 160)}")
        lines.append(f"        fix:  {f.suggestion}")
    counts = Counter(f.severity for f in findings)
    lines.append("")
    lines.append(", ".join(plural(counts.get(v, 0), v, "info" if v == "info" else None)
                           for v in SEVERITIES))
    return "\n".join(lines)


def _cmd_lint(args: argparse.Namespace) -> int:
    from core.catalog import load_catalog, require_items
    from core.evaluation import load_queries

    try:
        catalog = require_items(load_catalog(args.catalog), args.catalog)
        judgments = load_queries(args.queries) if args.queries else None
        rules = set(args.rule) if args.rule else set(RULES)
        if args.ignore:
            unknown = set(args.ignore) - set(RULES)
            if unknown:
                raise QueryError(f"unknown lint {'rule' if len(unknown) == 1 else 'rules'} "
                                 f"{', '.join(sorted(unknown))}; valid rules: {', '.join(RULES)}")
            rules -= set(args.ignore)
        if args.top_k < 1:
            raise QueryError(f"--top-k must be at least 1, got {args.top_k}")
        findings = lint_catalog(catalog, judgments, top_k=args.top_k, rules=rules)
    except RanklensError as exc:
        print(f"ranklens lint: error: {exc}", file=sys.stderr)
        return 2
    code = exit_code(findings, args.fail_on)
    if args.json:
        counts = Counter(f.severity for f in findings)
        print(json.dumps({
            "catalog": str(args.catalog),
            "exit_code": code,
            "fail_on": args.fail_on,
            "counts": {s: counts.get(s, 0) for s in SEVERITIES},
            "findings": [f.to_dict() for f in findings],
        }, indent=1, sort_keys=True, ensure_ascii=False))
    else:
        print(format_findings(findings))
    return code


def format_rules() -> str:
    """The rule registry as text (``ranklens lint --list-rules``)."""
    return "\n".join(f"{r.id:30} {r.severity:8} {r.category:8} {r.rationale}" for r in RULES.values())


class _ListRules(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        print(format_rules())
        parser.exit(0)


def add_cli(subparsers: Any) -> None:
    """Add ``ranklens lint CATALOG [--queries Q.jsonl] [--fail-on LEVEL] [--json]``."""
    p = subparsers.add_parser(
        "lint",
        help="check tool and skill definitions: what hurts their ranking, and schema hygiene",
        description="Check every definition against two kinds of rules: 'ranking' rules, drawn "
        "from how the index works (what a definition gives a query to match), and 'schema' rules "
        "(untyped properties, no 'required', no 'additionalProperties: false'), which do not "
        "change the ranking but leave the agent guessing how to call the tool. Each finding "
        "shows its category. "
        "With --queries, also report tools no judged query reaches and tools that shadow "
        "another. Exit code: 0 no finding at or above the --fail-on severity, 1 at least one "
        "(by default any warning or error), 2 bad input (unreadable catalog or query set, "
        "unknown rule).",
    )
    p.add_argument("catalog", help="catalog file or folder")
    p.add_argument("--queries", metavar="Q.jsonl", help="judged query set for the query rules")
    p.add_argument("--top-k", type=int, default=10,
                   help="depth that counts as reached (default 10)")
    p.add_argument("--rule", action="append", metavar="RULE", help="only this rule; repeatable")
    p.add_argument("--ignore", action="append", metavar="RULE", help="skip this rule; repeatable")
    p.add_argument("--list-rules", action=_ListRules, nargs=0, help="list the rules and exit")
    p.add_argument("--fail-on", choices=SEVERITIES[::-1], default=DEFAULT_FAIL_ON,
                   help="least severe finding that makes the exit code 1 (default warning; "
                   "error gates on errors only, info on any finding)")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of text")
    p.set_defaults(func=_cmd_lint)
