"""Tests of core.cachesim: token counts, prefixes, the four strategies, the CLI."""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.registry

from core import cachesim
from core.cachesim import (
    STRATEGIES,
    Conversation,
    TurnSim,
    add_cli,
    appends_only,
    count_tokens,
    load_conversation,
    parse_conversation,
    parse_strategies,
    serialize_prompt,
    shared_prefix,
    simulate,
    simulate_all,
)
from core.capabilities import CapabilityHost
from core.catalog import Tool, load_catalog
from core.recall import Message, TextPart, TranscriptError, canonical_json, eager_recall
from tests.conftest import keys_sorted

ROOT = Path(__file__).parent.parent
CONVERSATIONS = ROOT / "sample_catalogs" / "conversations"
SAMPLE_CATALOG = ROOT / "sample_catalogs" / "mcp_workspace.json"
SAMPLE_CONVERSATION = CONVERSATIONS / "workday.conversation.json"

TOOLS = [
    Tool(id="cal__list_events", name="list_events", description="List calendar events in a time window",
         input_schema={"type": "object", "properties": {"day": {"type": "string"}}}),
    Tool(id="cal__create_event", name="create_event", description="Create a calendar event"),
    Tool(id="mail__search", name="search", description="Search email messages by sender or subject"),
    Tool(id="mail__send", name="send", description="Send an email message"),
    Tool(id="weather", name="weather", description="Get the weather forecast for a city"),
]

CONVERSATION = Conversation.model_validate({
    "system": "You are helpful.",
    "turns": [
        {"user": "list my calendar events", "assistant": "You have two events.",
         "tool_calls": [{"tool": "cal__list_events", "args": {"day": "today"}, "result": {"events": 2}}]},
        {"user": "search email from Dana", "assistant": "One email."},
        {"user": "send an email message to Dana", "tool_calls": [{"tool": "mail__send", "args": {}}]},
        {"user": "weather forecast", "assistant": "Sunny."},
    ],
})


@pytest.fixture
def host() -> CapabilityHost:
    from core.search import ToolCatalog

    return CapabilityHost(ToolCatalog(TOOLS))


