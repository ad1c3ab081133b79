"""The three capability tools an agent uses to reach a catalog it cannot see.

`search_capabilities` ranks tools (grouped by server) and skills for a query,
`invoke_tool` runs a catalog tool by id, and `get_skill_content` loads a
skill's body. Their names, descriptions and JSON Schemas follow the reference
engine (ratel-ai 0.12.0) so that what the workbench shows is what a model
would be shown.

`CapabilityHost` holds the catalogs, the server descriptions and optional
Python handlers, answers the three tools, and records every search in a
`Trace` with its origin: `"direct"` when host code searched, `"agent"` when the
search came through a capability tool (eager recall included).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
import jsonschema.exceptions

from core.trace import Origin, Trace, TraceEvent, TraceHit  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from core.catalog import Catalog
    from core.search import Hit, SkillCatalog, ToolCatalog

SEARCH_CAPABILITIES = "search_capabilities"
"""Name of the discovery tool."""
INVOKE_TOOL = "invoke_tool"
"""Name of the tool that runs a catalog tool by id."""
GET_SKILL_CONTENT = "get_skill_content"
"""Name of the tool that loads a skill's body."""
CAPABILITY_TOOL_NAMES = (SEARCH_CAPABILITIES, INVOKE_TOOL, GET_SKILL_CONTENT)

DEFAULT_TOP_K_TOOLS = 5
DEFAULT_TOP_K_SKILLS = 3
MAX_TOP_K = 50
MAX_SKILL_DESCRIPTION_CHARS = 160
"""Skill descriptions in search results are collapsed to one line of at most this many characters."""

ToolHandler = Callable[[dict[str, Any]], Any]
"""A Python implementation of a catalog tool: takes the validated args, returns a JSON value (may be async)."""

# --- tool definitions --------------------------------------------------------------------------

_SEARCH_INTRO = (
    "Discover capabilities beyond the ones already in your direct tool list. Call "
    "this BEFORE refusing a request, falling back to a generic capability (web "
    "fetch, shell, built-in search), or improvising a multi-step task: a "
    "purpose-built capability may be in the catalog but not pre-loaded. Pass a "
    "natural-language query describing what you want to do."
)
_SEARCH_RESULT_TOOLS = " You get back a `tools` bucket (executable) — run one via invoke_tool."
_SEARCH_RESULT_TOOLS_AND_SKILLS = (
    " You get back two independent buckets: `tools` (run one via invoke_tool) and "
    "`skills` (reusable playbooks — load one's instructions via get_skill_content, "
    "then follow it). Skills have their own result budget, so they are never "
    "crowded out by tools."
)
_SERVERS_HEADER = "This catalog aggregates tools from these upstream MCP servers:"

SEARCH_CAPABILITIES_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "describe what you want to do"},
        "topKTools": {
            "type": "integer",
            "minimum": 1,
            "description": "max tools to return (default 5)",
        },
        "topKSkills": {
            "type": "integer",
            "minimum": 1,
            "description": "max skills to return (default 3)",
        },
    },
    "required": ["query"],
}

_SERVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "instructions": {"type": "string"},
    },
    "required": ["name"],
}
_TOOL_HIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "toolId": {"type": "string"},
        "score": {"type": "number"},
        "description": {"type": "string"},
        "inputSchema": {"type": "object"},
    },
}
_SKILL_HIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "skillId": {"type": "string"},
        "score": {"type": "number"},
        "description": {"type": "string"},
    },
    "required": ["skillId", "score", "description"],
}
SEARCH_CAPABILITIES_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tools": {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "server": _SERVER_SCHEMA,
                            "hits": {"type": "array", "items": _TOOL_HIT_SCHEMA},
                        },
                        "required": ["server", "hits"],
                    },
                },
            },
            "required": ["groups"],
        },
        "skills": {"type": "array", "items": _SKILL_HIT_SCHEMA},
    },
    "required": ["tools", "skills"],
}

