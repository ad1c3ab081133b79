"""Tests of core.recall: trigger rules, deterministic bytes, the three message shapes, the CLI."""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from core.capabilities import SEARCH_CAPABILITIES, CapabilityHost
from core.catalog import Skill, Tool
from core.recall import (
    Message,
    RawPart,
    TextPart,
    ToolCall,
    ToolResult,
    TranscriptError,
    add_cli,
    canonical_json,
    detect_format,
    eager_recall,
    parse_transcript,
    read_messages,
    recall_call_id,
    user_turn_text,
    write_messages,
)
from core.search import SkillCatalog, ToolCatalog

ROOT = Path(__file__).parent.parent
CONVERSATIONS = ROOT / "sample_catalogs" / "conversations"
SAMPLE_CATALOG = ROOT / "sample_catalogs" / "mcp_workspace.json"

TOOLS = [
    Tool(id="cal__list_events", name="list_events", description="List calendar events in a time window"),
    Tool(id="mail__search", name="search", description="Search email messages"),
    Tool(id="weather", name="weather", description="Get the weather forecast for a city"),
]
FIXED_OUTPUT = {"tools": {"groups": [{"server": {"name": "weather"}, "hits": [
    {"toolId": "weather", "score": 1.5, "description": "Get the weather", "inputSchema": {}}]}]},
    "skills": []}


class StubHost:
    """Answers search_capabilities with a fixed output and remembers the requests."""

    has_skills = False

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def search_capabilities(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        return copy.deepcopy(FIXED_OUTPUT)


def real_host() -> CapabilityHost:
    skills = [Skill(id="brief", name="brief", description="Morning briefing", tools=["cal__list_events"])]
    return CapabilityHost(ToolCatalog(TOOLS), SkillCatalog(skills))


ID0 = recall_call_id(0, "weather in Paris")


# --- call ids and serialisation -----------------------------------------------------------------


def test_call_id_is_derived_from_position_and_query() -> None:
    expected = "recall_" + hashlib.sha256(b"0:weather in Paris").hexdigest()[:16]
    assert recall_call_id(0, "weather in Paris") == expected
    assert recall_call_id(2, "weather in Paris") != ID0
    assert recall_call_id(0, "weather in Rome") != ID0


def test_canonical_json_is_compact_unicode_and_keeps_key_order() -> None:
    assert canonical_json({"b": "é", "a": [1, None]}) == '{"b":"é","a":[1,null]}'


# --- the synthetic pair, in each shape ----------------------------------------------------------


def test_ai_sdk_pair() -> None:
    host = StubHost()
    result = eager_recall(host, [{"role": "user", "content": "weather in Paris"}], format="ai-sdk")
    assert result.triggered and result.query == "weather in Paris" and result.call_id == ID0
    assert host.requests == [{"query": "weather in Paris", "topKTools": 5}]
    assert result.messages[1:] == [
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": ID0,
            "toolName": "search_capabilities", "input": {"query": "weather in Paris", "topKTools": 5}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": ID0,
            "toolName": "search_capabilities", "output": {"type": "json", "value": FIXED_OUTPUT}}]},
    ]


def test_openai_pair() -> None:
    result = eager_recall(StubHost(), [{"role": "user", "content": "weather in Paris"}],
                          format="openai", top_k=3)
    assert result.messages[1:] == [
        {"role": "assistant", "content": None, "tool_calls": [{"id": ID0, "type": "function",
            "function": {"name": "search_capabilities",
                         "arguments": '{"query":"weather in Paris","topKTools":3}'}}]},
        {"role": "tool", "tool_call_id": ID0, "content": canonical_json(FIXED_OUTPUT)},
    ]


def test_anthropic_pair() -> None:
    result = eager_recall(StubHost(), [{"role": "user", "content": "weather in Paris"}], format="anthropic")
    assert result.messages[1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": ID0, "name": "search_capabilities",
            "input": {"query": "weather in Paris", "topKTools": 5}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ID0,
            "content": canonical_json(FIXED_OUTPUT)}]},
    ]