# --- tokens and prefixes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("hello world", 2), ("tiktoken is great!", 6), ('{"a":1}', 5), ("<|endoftext|>", 7)],
)
def test_cl100k_base_token_counts(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


def test_encoding_loads_from_the_bundled_file_without_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # force a fresh load
    cachesim.encoding.cache_clear()
    try:
        assert cachesim.encoding().encode("hello world") == [15339, 1917]
        assert len(tiktoken.registry.ENCODINGS) == 1  # it really was loaded here
    finally:
        cachesim.encoding.cache_clear()


@pytest.mark.parametrize(
    ("a", "b", "prefix"),
    [("", "abc", ""), ("abc", "abd", "ab"), ("abc", "abcdef", "abc"), ("abcdef", "abc", "abc"),
     ("héllo", "héllp", "héll"), ("x", "y", "")],
)
def test_shared_prefix(a: str, b: str, prefix: str) -> None:
    assert shared_prefix(a, b) == prefix


def test_appends_only_reports_the_first_violating_turn() -> None:
    assert appends_only(["a", "ab", "abc"]) is None
    assert appends_only(["ab", "a", "ab"]) == 2
    assert appends_only(["a", "ab", "ax", "axy"]) == 3
    assert appends_only([]) is None


# --- the prompt ---------------------------------------------------------------------------------


def test_prompt_is_tools_then_system_then_one_line_per_message() -> None:
    tools = [{"name": "t", "description": "d", "input_schema": {}}]
    messages = [Message("user", (TextPart("hi"),)), Message("assistant", (TextPart("hello"),))]
    assert serialize_prompt(tools, "sys", messages, "anthropic") == "\n".join([
        '{"tools":[{"name":"t","description":"d","input_schema":{}}]}',
        '{"system":"sys"}',
        '{"role":"user","content":"hi"}',
        '{"role":"assistant","content":"hello"}',
    ])


# --- strategies ---------------------------------------------------------------------------------


def test_every_turn_counts_its_prompt(host: CapabilityHost) -> None:
    for sim in simulate_all(host, CONVERSATION):
        previous = ""
        for turn in sim.turns:
            assert turn.input_tokens == count_tokens(turn.prompt)
            prefix = shared_prefix(previous, turn.prompt)
            assert turn.shared_prefix_chars == len(prefix)
            assert turn.cached_tokens == count_tokens(prefix)
            assert turn.uncached_tokens == turn.input_tokens - turn.cached_tokens
            previous = turn.prompt
        assert sim.input_tokens == sum(t.input_tokens for t in sim.turns)
        assert sim.cached_tokens + sim.uncached_tokens == sim.input_tokens
        assert sim.turns[0].cached_tokens == 0


@pytest.mark.parametrize("strategy", ["eager-recall", "on-demand", "all-tools"])
@pytest.mark.parametrize("fmt", ["ai-sdk", "openai", "anthropic"])
def test_growing_strategies_only_append(host: CapabilityHost, strategy: str, fmt: str) -> None:
    sim = simulate(host, CONVERSATION, strategy, format=fmt)
    assert sim.first_violation is None
    for before, after in zip(sim.turns, sim.turns[1:], strict=False):
        assert after.prompt.startswith(before.prompt)
        assert after.shared_prefix_chars == len(before.prompt)
        assert after.cached_tokens >= before.input_tokens - 1  # the prefix, re-tokenised


def test_top_k_busts_the_cache_when_the_hit_set_changes(host: CapabilityHost) -> None:
    sim = simulate(host, CONVERSATION, "top-k", top_k=2)
    hits = [t.visible_tools for t in sim.turns]
    assert hits[0] != hits[1]
    assert sim.first_violation == 2
    second = sim.turns[1]
    assert second.shared_prefix_chars < len(sim.turns[0].prompt)
    assert second.cached_tokens < sim.turns[0].input_tokens
    tools_line = sim.turns[0].prompt.split("\n", 1)[0]
    assert second.shared_prefix_chars < len(tools_line)  # broken inside the tool list


def test_top_k_keeps_the_cache_when_the_hit_set_repeats(host: CapabilityHost) -> None:
    conversation = Conversation.model_validate(
        {"turns": [{"user": "weather forecast", "assistant": "Sunny."}, {"user": "weather tomorrow"}]}
    )
    sim = simulate(host, conversation, "top-k", top_k=3)
    assert sim.turns[0].visible_tools == sim.turns[1].visible_tools == ("weather",)
    assert sim.first_violation is None
    assert sim.turns[1].cached_tokens > 0


def test_visible_and_missing_tools(host: CapabilityHost) -> None:
    sims = {s.strategy: s for s in simulate_all(host, CONVERSATION, top_k=1)}
    assert sims["all-tools"].turns[0].visible_tools == tuple(t.id for t in TOOLS)
    assert sims["top-k"].turns[2].visible_tools == ("mail__send",)
    assert sims["top-k"].turns[0].missing_tools == ()
    # Under recall the model keeps seeing what earlier turns surfaced.
    eager = sims["eager-recall"].turns
    assert set(eager[0].visible_tools) <= set(eager[1].visible_tools)
    assert all(t.missing_tools == () for t in eager)
    conversation = Conversation.model_validate(
        {"turns": [{"user": "weather forecast", "tool_calls": [{"tool": "mail__send"}]}]}
    )
    turn = simulate(host, conversation, "top-k", top_k=1).turns[0]
    assert turn.missing_tools == ("mail__send",)


def test_eager_recall_prompt_is_the_recall_transcript(host: CapabilityHost) -> None:
    conversation = Conversation.model_validate({"system": "S", "turns": [{"user": "weather in Paris"}]})
    turn = simulate(host, conversation, "eager-recall", top_k=3, format="openai").turns[0]
    recalled = eager_recall(host, [{"role": "user", "content": "weather in Paris"}], format="openai", top_k=3)
    lines = turn.prompt.split("\n")
    assert lines[0] == canonical_json({"tools": [
        {"type": "function", "function": {"name": d["name"], "description": d["description"],
                                          "parameters": d["inputSchema"]}}
        for d in host.tool_definitions()]})
    assert lines[1] == '{"system":"S"}'
    assert lines[2:] == [canonical_json(m) for m in recalled.messages]


def test_tool_calls_go_through_invoke_tool_under_recall(host: CapabilityHost) -> None:
    sim = simulate(host, CONVERSATION, "eager-recall", format="ai-sdk")
    first = [json.loads(line) for line in sim.turns[0].prompt.split("\n")[2:]]
    roles = [m["role"] for m in first]
    assert roles == ["user", "assistant", "tool", "assistant", "tool"]
    call = first[3]["content"][0]
    assert (call["toolName"], call["input"]) == ("invoke_tool", {"toolId": "cal__list_events", "args": {"day": "today"}})
    assert first[4]["content"][0]["output"] == {"type": "json", "value": {"events": 2}}
    third = [json.loads(line) for line in sim.turns[2].prompt.split("\n")[2:]]
    dry_run = third[-1]["content"][0]["output"]["value"]
    assert dry_run["dryRun"] is True and dry_run["toolId"] == "mail__send"
    direct = simulate(host, CONVERSATION, "all-tools", format="ai-sdk")
    call = json.loads(direct.turns[0].prompt.split("\n")[3])["content"][0]
    assert (call["toolName"], call["input"]) == ("cal__list_events", {"day": "today"})


def test_on_demand_costs_one_more_model_call_per_turn(host: CapabilityHost) -> None:
    sims = {s.strategy: s for s in simulate_all(host, CONVERSATION)}
    eager, on_demand = sims["eager-recall"], sims["on-demand"]
    assert [t.model_calls for t in eager.turns] == [2, 1, 2, 1]
    assert [t.model_calls for t in on_demand.turns] == [3, 2, 3, 2]
    assert [t.visible_tools for t in eager.turns] == [t.visible_tools for t in on_demand.turns]


def test_simulation_is_deterministic(host: CapabilityHost) -> None:
    from core.search import ToolCatalog

    again = CapabilityHost(ToolCatalog(TOOLS))
    first = [t.prompt for s in simulate_all(host, CONVERSATION) for t in s.turns]
    second = [t.prompt for s in simulate_all(again, CONVERSATION) for t in s.turns]
    assert first == second


def test_bad_inputs_name_the_problem(host: CapabilityHost) -> None:
    with pytest.raises(ValueError, match="valid: all-tools, top-k, eager-recall, on-demand"):
        simulate(host, CONVERSATION, "everything")
    with pytest.raises(ValueError, match="valid: ai-sdk, openai, anthropic"):
        simulate(host, CONVERSATION, "top-k", format="gemini")
    unknown = Conversation.model_validate({"turns": [{"user": "x", "tool_calls": [{"tool": "nope"}]}]})
    with pytest.raises(TranscriptError, match="turn 1 calls tool 'nope'"):
        simulate(host, unknown, "top-k")
    with pytest.raises(TranscriptError, match="turns: List should have at least 1 item"):
        parse_conversation({"turns": []})
    with pytest.raises(TranscriptError, match=r"turns\.0\.user"):
        parse_conversation({"turns": [{"text": "x"}]})
    assert parse_strategies(["top-k,on-demand", "top-k"]) == ["top-k", "on-demand"]
    with pytest.raises(ValueError, match="unknown strategy bogus"):
        parse_strategies(["bogus"])


def test_turn_dict_is_json_ready(host: CapabilityHost) -> None:
    turn = simulate(host, CONVERSATION, "top-k").turns[0]
    assert isinstance(turn, TurnSim)
    data = turn.to_dict()
    assert "prompt" not in data and data["prompt_chars"] == len(turn.prompt)
    assert turn.to_dict(with_prompt=True)["prompt"] == turn.prompt
    json.dumps(data)


# --- the bundled sample -------------------------------------------------------------------------


def test_sample_conversation_calls_real_tools_with_valid_args() -> None:
    conversation = load_conversation(SAMPLE_CONVERSATION)
    host = CapabilityHost.from_catalog(load_catalog(SAMPLE_CATALOG))
    for turn in conversation.turns:
        for call in turn.tool_calls:
            answer = host.invoke_tool({"toolId": call.tool, "args": call.args})
            assert not (isinstance(answer, dict) and answer.get("isError")), answer


def test_sample_conversation_figures() -> None:
    host = CapabilityHost.from_catalog(load_catalog(SAMPLE_CATALOG))
    sims = {s.strategy: s for s in simulate_all(host, load_conversation(SAMPLE_CONVERSATION))}
    assert list(sims) == list(STRATEGIES)
    assert sims["eager-recall"].first_violation is None
    assert sims["on-demand"].first_violation is None
    assert sims["top-k"].first_violation is not None
    # Every tool definition in every prompt costs far more than recalling a few.
    assert sims["all-tools"].input_tokens > 3 * sims["eager-recall"].input_tokens
    assert sims["top-k"].cache_ratio < sims["eager-recall"].cache_ratio


# --- CLI ----------------------------------------------------------------------------------------


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ranklens")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["cache-sim", str(SAMPLE_CATALOG), str(SAMPLE_CONVERSATION)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("token figures are cl100k_base tokens")
    for strategy in STRATEGIES:
        assert strategy in out
    assert "append-only ok" in out


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["cache-sim", str(SAMPLE_CATALOG), str(SAMPLE_CONVERSATION), "--json",
            "--strategies", "top-k,eager-recall", "--top-k", "3"]
    assert run_cli(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unit"] == "cl100k_base tokens"
    assert [s["strategy"] for s in report["strategies"]] == ["top-k", "eager-recall"]
    eager = report["strategies"][1]
    assert eager["append_only"] == {"required": True, "first_violation": None}
    assert len(eager["turns"]) == 5
    assert eager["totals"]["input_tokens"] == sum(t["input_tokens"] for t in eager["turns"])
    assert all(len(t["visible_tools"]) <= 3 for t in report["strategies"][0]["turns"])
    assert "prompt" not in eager["turns"][0]
    assert run_cli([*argv, "--with-prompts"]) == 0
    assert json.loads(capsys.readouterr().out)["strategies"][1]["turns"][0]["prompt"].startswith('{"tools":')


def test_cli_json_sorts_keys_and_keeps_each_prompt_byte_for_byte(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["cache-sim", str(SAMPLE_CATALOG), str(SAMPLE_CONVERSATION), "--json", "--with-prompts",
            "--strategies", "eager-recall"]
    assert run_cli(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert keys_sorted(report)
    host = CapabilityHost.from_catalog(load_catalog(SAMPLE_CATALOG))
    expected = simulate(host, load_conversation(SAMPLE_CONVERSATION), "eager-recall")
    prompts = [t["prompt"] for t in report["strategies"][0]["turns"]]
    # the prompt is a string: sorting the report's keys leaves what the model receives as it is
    assert prompts == [t.prompt for t in expected.turns]
    # inside the prompt, keys stay in the order the model receives them (name before description)
    assert prompts[0].startswith('{"tools":[{"name":"search_capabilities","description":')


def test_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["cache-sim", str(SAMPLE_CATALOG), str(SAMPLE_CONVERSATION), "--strategies", "nope"]) == 2
    assert "unknown strategy nope" in capsys.readouterr().err
    bad = tmp_path / "conv.json"
    bad.write_text(json.dumps({"turns": [{"user": "x", "tool_calls": [{"tool": "nope__tool"}]}]}))
    assert run_cli(["cache-sim", str(SAMPLE_CATALOG), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "ranklens cache-sim: error: turn 1 calls tool 'nope__tool'" in err and "Traceback" not in err
    bad.write_text("[]")
    assert run_cli(["cache-sim", str(SAMPLE_CATALOG), str(bad)]) == 2
    assert "not a conversation" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["transcript.openai.json", "transcript.anthropic.json",
                                  "transcript.ai-sdk.json"])
def test_a_transcript_is_sent_to_recall(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads((CONVERSATIONS / name).read_text())
    with pytest.raises(TranscriptError) as info:
        parse_conversation(data, name)
    message = str(info.value)
    assert f"{name}: this is a transcript" in message and "Extra inputs" not in message
    assert f"`ranklens recall CATALOG {name}`" in message
    assert "sample_catalogs/conversations/workday.conversation.json" in message
    # the bare list of messages too
    messages = data["messages"] if isinstance(data, dict) else data
    with pytest.raises(TranscriptError, match="this is a transcript"):
        parse_conversation(messages, name)
    assert run_cli(["cache-sim", str(SAMPLE_CATALOG), str(CONVERSATIONS / name)]) == 2
    assert "ranklens recall CATALOG" in capsys.readouterr().err


def test_cache_sim_refuses_an_empty_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"tools": []}')
    assert run_cli(["cache-sim", str(empty), str(SAMPLE_CONVERSATION)]) == 2
    assert "empty.json has no tools or skills" in capsys.readouterr().err