INVOKE_TOOL_DESCRIPTION = (
    "Invoke a tool from the catalog by its id. Use this to call tools that "
    "aren't in your direct tool list — first find one via the catalog's "
    "search tool, then run it here. Pass the tool's arguments nested "
    "under the `args` field — do NOT flatten them to the top level."
)
INVOKE_TOOL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "toolId": {
            "type": "string",
            "description": (
                "id of the tool to invoke (use the catalog's search tool to find available ids)"
            ),
        },
        "args": {
            "type": "object",
            "description": (
                "arguments object matching the tool's inputSchema, nested as a single object"
            ),
            "additionalProperties": True,
        },
    },
    "required": ["toolId", "args"],
}
INVOKE_TOOL_OUTPUT_SCHEMA: dict[str, Any] = {"type": "object"}

GET_SKILL_CONTENT_DESCRIPTION = (
    "Load a skill's full instructions by its id. Use this after "
    "search_capabilities surfaces a relevant skill: pull the complete "
    "playbook into your context, then follow it. Returns the skill body "
    "(Markdown); any bundled scripts or files are referenced by absolute "
    "path inside it."
)
GET_SKILL_CONTENT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "skillId": {
            "type": "string",
            "description": "id of the skill to load (use search_capabilities to find available ids)",
        },
    },
    "required": ["skillId"],
}
GET_SKILL_CONTENT_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "body": {"type": "string"},
        "error": {"type": "string"},
        "isError": {"type": "boolean"},
    },
}


@dataclass(frozen=True)
class UpstreamServer:
    """An upstream server as advertised to the model.

    `name` is the `<name>` prefix of its `<name>__<tool>` ids; `description` and
    `instructions` enrich the server group of search results; `tool_count`, when
    known, is shown in the listing appended to the search tool's description.
    """

    name: str
    description: str | None = None
    instructions: str | None = None
    tool_count: int | None = None


def compact_description(text: str, limit: int = MAX_SKILL_DESCRIPTION_CHARS) -> str:
    """Collapse whitespace to single spaces and cut to `limit` characters at a word, adding `…`."""
    collapsed = " ".join(text.split())
    if len(collapsed) <= limit:
        return collapsed
    cut = collapsed[: limit - 1]
    last_space = cut.rfind(" ")
    head = cut[:last_space] if last_space > 80 else cut
    return f"{head.rstrip()}…"


def server_listing_line(server: UpstreamServer) -> str:
    """One bullet of the server listing: `- name — description (N tools)`."""
    line = f"- {server.name}"
    if server.description:
        line += f" — {compact_description(server.description)}"
    if server.tool_count is not None:
        line += f" ({server.tool_count} tools)"
    return line


def search_capabilities_description(
    has_skills: bool, servers: Iterable[UpstreamServer] = ()
) -> str:
    """The description of `search_capabilities` shown to the model.

    The skills clause appears only when a non-empty skill catalog is wired in;
    a server listing is appended when servers are given.
    """
    text = _SEARCH_INTRO + (_SEARCH_RESULT_TOOLS_AND_SKILLS if has_skills else _SEARCH_RESULT_TOOLS)
    lines = [server_listing_line(server) for server in servers]
    if not lines:
        return text
    return text + "\n\n" + _SERVERS_HEADER + "\n" + "\n".join(lines)


def search_capabilities_definition(
    has_skills: bool = False, servers: Iterable[UpstreamServer] = ()
) -> dict[str, Any]:
    """`{name, description, inputSchema}` of `search_capabilities`."""
    return {
        "name": SEARCH_CAPABILITIES,
        "description": search_capabilities_description(has_skills, servers),
        "inputSchema": _copy(SEARCH_CAPABILITIES_INPUT_SCHEMA),
    }


def invoke_tool_definition() -> dict[str, Any]:
    """`{name, description, inputSchema}` of `invoke_tool`."""
    return {
        "name": INVOKE_TOOL,
        "description": INVOKE_TOOL_DESCRIPTION,
        "inputSchema": _copy(INVOKE_TOOL_INPUT_SCHEMA),
    }