def test_recall_asks_for_skills_only_when_the_host_has_them() -> None:
    host = real_host()
    result = eager_recall(host, [{"role": "user", "content": "morning briefing"}], top_k=2, top_k_skills=1)
    call = result.messages[1]["content"][0]
    assert call["input"] == {"query": "morning briefing", "topKTools": 2, "topKSkills": 1}
    assert result.output == host.search_capabilities(call["input"])
    assert [s["skillId"] for s in result.output["skills"]] == ["brief"]


def test_recall_searches_are_traced_as_agent() -> None:
    host = real_host()
    eager_recall(host, [{"role": "user", "content": "weather"}])
    assert {e.origin for e in host.trace} == {"agent"}
    assert len(host.trace) == 2  # tools and skills


# --- trigger rules ------------------------------------------------------------------------------

NOT_TRIGGERING = {
    "ai-sdk assistant": ("ai-sdk", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]),
    "ai-sdk tool result": ("ai-sdk", [
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "weather",
                                      "output": {"type": "text", "value": "sunny"}}]},
    ]),
    "openai tool result": ("openai", [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]),
    "openai system": ("openai", [{"role": "system", "content": "be brief"}]),
    "anthropic tool_result user message": ("anthropic", [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}]},
    ]),
    "anthropic tool_result with text": ("anthropic", [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "sunny"},
                                     {"type": "text", "text": "and tomorrow?"}]},
    ]),
    "blank user text": ("ai-sdk", [{"role": "user", "content": "   "}]),
    "empty transcript": ("ai-sdk", []),
}


@pytest.mark.parametrize("case", sorted(NOT_TRIGGERING))
def test_only_a_user_turn_triggers(case: str) -> None:
    fmt, messages = NOT_TRIGGERING[case]
    host = StubHost()
    result = eager_recall(host, copy.deepcopy(messages), format=fmt)
    assert not result.triggered
    assert result.messages == messages
    assert host.requests == []


@pytest.mark.parametrize(
    ("fmt", "message", "text"),
    [
        ("ai-sdk", {"role": "user", "content": "plain"}, "plain"),
        ("ai-sdk", {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "a\nb"),
        ("openai", {"role": "user", "content": [{"type": "text", "text": "look"},
                                                {"type": "image_url", "image_url": {"url": "x"}}]}, "look"),
        ("anthropic", {"role": "user", "content": [{"type": "text", "text": "hi"}]}, "hi"),
        ("anthropic", {"role": "assistant", "content": "hi"}, None),
    ],
)
def test_user_turn_text(fmt: str, message: dict[str, Any], text: str | None) -> None:
    assert user_turn_text(message, fmt) == text


def test_recall_is_idempotent_and_byte_identical() -> None:
    transcript = json.loads((CONVERSATIONS / "transcript.anthropic.json").read_text())["messages"]
    first = eager_recall(real_host(), transcript)
    again = eager_recall(real_host(), transcript)
    assert first.triggered
    assert first.to_json().encode() == again.to_json().encode()
    assert first.call_id == recall_call_id(len(transcript) - 1, transcript[-1]["content"])
    second = eager_recall(real_host(), first.messages)
    assert not second.triggered
    assert second.to_json() == first.to_json()
    assert first.messages[: len(transcript)] == transcript  # the input is untouched


def test_recall_does_not_mutate_its_input() -> None:
    messages = [{"role": "user", "content": "weather"}]
    eager_recall(StubHost(), messages)
    assert messages == [{"role": "user", "content": "weather"}]


# --- shapes: detection, reading, writing --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("transcript.ai-sdk.json", "ai-sdk"), ("transcript.openai.json", "openai"),
     ("transcript.anthropic.json", "anthropic"), ("transcript.anthropic.tool-result.json", "anthropic")],
)
def test_sample_transcripts_are_detected_and_round_trip(name: str, fmt: str) -> None:
    transcript = parse_transcript(json.loads((CONVERSATIONS / name).read_text()), name)
    assert detect_format(transcript.messages) == fmt
    assert write_messages(read_messages(transcript.messages), fmt) == transcript.messages


def test_plain_text_is_ambiguous_and_read_as_ai_sdk() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert detect_format(messages) is None
    assert eager_recall(StubHost(), [*messages, {"role": "user", "content": "q"}]).format == "ai-sdk"


