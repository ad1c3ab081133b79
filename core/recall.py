"""Eager recall: answer `search_capabilities` for the model before it asks.

When a transcript ends with a user turn, eager recall appends a synthetic
assistant tool call to `search_capabilities` (the user's text as the query)
and its tool result (the top-K tools and skills). Assistant messages and tool
results never trigger it, so running it twice changes nothing the second time.
Call ids are derived from the transcript position and the query, and the JSON
is serialised one way only, so the same transcript always yields the same bytes.

Three message shapes are read and written:

- ``ai-sdk`` (Vercel AI SDK ``ModelMessage``): ``{role, content}`` where content
  is a string or parts ``{type: "text", text}``, ``{type: "tool-call",
  toolCallId, toolName, input}``; tool results are ``role: "tool"`` messages of
  ``{type: "tool-result", toolCallId, toolName, output: {type: "json"|"text", value}}``.
- ``openai`` (Chat Completions): assistant ``tool_calls: [{id, type: "function",
  function: {name, arguments}}]`` with ``arguments`` a JSON string, then
  ``{role: "tool", tool_call_id, content}``.
- ``anthropic`` (Messages): assistant ``content: [{type: "tool_use", id, name,
  input}]``, then a *user* message ``content: [{type: "tool_result",
  tool_use_id, content}]`` — a user message that carries tool results is not a
  user turn.

`read_messages` turns any of them into neutral `Message`s and `write_messages`
writes neutral messages in any shape; a message that the writer would not
reproduce byte for byte is kept verbatim for its own shape.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from core.capabilities import (
    DEFAULT_TOP_K_SKILLS,
    DEFAULT_TOP_K_TOOLS,
    SEARCH_CAPABILITIES,
    clamp_top_k,
)
from core.errors import RanklensError

if TYPE_CHECKING:
    from core.capabilities import CapabilityHost

Format = Literal["ai-sdk", "openai", "anthropic"]
FORMATS: tuple[str, ...] = ("ai-sdk", "openai", "anthropic")
DEFAULT_FORMAT: Format = "ai-sdk"
"""The shape assumed when a transcript has only plain text messages (all shapes read those alike)."""


class TranscriptError(RanklensError, ValueError):
    """A transcript or conversation could not be read: the message names the item and the fix."""


def canonical_json(value: Any) -> str:
    """The one JSON serialisation used for transcripts, tool arguments and prompts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def recall_call_id(index: int, query: str) -> str:
    """The deterministic id of the synthetic call answering the user message at `index`."""
    return "recall_" + hashlib.sha256(f"{index}:{query}".encode()).hexdigest()[:16]


# --- neutral messages ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asks for tool `name` with `input` (a JSON value, usually an object)."""

    id: str
    name: str
    input: Any


@dataclass(frozen=True)
class ToolResult:
    """The answer to call `call_id`: a string or a JSON value."""

    call_id: str
    output: Any
    name: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class RawPart:
    """A part with no neutral form (an image, reasoning…), kept verbatim for shape `format`."""

    format: str
    data: dict[str, Any]


Part = TextPart | ToolCall | ToolResult | RawPart


