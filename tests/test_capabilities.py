"""Tests of core.capabilities: tool definitions, the three handlers, and the search trace."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import pytest

from core.capabilities import (
    DEFAULT_TOP_K_SKILLS,
    DEFAULT_TOP_K_TOOLS,
    GET_SKILL_CONTENT,
    INVOKE_TOOL,
    SEARCH_CAPABILITIES,
    CapabilityHost,
    TraceEvent,
    UpstreamServer,
    clamp_top_k,
    compact_description,
    get_skill_content_definition,
    group_name,
    invoke_tool_definition,
    output_schema,
    search_capabilities_definition,
    validation_error,
)
from core.catalog import Skill, Tool
from core.search import SkillCatalog, ToolCatalog

ISSUE_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "issue title"},
        "labels": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["title"],
    "additionalProperties": False,
}

TOOLS = [
    Tool(id="gh__create_issue", name="create_issue", description="Create a GitHub issue for a bug",
         input_schema=ISSUE_SCHEMA),
    Tool(id="gh__list_issues", name="list_issues", description="List open issues of a repository"),
    Tool(id="weather", name="weather", description="Get the weather forecast for a city"),
    Tool(id="slack__post_message", name="post_message", description="Post a chat message to a channel"),
    Tool(id="slack__list_channels", name="list_channels", description="List chat channels"),
]
LONG_DESCRIPTION = "Triage incoming bug reports:\n" + "reproduce, label and file them " * 10
SKILLS = [
    Skill(id="triage", name="triage", description=LONG_DESCRIPTION,
          tools=["slack__list_channels", "gh__create_issue", "nope__missing", "weather"],
          body="# Triage\n1. Reproduce."),
    Skill(id="forecast", name="forecast", description="Morning weather briefing", body="# Forecast"),
]
SERVERS = {
    "gh": UpstreamServer("gh", description="GitHub issues and pull requests", instructions="Use owner/repo."),
    "slack": UpstreamServer("slack", description="Team chat"),
}


class Clock:
    """A deterministic clock: 1000.0, 1001.0, ..."""

    def __init__(self) -> None:
        self.now = 999.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def host() -> CapabilityHost:
    return CapabilityHost(ToolCatalog(TOOLS), SkillCatalog(SKILLS), servers=SERVERS, clock=Clock())


def tool_ids(output: dict[str, Any]) -> list[str]:
    return [h["toolId"] for g in output["tools"]["groups"] for h in g["hits"]]


# --- definitions --------------------------------------------------------------------------------


def test_definitions_are_valid_json_schemas_with_the_reference_fields() -> None:
    for definition in (
        search_capabilities_definition(),
        invoke_tool_definition(),
        get_skill_content_definition(),
    ):
        assert set(definition) == {"name", "description", "inputSchema"}
        jsonschema.Draft202012Validator.check_schema(definition["inputSchema"])
    assert search_capabilities_definition()["inputSchema"]["required"] == ["query"]
    assert invoke_tool_definition()["inputSchema"]["required"] == ["toolId", "args"]
    assert get_skill_content_definition()["inputSchema"]["required"] == ["skillId"]
    for name in (SEARCH_CAPABILITIES, INVOKE_TOOL, GET_SKILL_CONTENT):
        jsonschema.Draft202012Validator.check_schema(output_schema(name))
    with pytest.raises(ValueError, match="valid: search_capabilities"):
        output_schema("search_tools")


def test_search_description_mentions_skills_only_when_there_are_skills(host: CapabilityHost) -> None:
    assert "get_skill_content" not in search_capabilities_definition(False)["description"]
    assert "get_skill_content" in search_capabilities_definition(True)["description"]
    names = [d["name"] for d in host.tool_definitions()]
    assert names == [SEARCH_CAPABILITIES, INVOKE_TOOL, GET_SKILL_CONTENT]
    no_skills = CapabilityHost(ToolCatalog(TOOLS))
    assert [d["name"] for d in no_skills.tool_definitions()] == [SEARCH_CAPABILITIES, INVOKE_TOOL]


def test_search_description_lists_servers_with_tool_counts(host: CapabilityHost) -> None:
    description = host.tool_definitions()[0]["description"]
    assert description.endswith(
        "This catalog aggregates tools from these upstream MCP servers:\n"
        "- gh — GitHub issues and pull requests (2 tools)\n"
        "- slack — Team chat (2 tools)"
    )


def test_output_matches_its_own_output_schema(host: CapabilityHost) -> None:
    output = host.search_capabilities({"query": "file a bug issue", "topKTools": 2})
    jsonschema.validate(output, output_schema(SEARCH_CAPABILITIES))
    jsonschema.validate(host.get_skill_content({"skillId": "triage"}), output_schema(GET_SKILL_CONTENT))
    jsonschema.validate(host.get_skill_content({"skillId": "x"}), output_schema(GET_SKILL_CONTENT))


# --- pure helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 5), (0, 5), (-3, 5), (True, 5), (2.0, 5), ("3", 5), (1, 1), (7, 7), (50, 50), (51, 50), (10**9, 50)],
)
def test_clamp_top_k(value: object, expected: int) -> None:
    assert clamp_top_k(value, 5) == expected


@pytest.mark.parametrize(
    ("tool_id", "group"),
    [("gh__create_issue", "gh"), ("a__b__c", "a"), ("weather", "weather"), ("__hidden", "__hidden"),
     ("x_y", "x_y")],
)
def test_group_name(tool_id: str, group: str) -> None:
    assert group_name(tool_id) == group


def test_compact_description_collapses_whitespace_and_cuts_at_a_word() -> None:
    assert compact_description("  two\n\nlines  ") == "two lines"
    cut = compact_description(LONG_DESCRIPTION)
    assert len(cut) <= 160
    assert cut.endswith("them…")
    assert "\n" not in cut


def test_validation_error_names_the_problem_and_the_path() -> None:
    assert validation_error(ISSUE_SCHEMA, {"title": "x"}) is None
    assert validation_error(ISSUE_SCHEMA, {}) == "'title' is a required property"
    assert validation_error(ISSUE_SCHEMA, {"title": 3}) == "3 is not of type 'string' (at /title)"
    assert validation_error({}, {"anything": 1}) is None
    assert "input schema is invalid" in validation_error({"type": "nonsense"}, {})


# --- search_capabilities ------------------------------------------------------------------------


def test_search_groups_by_server_prefix_in_order_of_first_hit() -> None:
    host = CapabilityHost(ToolCatalog(TOOLS), servers=SERVERS)
    output = host.search_capabilities({"query": "list issues channels weather", "topKTools": 10})
    hits = host.tools.search("list issues channels weather", 10)
    assert sorted(tool_ids(output)) == sorted(h.id for h in hits)
    first_seen = list(dict.fromkeys(group_name(h.id) for h in hits))
    assert [g["server"]["name"] for g in output["tools"]["groups"]] == first_seen
    by_name = {g["server"]["name"]: g for g in output["tools"]["groups"]}
    assert by_name["gh"]["server"] == {
        "name": "gh", "description": "GitHub issues and pull requests", "instructions": "Use owner/repo.",
    }
    assert by_name["slack"]["server"] == {"name": "slack", "description": "Team chat"}
    assert by_name["weather"]["server"] == {"name": "weather"}
    scores = {h.id: h.score for h in hits}
    for group in output["tools"]["groups"]:
        for hit in group["hits"]:
            assert hit["score"] == pytest.approx(scores[hit["toolId"]])
            tool = host.tools.get(hit["toolId"])
            assert hit["description"] == tool.description
            assert hit["inputSchema"] == tool.input_schema
    assert output["skills"] == []


def test_search_clamps_top_k_tools_and_skills(host: CapabilityHost) -> None:
    host.search_capabilities({"query": "issue", "topKTools": 500, "topKSkills": 0})
    tools_event, skills_event = host.trace.events
    assert (tools_event.target, tools_event.top_k) == ("tools", 50)
    assert (skills_event.target, skills_event.top_k) == ("skills", DEFAULT_TOP_K_SKILLS)
    host.search_capabilities({"query": "issue"})
    assert host.trace.events[2].top_k == DEFAULT_TOP_K_TOOLS


def test_search_returns_at_most_top_k_matched_tools() -> None:
    host = CapabilityHost(ToolCatalog(TOOLS))
    output = host.search_capabilities({"query": "list issues channels", "topKTools": 1})
    assert tool_ids(output) == [host.tools.search("list issues channels", 1)[0].id]


def test_skill_declared_tools_ride_along_with_score_zero(host: CapabilityHost) -> None:
    output = host.search_capabilities({"query": "bug issue", "topKTools": 1, "topKSkills": 1})
    assert [s["skillId"] for s in output["skills"]] == ["triage"]
    assert output["skills"][0]["description"] == compact_description(LONG_DESCRIPTION)
    groups = [(g["server"]["name"], [(h["toolId"], h["score"]) for h in g["hits"]]) for g in output["tools"]["groups"]]
    # The matched tool keeps its score (no duplicate); declared tools follow in declared
    # order, in their server group, with score 0; an id the catalog lacks is skipped.
    assert groups[0][0] == "gh"
    assert groups[0][1][0][0] == "gh__create_issue"
    assert groups[0][1][0][1] > 0
    assert len(groups[0][1]) == 1
    assert groups[1:] == [("slack", [("slack__list_channels", 0)]), ("weather", [("weather", 0)])]
    assert tool_ids(output).count("gh__create_issue") == 1


def test_skill_declared_tool_joins_an_existing_group() -> None:
    skills = [Skill(id="chat", name="chat", description="chat helper", tools=["slack__post_message"])]
    host = CapabilityHost(ToolCatalog(TOOLS), SkillCatalog(skills))
    output = host.search_capabilities({"query": "chat channels", "topKTools": 1})
    assert output["tools"]["groups"] == [
        {
            "server": {"name": "slack"},
            "hits": [
                output["tools"]["groups"][0]["hits"][0],
                {"toolId": "slack__post_message", "score": 0,
                 "description": "Post a chat message to a channel", "inputSchema": {}},
            ],
        }
    ]
    assert output["tools"]["groups"][0]["hits"][0]["toolId"] == "slack__list_channels"


def test_search_with_a_non_string_query_is_a_structured_error(host: CapabilityHost) -> None:
    out = host.search_capabilities({"topKTools": 3})
    assert out["isError"] is True
    assert "`query` must be a string" in out["error"]
    assert len(host.trace) == 0


# --- invoke_tool --------------------------------------------------------------------------------


def test_invoke_unknown_tool(host: CapabilityHost) -> None:
    assert host.invoke_tool({"toolId": "gh__delete_repo", "args": {}}) == {
        "error": "unknown toolId: gh__delete_repo. Use the catalog's search tool to discover available ids.",
        "isError": True,
    }
    assert host.invoke_tool({"args": {}})["isError"] is True


def test_invoke_validates_args_against_the_input_schema(host: CapabilityHost) -> None:
    missing = host.invoke_tool({"toolId": "gh__create_issue", "args": {}})
    assert missing == {
        "error": "invalid args for gh__create_issue: 'title' is a required property",
        "isError": True,
    }
    extra = host.invoke_tool({"toolId": "gh__create_issue", "args": {"title": "x", "body": "y"}})
    assert extra["isError"] is True
    assert "Additional properties are not allowed ('body' was unexpected)" in extra["error"]
    wrong = host.invoke_tool({"toolId": "gh__create_issue", "args": {"title": "x", "labels": [1]}})
    assert wrong["error"].endswith("1 is not of type 'string' (at /labels/0)")
    not_object = host.invoke_tool({"toolId": "gh__create_issue", "args": ["x"]})
    assert not_object["error"].startswith("invalid args for gh__create_issue: `args` must be an object")


def test_invoke_without_handler_is_a_dry_run(host: CapabilityHost) -> None:
    assert host.invoke_tool({"toolId": "gh__create_issue", "args": {"title": "Crash on start"}}) == {
        "dryRun": True,
        "toolId": "gh__create_issue",
        "args": {"title": "Crash on start"},
        "message": 'dry run: would call gh__create_issue with {"title":"Crash on start"}',
    }


def test_invoke_tolerates_flattened_args(host: CapabilityHost) -> None:
    out = host.invoke_tool({"toolId": "gh__create_issue", "title": "flat"})
    assert out["args"] == {"title": "flat"}


def test_invoke_calls_the_handler_with_validated_args() -> None:
    calls: list[dict[str, Any]] = []

    def create_issue(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"number": 42}

    async def forecast(args: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "sunny"

    def broken(args: dict[str, Any]) -> None:
        raise RuntimeError("rate limited")

    host = CapabilityHost(
        ToolCatalog(TOOLS),
        handlers={"gh__create_issue": create_issue, "weather": forecast, "gh__list_issues": broken},
    )
    assert host.invoke_tool({"toolId": "gh__create_issue", "args": {"title": "t"}}) == {"number": 42}
    assert calls == [{"title": "t"}]
    assert host.invoke_tool({"toolId": "gh__create_issue", "args": {}})["isError"] is True
    assert calls == [{"title": "t"}]  # invalid args never reach the handler
    assert host.invoke_tool({"toolId": "weather", "args": {}}) == "sunny"
    assert host.invoke_tool({"toolId": "gh__list_issues", "args": {}}) == {
        "error": "tool gh__list_issues threw: rate limited",
        "isError": True,
    }


def test_sync_wrappers_work_inside_a_running_event_loop(host: CapabilityHost) -> None:
    async def main() -> Any:
        return host.invoke_tool({"toolId": "weather", "args": {}})

    assert asyncio.run(main())["dryRun"] is True


# --- get_skill_content --------------------------------------------------------------------------


def test_get_skill_content(host: CapabilityHost) -> None:
    assert host.get_skill_content({"skillId": "triage"}) == {"body": "# Triage\n1. Reproduce."}
    assert host.get_skill_content({"skillId": "nope"}) == {
        "error": "unknown skillId: nope. Use search_capabilities to discover available ids.",
        "isError": True,
    }
    assert host.get_skill_content({})["isError"] is True
    assert CapabilityHost(ToolCatalog(TOOLS)).get_skill_content({"skillId": "triage"})["isError"] is True


def test_call_dispatches_by_name(host: CapabilityHost) -> None:
    assert host.call(GET_SKILL_CONTENT, {"skillId": "forecast"}) == {"body": "# Forecast"}
    assert host.call(INVOKE_TOOL, {"toolId": "weather", "args": {}})["dryRun"] is True
    assert "tools" in host.call(SEARCH_CAPABILITIES, {"query": "weather"})
    assert host.call("search_tools", {})["isError"] is True


# --- trace --------------------------------------------------------------------------------------


def test_trace_records_origin_method_hits_and_time(host: CapabilityHost) -> None:
    direct = host.search("weather forecast", 3)
    host.search_capabilities({"query": "weather forecast", "topKTools": 3})
    events = host.trace.events
    assert [(e.origin, e.target) for e in events] == [
        ("direct", "tools"), ("agent", "tools"), ("agent", "skills"),
    ]
    first = events[0]
    assert isinstance(first, TraceEvent)
    assert first.query == "weather forecast"
    assert first.method == "bm25"
    assert [(h.id, h.score, h.rank) for h in first.hits] == [(h.id, h.score, h.rank) for h in direct]
    assert first.hits[0].id == "weather"
    assert [e.timestamp for e in events] == [1000.0, 1001.0, 1002.0]
    assert all(e.duration_ms >= 0 for e in events)
    assert len(host.trace.by_origin("agent")) == 2
    json.dumps([e.to_dict() for e in events])  # JSON-ready
    with pytest.raises(AttributeError):
        first.origin = "agent"  # type: ignore[misc]
    host.trace.clear()
    assert len(host.trace) == 0


def test_search_uses_the_catalogs_construction_time_method() -> None:
    from core.embedding import HashingEmbedder

    catalog = ToolCatalog(TOOLS, method="semantic", model=HashingEmbedder(32), persistent_cache=False)
    host = CapabilityHost(catalog)
    output = host.search_capabilities({"query": "weather forecast", "topKTools": 2})
    expected = [h.id for h in catalog.search_with("weather forecast", 2)]
    assert tool_ids(output) == expected
    assert host.method == "semantic"
    first = host.trace.events[0]
    assert (first.method, first.origin, first.top_k) == ("semantic", "agent", 2)
    assert [h.id for h in host.search("weather forecast", 2)] == expected
    assert (host.trace.events[-1].origin, host.trace.events[-1].method) == ("direct", "semantic")


def test_every_search_on_a_served_catalog_is_traced_with_its_origin() -> None:
    catalog = ToolCatalog(TOOLS)
    host = CapabilityHost(catalog)
    catalog.search("weather", 3)  # host code calling the catalog directly
    host.search_capabilities({"query": "weather"})
    assert [(e.origin, e.target, e.query) for e in host.trace] == [
        ("direct", "tools", "weather"),
        ("agent", "tools", "weather"),
    ]
    assert catalog.trace is host.trace
    assert host.trace.events[0].hits[0].id == catalog.search("weather", 1)[0].id


def test_from_catalog_builds_catalogs_and_servers() -> None:
    from core.catalog import Catalog, ServerInfo

    catalog = Catalog(
        tools=TOOLS, skills=SKILLS,
        servers={"gh": ServerInfo(name="gh", description="GitHub", instructions="Be nice.")},
    )
    host = CapabilityHost.from_catalog(catalog)
    assert len(host.tools) == len(TOOLS)
    assert host.has_skills
    assert host.servers["gh"] == UpstreamServer("gh", "GitHub", "Be nice.")
    output = host.search_capabilities({"query": "create issue", "topKTools": 1})
    assert output["tools"]["groups"][0]["server"] == {"name": "gh", "description": "GitHub", "instructions": "Be nice."}
    assert not CapabilityHost.from_catalog(Catalog(tools=TOOLS)).has_skills


# --- the reference engine -----------------------------------------------------------------------


def _reference(tools: list[Tool], skills: list[Skill], servers: dict[str, UpstreamServer]) -> Any:
    ratel = pytest.importorskip("ratel_ai")

    async def noop(args: dict[str, Any]) -> None:
        return None

    async def build() -> Any:
        catalog = ratel.ToolCatalog()
        await catalog.register(
            [ratel.ExecutableTool(id=t.id, name=t.name, description=t.description,
                                  input_schema=t.input_schema, output_schema=t.output_schema,
                                  execute=noop) for t in tools]
        )
        skill_catalog = ratel.SkillCatalog()
        await skill_catalog.register(
            [ratel.Skill(id=s.id, name=s.name, description=s.description, tags=list(s.tags),
                         tools=list(s.tools), body=s.body) for s in skills]
        )
        return catalog, skill_catalog

    catalog, skill_catalog = asyncio.run(build())
    upstreams = [
        ratel.UpstreamServerInfo(name=s.name, description=s.description, instructions=s.instructions,
                                 tool_count=sum(1 for t in tools if group_name(t.id) == s.name))
        for s in sorted(servers.values(), key=lambda s: s.name)
    ]
    return ratel, catalog, skill_catalog, upstreams


@pytest.mark.oracle
def test_tool_definitions_match_the_reference_engine(host: CapabilityHost) -> None:
    from ratel_ai.skill_tools import get_skill_content_tool

    ratel, catalog, skill_catalog, upstreams = _reference(TOOLS, SKILLS, SERVERS)
    reference = [
        ratel.search_capabilities_tool(catalog, skill_catalog, upstream_servers=upstreams),
        ratel.invoke_tool_tool(catalog),
        get_skill_content_tool(skill_catalog),
    ]
    ours = host.tool_definitions()
    assert [(d["name"], d["description"], d["inputSchema"]) for d in ours] == [
        (r.name, r.description, r.input_schema) for r in reference
    ]
    assert [output_schema(d["name"]) for d in ours] == [r.output_schema for r in reference]


@pytest.mark.oracle
@pytest.mark.parametrize(
    "request_",
    [
        {"query": "file a bug issue"},
        {"query": "bug issue", "topKTools": 1, "topKSkills": 1},
        {"query": "list issues channels weather chat", "topKTools": 50},
        {"query": "morning weather", "topKTools": 0, "topKSkills": 99},
        {"query": "nothing matches zzz"},
    ],
)
def test_search_capabilities_output_matches_the_reference_engine(
    host: CapabilityHost, request_: dict[str, Any]
) -> None:
    ratel, catalog, skill_catalog, upstreams = _reference(TOOLS, SKILLS, SERVERS)
    tool = ratel.search_capabilities_tool(catalog, skill_catalog, upstream_servers=upstreams)
    expected = asyncio.run(tool.execute(dict(request_)))
    assert host.search_capabilities(dict(request_)) == expected
    assert json.dumps(host.search_capabilities(dict(request_))) == json.dumps(expected)


@pytest.mark.oracle
def test_invoke_and_skill_errors_match_the_reference_engine(host: CapabilityHost) -> None:
    from ratel_ai.skill_tools import get_skill_content_tool

    ratel, catalog, skill_catalog, _ = _reference(TOOLS, SKILLS, SERVERS)
    invoke = ratel.invoke_tool_tool(catalog)
    for request_ in ({"toolId": "nope", "args": {}}, {"toolId": "weather", "args": [1]}):
        assert host.invoke_tool(request_) == asyncio.run(invoke.execute(request_))
    skill_tool = get_skill_content_tool(skill_catalog)
    for request_ in ({"skillId": "triage"}, {"skillId": "nope"}):
        assert host.get_skill_content(request_) == asyncio.run(skill_tool.execute(request_))