def get_skill_content_definition() -> dict[str, Any]:
    """`{name, description, inputSchema}` of `get_skill_content`."""
    return {
        "name": GET_SKILL_CONTENT,
        "description": GET_SKILL_CONTENT_DESCRIPTION,
        "inputSchema": _copy(GET_SKILL_CONTENT_INPUT_SCHEMA),
    }


def output_schema(tool_name: str) -> dict[str, Any]:
    """The output JSON Schema of one capability tool."""
    schemas = {
        SEARCH_CAPABILITIES: SEARCH_CAPABILITIES_OUTPUT_SCHEMA,
        INVOKE_TOOL: INVOKE_TOOL_OUTPUT_SCHEMA,
        GET_SKILL_CONTENT: GET_SKILL_CONTENT_OUTPUT_SCHEMA,
    }
    if tool_name not in schemas:
        raise ValueError(
            f"unknown capability tool {tool_name!r}; valid: {', '.join(CAPABILITY_TOOL_NAMES)}"
        )
    return _copy(schemas[tool_name])


def clamp_top_k(value: object, default: int) -> int:
    """A model-supplied top-K as an int in 1..MAX_TOP_K; `default` for anything that is not a positive int.

    `bool` counts as not an int, as in the reference engine.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return default
    return min(value, MAX_TOP_K)


def group_name(tool_id: str) -> str:
    """The server group of a tool id: the part before the first `__`, or the whole id when there is none."""
    sep = tool_id.find("__")
    return tool_id[:sep] if sep > 0 else tool_id


def error_result(message: str) -> dict[str, Any]:
    """The structured error a capability tool returns instead of raising."""
    return {"error": message, "isError": True}


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


# --- host ----------------------------------------------------------------------------------------


def _run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, also when an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _server_infos(servers: Mapping[str, Any] | Iterable[Any] | None) -> dict[str, UpstreamServer]:
    if servers is None:
        return {}
    items = servers.values() if isinstance(servers, Mapping) else servers
    infos: dict[str, UpstreamServer] = {}
    for item in items:
        if isinstance(item, UpstreamServer):
            info = item
        elif isinstance(item, Mapping):
            info = UpstreamServer(
                name=item["name"],
                description=item.get("description"),
                instructions=item.get("instructions"),
                tool_count=item.get("tool_count"),
            )
        else:
            info = UpstreamServer(
                name=item.name,
                description=getattr(item, "description", None),
                instructions=getattr(item, "instructions", None),
                tool_count=getattr(item, "tool_count", None),
            )
        infos[info.name] = info
    return infos


class CapabilityHost:
    """Answers the three capability tools over a tool catalog and an optional skill catalog.

    Args:
        tools: the tool catalog; searches always use its construction-time `method`.
        skills: an optional skill catalog, ranked in its own bucket.
        servers: server descriptions (a mapping name -> info, or an iterable of infos);
            each info needs `name` and may have `description`, `instructions`, `tool_count`.
        handlers: Python implementations by tool id; tools without one answer with a dry run.
        clock: returns the wall-clock timestamp of trace events (injectable for tests).
    """

    def __init__(
        self,
        tools: ToolCatalog,
        skills: SkillCatalog | None = None,
        *,
        servers: Mapping[str, Any] | Iterable[Any] | None = None,
        handlers: Mapping[str, ToolHandler] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tools = tools
        self.skills = skills
        self.servers = _server_infos(servers)
        self.handlers: dict[str, ToolHandler] = dict(handlers or {})
        # One trace for both catalogs: searches by host code (through the host or
        # the catalogs directly) record origin "direct", the capability tools "agent".
        self.trace = tools.trace if tools.trace is not None else Trace(clock)
        for catalog in (tools, skills):
            if catalog is not None and catalog.trace is None:
                catalog.trace = self.trace

    @classmethod
    def from_catalog(
        cls,
        catalog: Catalog,
        *,
        method: str = "bm25",
        handlers: Mapping[str, ToolHandler] | None = None,
        **search_options: Any,
    ) -> CapabilityHost:
        """Build a host over a loaded `Catalog`: a ToolCatalog, a SkillCatalog when it has skills, its servers."""
        from core.search import SkillCatalog, ToolCatalog

        tools = ToolCatalog(catalog.tools, method=method, **search_options)
        skills = (
            SkillCatalog(catalog.skills, method=method, **search_options)
            if catalog.skills
            else None
        )
        return cls(tools, skills, servers=getattr(catalog, "servers", None), handlers=handlers)

    # -- facts ------------------------------------------------------------------

    @property
    def method(self) -> str:
        """The retrieval method every search uses (the tool catalog's construction-time method)."""
        return self.tools.method

    @property
    def has_skills(self) -> bool:
        return self.skills is not None and len(self.skills) > 0

    def server_list(self) -> list[UpstreamServer]:
        """Servers to advertise, in name order, with tool counts filled in from the catalog."""
        counts: dict[str, int] = {}
        for tool in self.tools.tools:
            name = group_name(tool.id)
            counts[name] = counts.get(name, 0) + 1
        return [
            info
            if info.tool_count is not None or name not in counts
            else UpstreamServer(info.name, info.description, info.instructions, counts[name])
            for name, info in sorted(self.servers.items())
        ]

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The capability tools to put in the model's tool list (`get_skill_content` only with skills)."""
        defs = [
            search_capabilities_definition(self.has_skills, self.server_list()),
            invoke_tool_definition(),
        ]
        if self.has_skills:
            defs.append(get_skill_content_definition())
        return defs

    # -- searches ---------------------------------------------------------------

    def _traced(self, catalog: Any, query: str, top_k: int, origin: Origin) -> list[Hit]:
        """Search with the catalog's construction-time method; the catalog's trace records it."""
        return list(catalog.search_with(query, top_k, origin=origin))

    def search(self, query: str, top_k: int = 10) -> list[Hit]:
        """Rank tools for host code (traced with origin `direct`)."""
        return self._traced(self.tools, query, top_k, "direct")

    async def search_async(self, query: str, top_k: int = 10) -> list[Hit]:
        """`search` for async callers."""
        return self.search(query, top_k)

    def search_skills(self, query: str, top_k: int = 10) -> list[Hit]:
        """Rank skills for host code (traced with origin `direct`); empty without a skill catalog."""
        if self.skills is None:
            return []
        return self._traced(self.skills, query, top_k, "direct")

    async def search_skills_async(self, query: str, top_k: int = 10) -> list[Hit]:
        """`search_skills` for async callers."""
        return self.search_skills(query, top_k)

    # -- capability tools -------------------------------------------------------

    def search_capabilities(self, input: Mapping[str, Any]) -> dict[str, Any]:
        """Answer `search_capabilities` (origin `agent`)."""
        query = input.get("query") if isinstance(input, Mapping) else None
        if not isinstance(query, str):
            return error_result(
                f"invalid input for {SEARCH_CAPABILITIES}: `query` must be a string, "
                f"got {type(query).__name__}"
            )
        k_tools = clamp_top_k(input.get("topKTools"), DEFAULT_TOP_K_TOOLS)
        k_skills = clamp_top_k(input.get("topKSkills"), DEFAULT_TOP_K_SKILLS)

        groups: dict[str, dict[str, Any]] = {}
        seen: set[str] = set()

        def add_tool(tool_id: str, score: float | int) -> None:
            if tool_id in seen or tool_id not in self.tools:
                return
            seen.add(tool_id)
            tool = self.tools.get(tool_id)
            name = group_name(tool_id)
            group = groups.get(name)
            if group is None:
                server: dict[str, Any] = {"name": name}
                info = self.servers.get(name)
                if info is not None and info.description:
                    server["description"] = info.description
                if info is not None and info.instructions:
                    server["instructions"] = info.instructions
                group = groups[name] = {"server": server, "hits": []}
            group["hits"].append(
                {
                    "toolId": tool_id,
                    "score": score,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                }
            )

        for hit in self._traced(self.tools, query, k_tools, "agent"):
            add_tool(hit.id, float(hit.score))

        skills: list[dict[str, Any]] = []
        if self.skills is not None:
            skill_hits = self._traced(self.skills, query, k_skills, "agent")
            for hit in skill_hits:
                skill = self.skills.get(hit.id)
                skills.append(
                    {
                        "skillId": hit.id,
                        "score": float(hit.score),
                        "description": compact_description(skill.description),
                    }
                )
            # A matched skill's declared tools ride along with score 0, beyond topKTools.
            for hit in skill_hits:
                for tool_id in self.skills.get(hit.id).tools:
                    add_tool(tool_id, 0)

        return {"tools": {"groups": list(groups.values())}, "skills": skills}

    async def search_capabilities_async(self, input: Mapping[str, Any]) -> dict[str, Any]:
        """`search_capabilities` for async callers."""
        return self.search_capabilities(input)

    async def invoke_tool_async(self, input: Mapping[str, Any]) -> Any:
        """Answer `invoke_tool`: validate `args` against the tool's input schema, then run or dry-run it."""
        tool_id = input.get("toolId") if isinstance(input, Mapping) else None
        if not isinstance(tool_id, str) or tool_id not in self.tools:
            return error_result(
                f"unknown toolId: {tool_id}. "
                "Use the catalog's search tool to discover available ids."
            )
        args = input.get("args")
        if args is None:
            # Tolerate a flattened call, as the reference engine does.
            args = {k: v for k, v in input.items() if k not in ("toolId", "args")}
        elif not isinstance(args, dict):
            return error_result(
                f"invalid args for {tool_id}: "
                "`args` must be an object containing the tool's arguments."
            )
        tool = self.tools.get(tool_id)
        problem = validation_error(tool.input_schema, args)
        if problem is not None:
            return error_result(f"invalid args for {tool_id}: {problem}")
        handler = self.handlers.get(tool_id)
        if handler is None:
            return dry_run_result(tool_id, args)
        try:
            result = handler(args)
            if inspect.isawaitable(result):
                result = await result
        except Exception as err:
            return error_result(f"tool {tool_id} threw: {err}")
        return result

    def invoke_tool(self, input: Mapping[str, Any]) -> Any:
        """Answer `invoke_tool`; see `invoke_tool_async`."""
        return _run_sync(self.invoke_tool_async(input))

    def get_skill_content(self, input: Mapping[str, Any]) -> dict[str, Any]:
        """Answer `get_skill_content`: `{body}` or a structured error for an unknown id."""
        skill_id = input.get("skillId") if isinstance(input, Mapping) else None
        if not isinstance(skill_id, str) or self.skills is None or skill_id not in self.skills:
            return error_result(
                f"unknown skillId: {skill_id}. Use search_capabilities to discover available ids."
            )
        return {"body": self.skills.get(skill_id).body}

    def call(self, name: str, input: Mapping[str, Any]) -> Any:
        """Dispatch a capability tool call by name; an unknown name is a structured error."""
        if name == SEARCH_CAPABILITIES:
            return self.search_capabilities(input)
        if name == INVOKE_TOOL:
            return self.invoke_tool(input)
        if name == GET_SKILL_CONTENT:
            return self.get_skill_content(input)
        return error_result(
            f"unknown capability tool {name!r}; valid: {', '.join(CAPABILITY_TOOL_NAMES)}"
        )



def validation_error(schema: Mapping[str, Any], instance: Any) -> str | None:
    """The most relevant JSON Schema violation of `instance`, as one line, or None when it is valid.

    The validator class follows the schema's `$schema` (Draft 2020-12 when absent).
    An invalid schema is reported as such rather than raised.
    """
    schema = dict(schema) if schema else {}
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as err:
        return f"the tool's input schema is invalid: {err.message}"
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(instance))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at /{where})" if where else error.message


def dry_run_result(tool_id: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """What `invoke_tool` answers for a tool without a Python handler: what would have been called."""
    rendered = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    return {
        "dryRun": True,
        "toolId": tool_id,
        "args": dict(args),
        "message": f"dry run: would call {tool_id} with {rendered}",
    }