@dataclass(frozen=True)
class Message:
    """One message in neutral form.

    `role` is ``system``, ``user``, ``assistant`` or ``tool`` (a message made only of
    tool results). `raw` holds the original dict when the writer for its shape
    (`raw_format`) would not reproduce it exactly; it is written back verbatim.
    """

    role: str
    parts: tuple[Part, ...]
    raw: dict[str, Any] | None = field(default=None, compare=False)
    raw_format: str | None = field(default=None, compare=False)

    @property
    def text(self) -> str:
        """The text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResult))


def _check_format(format: str) -> Format:
    if format not in FORMATS:
        raise TranscriptError(f"unknown message format {format!r}; valid: {', '.join(FORMATS)}")
    return format  # type: ignore[return-value]


# --- shape detection -----------------------------------------------------------------------------

_ANTHROPIC_PARTS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"}
_AI_SDK_PARTS = {"tool-call", "tool-result", "reasoning", "tool-approval-request"}
_OPENAI_PARTS = {"image_url", "input_audio", "refusal"}


def detect_format(messages: Sequence[Any]) -> Format | None:
    """The shape the messages are written in, or None when nothing tells (plain text only)."""
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if "tool_calls" in message or "tool_call_id" in message:
            return "openai"
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, Mapping) else None
                if kind in _ANTHROPIC_PARTS or (kind == "image" and "source" in part):
                    return "anthropic"
                if kind in _AI_SDK_PARTS or (kind in ("image", "file") and "mediaType" in part):
                    return "ai-sdk"
                if kind in _OPENAI_PARTS:
                    return "openai"
        if message.get("role") == "tool":
            return "ai-sdk" if isinstance(content, list) else "openai"
    return None


# --- reading -------------------------------------------------------------------------------------

_ROLES = {
    "ai-sdk": ("system", "user", "assistant", "tool"),
    "openai": ("system", "developer", "user", "assistant", "tool"),
    "anthropic": ("user", "assistant"),
}


def _where(index: int) -> str:
    return f"message {index}"


def _text_or_parts(content: Any, index: int, fmt: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                raise TranscriptError(
                    f"{_where(index)}: every content part must be an object with a string `type`"
                )
        return list(content)
    if content is None:
        return []
    raise TranscriptError(
        f"{_where(index)}: `content` must be a string or a list of parts in the {fmt} shape, "
        f"got {type(content).__name__}"
    )


def _parse_arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def _parse_result(content: str) -> Any:
    """A JSON-string tool result as its value when it is a canonical JSON object or array.

    Only canonical strings are parsed, so writing the value back gives the same string.
    """
    if not content.startswith(("{", "[")):
        return content
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return content
    return value if canonical_json(value) == content else content


_AI_SDK_OUTPUTS = {"json": False, "text": False, "error-json": True, "error-text": True}


def _read_ai_sdk(message: Mapping[str, Any], index: int) -> Message:
    role = message["role"]
    parts: list[Part] = []
    for part in _text_or_parts(message.get("content"), index, "ai-sdk"):
        kind = part["type"]
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextPart(part["text"]))
        elif kind == "tool-call" and role == "assistant":
            parts.append(
                ToolCall(str(part.get("toolCallId")), str(part.get("toolName")), part.get("input"))
            )
        elif kind == "tool-result" and role == "tool":
            output = part.get("output")
            if (
                isinstance(output, Mapping)
                and output.get("type") in _AI_SDK_OUTPUTS
                and "value" in output
            ):
                parts.append(
                    ToolResult(
                        str(part.get("toolCallId")),
                        output["value"],
                        part.get("toolName"),
                        _AI_SDK_OUTPUTS[output["type"]],
                    )
                )
            else:
                parts.append(RawPart("ai-sdk", dict(part)))
        else:
            parts.append(RawPart("ai-sdk", dict(part)))
    return Message(role, tuple(parts))


def _read_openai(message: Mapping[str, Any], index: int) -> Message:
    role = message["role"]
    if role == "developer":
        role = "system"
    if role == "tool":
        content = message.get("content")
        if not isinstance(content, str):
            content = "".join(p.get("text", "") for p in _text_or_parts(content, index, "openai"))
        return Message(
            "tool", (ToolResult(str(message.get("tool_call_id")), _parse_result(content)),)
        )
    parts: list[Part] = []
    for part in _text_or_parts(message.get("content"), index, "openai"):
        if part["type"] == "text" and isinstance(part.get("text"), str):
            if part["text"] or not isinstance(message.get("content"), str):
                parts.append(TextPart(part["text"]))
        else:
            parts.append(RawPart("openai", dict(part)))
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TranscriptError(f"{_where(index)}: `tool_calls` must be a list")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise TranscriptError(
                f"{_where(index)}: each tool call needs `function: {{name, arguments}}`"
            )
        parts.append(
            ToolCall(
                str(call.get("id")),
                str(function.get("name")),
                _parse_arguments(function.get("arguments")),
            )
        )
    return Message(role, tuple(parts))


def _read_anthropic(message: Mapping[str, Any], index: int) -> Message:
    role = message["role"]
    parts: list[Part] = []
    for part in _text_or_parts(message.get("content"), index, "anthropic"):
        kind = part["type"]
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextPart(part["text"]))
        elif kind == "tool_use" and role == "assistant":
            parts.append(ToolCall(str(part.get("id")), str(part.get("name")), part.get("input")))
        elif kind == "tool_result" and role == "user":
            content = part.get("content", "")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, Mapping))
            if isinstance(content, str):
                content = _parse_result(content)
            parts.append(
                ToolResult(str(part.get("tool_use_id")), content, None, bool(part.get("is_error")))
            )
        else:
            parts.append(RawPart("anthropic", dict(part)))
    if parts and all(isinstance(p, ToolResult) for p in parts):
        role = "tool"
    return Message(role, tuple(parts))


_READERS = {"ai-sdk": _read_ai_sdk, "openai": _read_openai, "anthropic": _read_anthropic}


def read_message(message: Any, index: int, format: str) -> Message:
    """One message in neutral form; raises `TranscriptError` naming the message and the fix."""
    fmt = _check_format(format)
    if not isinstance(message, Mapping):
        raise TranscriptError(f"{_where(index)}: expected an object with `role` and `content`")
    role = message.get("role")
    if role not in _ROLES[fmt]:
        raise TranscriptError(
            f"{_where(index)}: role {role!r} is not valid in the {fmt} shape; "
            f"valid: {', '.join(_ROLES[fmt])}"
        )
    neutral = _READERS[fmt](message, index)
    if _write_one(neutral, fmt, {}) != [dict(message)]:
        return Message(neutral.role, neutral.parts, dict(message), fmt)
    return neutral


def read_messages(messages: Any, format: str | None = None) -> list[Message]:
    """Neutral messages from a list in any shape (detected unless `format` is given)."""
    if not isinstance(messages, list):
        raise TranscriptError('a transcript must be a JSON list of messages or {"messages": [...]}')
    fmt = _check_format(format) if format else detect_format(messages) or DEFAULT_FORMAT
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        message = read_message(m, i, fmt)
        names.update((c.id, c.name) for c in message.tool_calls)
        if any(r.name is None and r.call_id in names for r in message.tool_results):
            # Shapes without a tool name on results (openai, anthropic): take it from the call.
            parts = tuple(
                ToolResult(p.call_id, p.output, names.get(p.call_id), p.is_error)
                if isinstance(p, ToolResult) and p.name is None
                else p
                for p in message.parts
            )
            message = Message(message.role, parts, message.raw, message.raw_format)
        out.append(message)
    return out


# --- writing -------------------------------------------------------------------------------------


def _raw_parts(message: Message, fmt: str) -> list[dict[str, Any]]:
    out = []
    for part in message.parts:
        if isinstance(part, RawPart):
            if part.format != fmt:
                raise TranscriptError(
                    f"a {message.role} message has a {part.data.get('type')!r} part of the "
                    f"{part.format} shape that has no {fmt} form; write it in {part.format}"
                )
            out.append(part.data)
    return out


def _result_text(output: Any) -> str:
    return output if isinstance(output, str) else canonical_json(output)


def _content(parts: list[dict[str, Any]], allow_string: bool = True) -> Any:
    if allow_string and len(parts) == 1 and parts[0].get("type") == "text":
        return parts[0]["text"]
    return parts


def _write_ai_sdk(message: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results = message.tool_results
    if results:
        content = []
        for r in results:
            kind = ("error-" if r.is_error else "") + (
                "text" if isinstance(r.output, str) else "json"
            )
            content.append(
                {
                    "type": "tool-result",
                    "toolCallId": r.call_id,
                    "toolName": r.name or names.get(r.call_id, ""),
                    "output": {"type": kind, "value": r.output},
                }
            )
        out.append({"role": "tool", "content": content})
    if message.role == "tool":
        raws = _raw_parts(message, "ai-sdk")
        if raws and out:
            out[-1]["content"].extend(raws)
        elif raws:
            out.append({"role": "tool", "content": raws})
        return out
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall):
            parts.append(
                {
                    "type": "tool-call",
                    "toolCallId": part.id,
                    "toolName": part.name,
                    "input": part.input,
                }
            )
        elif isinstance(part, RawPart):
            parts.extend(_raw_parts(Message(message.role, (part,)), "ai-sdk"))
    if message.role == "system":
        out.append({"role": "system", "content": message.text})
    elif parts or not results:
        out.append({"role": message.role, "content": _content(parts)})
    return out


def _write_openai(message: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": r.call_id, "content": _result_text(r.output)}
        for r in message.tool_results
    ]
    if message.role == "tool":
        _raw_parts(message, "openai")
        return out
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, RawPart):
            parts.extend(_raw_parts(Message(message.role, (part,)), "openai"))
    calls = message.tool_calls
    if message.role == "assistant":
        if calls and not parts:
            content: Any = None
        elif all(p["type"] == "text" for p in parts):
            content = "".join(p["text"] for p in parts)
        else:
            content = parts
        written: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            written["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _result_text(c.input)},
                }
                for c in calls
            ]
        out.append(written)
    elif message.role == "system":
        out.append({"role": "system", "content": message.text})
    elif parts or not out:
        out.append({"role": message.role, "content": _content(parts) if parts else ""})
    return out


def _write_anthropic(message: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    if message.role == "system":
        raise TranscriptError(
            "the anthropic shape keeps the system prompt outside the messages; "
            'put it in the transcript\'s top-level "system" field'
        )
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}
            )
        elif isinstance(part, ToolResult):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.call_id,
                "content": _result_text(part.output),
            }
            if part.is_error:
                block["is_error"] = True
            blocks.append(block)
        else:
            blocks.extend(_raw_parts(Message(message.role, (part,)), "anthropic"))
    role = "user" if message.role == "tool" else message.role
    return [{"role": role, "content": _content(blocks, allow_string=role != "tool")}]


_WRITERS = {"ai-sdk": _write_ai_sdk, "openai": _write_openai, "anthropic": _write_anthropic}


def _write_one(message: Message, fmt: str, names: dict[str, str]) -> list[dict[str, Any]]:
    if message.raw is not None and message.raw_format == fmt:
        return [message.raw]
    for call in message.tool_calls:
        names[call.id] = call.name
    return _WRITERS[fmt](message, names)


def write_messages(messages: Sequence[Message], format: str) -> list[dict[str, Any]]:
    """Messages as JSON-ready dicts in `format`; tool result names are filled from earlier calls."""
    fmt = _check_format(format)
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        out.extend(_write_one(message, fmt, names))
    return out


# --- the recall itself ---------------------------------------------------------------------------


def user_turn_text(message: Any, format: str) -> str | None:
    """The text of `message` when it is a user turn that should trigger recall, else None.

    Only ``role: "user"`` messages with some non-blank text count; an Anthropic user
    message that carries a ``tool_result`` block is a tool result, not a user turn.
    """
    fmt = _check_format(format)
    if not isinstance(message, Mapping) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        kinds = {p.get("type") for p in content if isinstance(p, Mapping)}
        if fmt == "anthropic" and "tool_result" in kinds:
            return None
        if "tool-result" in kinds:
            return None
        text = "\n".join(
            p["text"]
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    else:
        return None
    return text if text.strip() else None


def recall_exchange(
    host: CapabilityHost,
    query: str,
    call_id: str,
    *,
    top_k: int = DEFAULT_TOP_K_TOOLS,
    top_k_skills: int = DEFAULT_TOP_K_SKILLS,
) -> tuple[Message, Message]:
    """The synthetic assistant call to `search_capabilities` and its result, in neutral form.

    The search goes through the host's capability tool, so it is traced with origin `agent`.
    """
    request: dict[str, Any] = {"query": query, "topKTools": clamp_top_k(top_k, DEFAULT_TOP_K_TOOLS)}
    if host.has_skills:
        request["topKSkills"] = clamp_top_k(top_k_skills, DEFAULT_TOP_K_SKILLS)
    output = host.search_capabilities(request)
    return (
        Message("assistant", (ToolCall(call_id, SEARCH_CAPABILITIES, request),)),
        Message("tool", (ToolResult(call_id, output, SEARCH_CAPABILITIES),)),
    )


@dataclass(frozen=True)
class RecallResult:
    """A transcript after eager recall.

    `messages` is the whole transcript in `format` (the input messages untouched, plus
    the synthetic pair when `triggered`). `output` is the `search_capabilities` result.
    """

    messages: list[dict[str, Any]]
    format: Format
    triggered: bool
    query: str | None = None
    call_id: str | None = None
    output: dict[str, Any] | None = None

    def to_json(self) -> str:
        return canonical_json(self.messages)


def eager_recall(
    host: CapabilityHost,
    messages: Sequence[Any],
    *,
    format: str | None = None,
    top_k: int = DEFAULT_TOP_K_TOOLS,
    top_k_skills: int = DEFAULT_TOP_K_SKILLS,
) -> RecallResult:
    """Append the recall pair when the transcript ends with a user turn; otherwise return it unchanged.

    The transcript is validated in `format` (detected when None; plain text defaults to ai-sdk).
    """
    messages = list(messages)
    fmt = _check_format(format) if format else detect_format(messages) or DEFAULT_FORMAT
    read_messages(messages, fmt)  # validate every message before answering
    copied: list[dict[str, Any]] = json.loads(canonical_json(messages))
    query = user_turn_text(messages[-1], fmt) if messages else None
    if query is None:
        return RecallResult(copied, fmt, False)
    call_id = recall_call_id(len(messages) - 1, query)
    call, result = recall_exchange(host, query, call_id, top_k=top_k, top_k_skills=top_k_skills)
    names = {call_id: SEARCH_CAPABILITIES}
    pair = _write_one(call, fmt, names) + _write_one(result, fmt, names)
    output = result.tool_results[0].output
    return RecallResult(copied + pair, fmt, True, query, call_id, output)


# --- transcript files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Transcript:
    """A transcript file: its messages, and the enclosing object when the file was `{"messages": [...]}`."""

    messages: list[Any]
    document: dict[str, Any] | None = None

    @property
    def format_hint(self) -> str | None:
        hint = self.document.get("format") if self.document else None
        return hint if isinstance(hint, str) else None

    def with_messages(self, messages: list[dict[str, Any]]) -> Any:
        """The file's JSON value with its messages replaced."""
        if self.document is None:
            return messages
        return {**self.document, "messages": messages}