NEUTRAL = [
    Message("user", (TextPart("weather in Paris?"),)),
    Message("assistant", (TextPart("Checking."), ToolCall("c1", "weather", {"city": "Paris"}))),
    Message("tool", (ToolResult("c1", {"forecast": "sunny", "high": 21}, "weather"),)),
    Message("assistant", (ToolCall("c2", "weather", {"city": "Rome"}), ToolCall("c3", "weather", {"city": "Oslo"}))),
    Message("tool", (ToolResult("c2", "rain", "weather"),)),
    Message("tool", (ToolResult("c3", [1, 2], "weather"),)),
    Message("assistant", (TextPart("Sunny in Paris, rain in Rome."),)),
    Message("user", (TextPart("thanks"),)),
]

CANONICAL = {
    "ai-sdk": [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": {"city": "Paris"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "weather",
            "output": {"type": "json", "value": {"forecast": "sunny", "high": 21}}}]},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "c2", "toolName": "weather", "input": {"city": "Rome"}},
            {"type": "tool-call", "toolCallId": "c3", "toolName": "weather", "input": {"city": "Oslo"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c2", "toolName": "weather",
            "output": {"type": "text", "value": "rain"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c3", "toolName": "weather",
            "output": {"type": "json", "value": [1, 2]}}]},
        {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
        {"role": "user", "content": "thanks"},
    ],
    "openai": [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"forecast":"sunny","high":21}'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Rome"}'}},
            {"id": "c3", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
        {"role": "tool", "tool_call_id": "c3", "content": "[1,2]"},
        {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
        {"role": "user", "content": "thanks"},
    ],
    "anthropic": [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
            "content": '{"forecast":"sunny","high":21}'}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c2", "name": "weather", "input": {"city": "Rome"}},
            {"type": "tool_use", "id": "c3", "name": "weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "rain"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c3", "content": "[1,2]"}]},
        {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
        {"role": "user", "content": "thanks"},
    ],
}


@pytest.mark.parametrize("fmt", sorted(CANONICAL))
def test_write_then_read_round_trips_each_shape(fmt: str) -> None:
    written = write_messages(NEUTRAL, fmt)
    assert written == CANONICAL[fmt]
    assert detect_format(written) == fmt
    read = read_messages(written)
    assert read == NEUTRAL
    assert all(m.raw is None for m in read)  # the writer reproduced every message itself
    assert write_messages(read, fmt) == written


@pytest.mark.parametrize("source", sorted(CANONICAL))
@pytest.mark.parametrize("target", sorted(CANONICAL))
def test_shapes_convert_into_each_other(source: str, target: str) -> None:
    assert write_messages(read_messages(CANONICAL[source], source), target) == CANONICAL[target]


def test_non_canonical_messages_are_kept_verbatim() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                     {"type": "image", "source": {"type": "base64", "data": "AAA"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a cat"}], "id": "msg_1"},
    ]
    read = read_messages(messages, "anthropic")
    assert read[0].parts[1] == RawPart("anthropic", messages[0]["content"][1])
    assert read[1].raw == messages[1]
    assert write_messages(read, "anthropic") == messages
    with pytest.raises(TranscriptError, match="has no ai-sdk form"):
        write_messages(read, "ai-sdk")


def test_openai_arguments_that_are_not_canonical_survive() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city": "Paris"}'}}]}
    read = read_messages([message], "openai")
    assert read[0].tool_calls == (ToolCall("c1", "w", {"city": "Paris"}),)
    assert write_messages(read, "openai") == [message]


def test_tool_result_names_come_from_their_calls() -> None:
    read = read_messages(CANONICAL["openai"], "openai")
    assert read[2].tool_results[0].name == "weather"


@pytest.mark.parametrize(
    ("messages", "fmt", "match"),
    [
        ([{"role": "system", "content": "x"}], "anthropic", "role 'system' is not valid in the anthropic shape"),
        ([{"role": "user", "content": 3}], "ai-sdk", "message 0: `content` must be a string or a list"),
        (["hello"], "openai", "message 0: expected an object"),
        ([{"role": "user", "content": [{"text": "no type"}]}], "ai-sdk", "string `type`"),
        ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}], "openai", "function"),
    ],
)
def test_bad_messages_name_the_message_and_the_fix(messages: list[Any], fmt: str, match: str) -> None:
    with pytest.raises(TranscriptError, match=match):
        read_messages(messages, fmt)


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(TranscriptError, match="valid: ai-sdk, openai, anthropic"):
        eager_recall(StubHost(), [{"role": "user", "content": "x"}], format="gemini")