def parse_transcript(data: Any, source: str = "<input>") -> Transcript:
    """A `Transcript` from JSON data: a list of messages or ``{"messages": [...], ...}``.

    Raises `TranscriptError` naming ``source`` and the fix; a conversation file
    (``{"system", "turns"}``, what `ranklens cache-sim` replays) is recognised and
    sent there.
    """
    if isinstance(data, list):
        return Transcript(data)
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        return Transcript(list(data["messages"]), dict(data))
    if isinstance(data, Mapping) and "turns" in data:
        raise TranscriptError(
            f'{source}: this is a conversation ({{"system", "turns": [{{"user": ...}}]}}), which '
            "`ranklens cache-sim CATALOG CONVERSATION.json` replays; `recall` takes a transcript: "
            'a JSON list of messages or {"messages": [...]} in the OpenAI, Anthropic or AI SDK '
            f"shape. Fix: run `ranklens cache-sim CATALOG {source}`, or pass a transcript such "
            "as sample_catalogs/conversations/transcript.openai.json"
        )
    raise TranscriptError(
        f'{source}: expected a JSON list of messages or an object with a "messages" list. '
        "Fix: pass a transcript in the OpenAI, Anthropic or AI SDK shape, such as "
        "sample_catalogs/conversations/transcript.openai.json"
    )