def test_system_message_cannot_be_written_as_anthropic() -> None:
    with pytest.raises(TranscriptError, match="top-level \"system\""):
        write_messages([Message("system", (TextPart("be brief"),))], "anthropic")


def test_parse_transcript_accepts_a_list_or_an_object() -> None:
    assert parse_transcript([]).document is None
    doc = parse_transcript({"model": "m", "messages": [], "format": "openai"})
    assert doc.format_hint == "openai"
    assert doc.with_messages([{"role": "user", "content": "x"}]) == {
        "model": "m", "messages": [{"role": "user", "content": "x"}], "format": "openai"}
    with pytest.raises(TranscriptError, match="expected a JSON list of messages"):
        parse_transcript({"msgs": []})


# --- CLI ----------------------------------------------------------------------------------------


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ranklens")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize(
    "name", ["transcript.ai-sdk.json", "transcript.openai.json", "transcript.anthropic.json"]
)
def test_cli_recall_json_appends_the_pair(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(CONVERSATIONS / name), "--json"]) == 0
    out = capsys.readouterr().out
    original = json.loads((CONVERSATIONS / name).read_text())
    augmented = json.loads(out)
    before = original if isinstance(original, list) else original["messages"]
    after = augmented if isinstance(augmented, list) else augmented["messages"]
    assert after[: len(before)] == before
    assert len(after) == len(before) + 2
    if isinstance(original, dict):
        assert {k: v for k, v in augmented.items() if k != "messages"} == {
            k: v for k, v in original.items() if k != "messages"}
    assert out.strip() == canonical_json(augmented)
    # not sorted: every original message is printed byte for byte, keys in the model's order
    for message in before:
        assert canonical_json(message) in out
    assert any(list(m) != sorted(m) for m in after)
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(CONVERSATIONS / name), "--json"]) == 0
    assert capsys.readouterr().out == out


def test_cli_recall_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    path = CONVERSATIONS / "transcript.anthropic.json"
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(path), "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "format: anthropic" in out
    assert f"→ call {SEARCH_CAPABILITIES}" in out
    assert "← result recall_" in out
    path = CONVERSATIONS / "transcript.anthropic.tool-result.json"
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(path)]) == 0
    assert "not a user turn; transcript unchanged" in capsys.readouterr().out


def test_cli_recall_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "ranklens recall: error:" in err and "not valid JSON" in err and "Traceback" not in err
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    wrong = tmp_path / "wrong.json"
    wrong.write_text('[{"role": "system", "content": "x"}, {"role": "user", "content": "y"}]')
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(wrong), "--format", "anthropic"]) == 2
    assert "role 'system' is not valid" in capsys.readouterr().err
    assert run_cli(["recall", str(tmp_path / "nocatalog.json"), str(CONVERSATIONS / "transcript.openai.json")]) == 2
    assert "ranklens recall: error:" in capsys.readouterr().err


def test_a_conversation_file_is_sent_to_cache_sim(capsys: pytest.CaptureFixture[str]) -> None:
    conversation = json.loads((CONVERSATIONS / "workday.conversation.json").read_text())
    with pytest.raises(TranscriptError) as info:
        parse_transcript(conversation, "workday.conversation.json")
    message = str(info.value)
    assert "workday.conversation.json: this is a conversation" in message
    assert "`ranklens cache-sim CATALOG workday.conversation.json`" in message
    assert "sample_catalogs/conversations/transcript.openai.json" in message
    # an unknown shape names a transcript to copy too
    with pytest.raises(TranscriptError, match="such as sample_catalogs/conversations/transcript"):
        parse_transcript({"msgs": []})
    assert run_cli(["recall", str(SAMPLE_CATALOG), str(CONVERSATIONS / "workday.conversation.json")]) == 2
    assert "ranklens cache-sim CATALOG" in capsys.readouterr().err


def test_recall_refuses_an_empty_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert run_cli(["recall", str(empty), str(CONVERSATIONS / "transcript.openai.json")]) == 2
    assert "empty.json has no tools or skills" in capsys.readouterr().err