def load_json(path: str | Path) -> Any:
    """Read a JSON file; raises `TranscriptError` naming the file and the problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise TranscriptError(f"{p}: cannot read the file ({err.strerror or err})") from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise TranscriptError(
            f"{p}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from err


def load_transcript(path: str | Path) -> Transcript:
    return parse_transcript(load_json(path), str(path))


# --- CLI -----------------------------------------------------------------------------------------


def _summarise_output(output: Any) -> str:
    if isinstance(output, Mapping) and "tools" in output:
        # Hits come grouped by server (in order of each server's first hit), as
        # the model sees them; name the groups so the scores don't look unsorted.
        groups = [
            f"[{g.get('server', {}).get('name', '?')}] "
            + ", ".join(f"{h['toolId']} ({h['score']:.3f})" for h in g.get("hits", []))
            for g in output["tools"].get("groups", [])
        ]
        skills = [f"{s['skillId']} ({s['score']:.3f})" for s in output.get("skills", [])]
        line = "tools by server: " + ("; ".join(groups) or "none")
        if skills:
            line += " | skills: " + ", ".join(skills)
        return line
    text = _result_text(output)
    return text if len(text) <= 120 else text[:119] + "…"


def format_transcript(messages: Sequence[Message]) -> str:
    """A readable rendering: one block per message, tool calls and results on their own lines."""
    lines = []
    for i, m in enumerate(messages):
        lines.append(f"[{i}] {m.role}")
        for part in m.parts:
            if isinstance(part, TextPart):
                lines.extend("    " + line for line in part.text.splitlines() or [""])
            elif isinstance(part, ToolCall):
                lines.append(f"    → call {part.name} {canonical_json(part.input)}  (id {part.id})")
            elif isinstance(part, ToolResult):
                lines.append(f"    ← result {part.call_id}: {_summarise_output(part.output)}")
            else:
                lines.append(f"    ({part.data.get('type')} part)")
    return "\n".join(lines)


def _fail(command: str, err: Exception) -> int:
    print(f"ranklens {command}: error: {err}", file=sys.stderr)
    return 2


def run_recall(args: argparse.Namespace) -> int:
    """`ranklens recall CATALOG TRANSCRIPT.json`."""
    from core.capabilities import CapabilityHost
    from core.catalog import load_catalog, require_items

    try:
        transcript = load_transcript(args.transcript)
        catalog = require_items(load_catalog(args.catalog), args.catalog)
        host = CapabilityHost.from_catalog(catalog, method=args.method)
        result = eager_recall(
            host,
            transcript.messages,
            format=args.format or transcript.format_hint,
            top_k=args.top_k,
            top_k_skills=args.top_k_skills,
        )
    except (RanklensError, ValueError, OSError) as err:
        return _fail("recall", err)
    if args.json:
        # Not sorted: the messages keep their keys in the order the model receives them.
        print(canonical_json(transcript.with_messages(result.messages)))
        return 0
    status = (
        f"recall: appended search_capabilities for {result.query!r} (call {result.call_id})"
        if result.triggered
        else "recall: last message is not a user turn; transcript unchanged"
    )
    print(f"format: {result.format}")
    print(status)
    print(format_transcript(read_messages(result.messages, result.format)))
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_cli(subparsers: Any) -> None:
    """Add `ranklens recall` to the CLI."""
    p = subparsers.add_parser(
        "recall",
        help="append the eager-recall search_capabilities call and result to a transcript",
        description=(
            "When the transcript ends with a user turn, append a synthetic assistant call to "
            "search_capabilities (the user's text as the query) and its result, in the "
            "transcript's own message shape. Same transcript, same bytes."
        ),
    )
    p.add_argument("catalog", help="catalog file or folder")
    p.add_argument("transcript", help='JSON list of messages, or {"messages": [...]}')
    p.add_argument(
        "--format", choices=FORMATS, default=None, help="message shape (default: detected)"
    )
    p.add_argument(
        "--top-k",
        type=_positive_int,
        default=DEFAULT_TOP_K_TOOLS,
        help="tools to recall (1..50, default 5)",
    )
    p.add_argument(
        "--top-k-skills",
        type=_positive_int,
        default=DEFAULT_TOP_K_SKILLS,
        help="skills to recall (default 3)",
    )
    p.add_argument(
        "--method", choices=("bm25", "semantic", "hybrid"), default="bm25", help="retrieval method"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the augmented transcript as canonical JSON (keys in the order the model "
        "receives them, not sorted)",
    )
    p.set_defaults(func=run_recall)
