"""Catalog models (`Tool`, `Skill`, `ServerInfo`, `Catalog`) and their loaders.

A catalog is what an agent is offered: tools (name, description, JSON schemas)
and skills (name, description, tags, a markdown body). The loaders accept the
shapes people actually have on disk and detect which one from the content:

``native``
    ``[{id?, name, description, input_schema, output_schema?, server?, group?}]``
    or ``{"tools": [...], "skills": [...], "servers": {name: {description, instructions}}}``.
    ``id`` defaults to ``name``. Unknown keys are errors (they are usually typos).
``anthropic``
    A list of ``{name, description, input_schema}``. Rule: a tool list is Anthropic
    when *every* item has ``input_schema`` and none has a native-only key
    (``id``, ``output_schema``, ``server``, ``group``); otherwise it is native.
    Anthropic's extra keys (``type``, ``cache_control``, ``strict``...) are ignored.
``openai``
    ``[{"type": "function", "function": {name, description, parameters}}]``, the
    flat Responses-API form ``{"type": "function", name, description, parameters}``,
    or either wrapped in ``{"tools": [...]}``. ``parameters`` becomes ``input_schema``.
``mcp``
    A ``tools/list`` result ``{"tools": [{name, description, inputSchema, outputSchema?}]}``,
    bare or inside a JSON-RPC response. A server name given as ``"server": "x"`` or
    ``"serverInfo": {"name": "x"}`` makes the ids ``x__<name>``. Other MCP keys
    (``title``, ``annotations``, ``nextCursor``...) are ignored.
``mcp-workspace``
    ``{"servers": {"<server>": {description?, instructions?, tools: [<MCP tools>]}}, "skills"?}``;
    ids are ``<server>__<name>``.
``skills-folder``
    A folder (or .zip) of ``<skill>/SKILL.md`` files, each with YAML front matter
    (``name``, ``description``, ``tags`` as a list or comma string, optional ``tools``
    and ``id``) followed by the markdown body. Other front-matter keys are ignored.
    Every ``SKILL.md`` below the folder is read, in path order, at any depth (so a zip
    with a top-level folder works); hidden folders and ``__MACOSX`` are skipped.

Any of the JSON shapes may be written in YAML; top-level keys starting with ``x-`` are
ignored (a place for YAML anchors). Loading never drops an item: every
problem raises `CatalogError` naming the file, the item (``tools[3] ("get_user")``),
what is wrong and how to fix it. Documented limits are the ``MAX_*`` constants below.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import math
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import CatalogError

__all__ = [
    "FORMATS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FILE_BYTES",
    "MAX_ID_CHARS",
    "MAX_SCHEMA_DEPTH",
    "SERVER_SEPARATOR",
    "Catalog",
    "ServerInfo",
    "Skill",
    "Tool",
    "catalog_to_data",
    "load_catalog",
    "parse_catalog",
    "parse_catalog_bytes",
    "parse_catalog_text",
    "parse_skill_markdown",
    "parse_tool",
    "save_catalog",
]

MAX_FILE_BYTES = 20 * 1024 * 1024
"""Largest catalog file (or SKILL.md, or total of SKILL.md files in a zip) accepted: 20 MiB."""
MAX_DESCRIPTION_CHARS = 100_000
"""Longest tool, skill or server description accepted, in characters."""
MAX_SCHEMA_DEPTH = 64
"""Deepest nesting of objects/arrays in a schema; ``{"properties": {"a": {}}}`` has depth 3."""
MAX_ID_CHARS = 512
"""Longest id, name, server name, group, tag or declared tool id accepted, in characters."""
SERVER_SEPARATOR = "__"
"""Joins a server name and a tool name into a tool id: ``filesystem__read_file``."""
FORMATS = ("native", "mcp", "mcp-workspace", "openai", "anthropic", "skills-folder")
"""Catalog formats the loaders detect and `Catalog.to_data` writes."""

_MODEL_CONFIG = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
# C0 and C1 control characters, and lone surrogates (which no UTF-8 file can hold).
_BAD_CHAR = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


# --------------------------------------------------------------------------- models


class Tool(BaseModel):
    """One tool definition, as the ranking engine sees it."""

    model_config = _MODEL_CONFIG

    id: str
    """Unique id within the catalog (hits and tie-breaks use it); defaults to the name."""
    name: str
    """The name the agent calls; projected into the indexed text."""
    description: str = ""
    """Free-text description; projected verbatim."""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    """JSON Schema of the arguments, kept as the raw dict."""
    output_schema: dict[str, Any] = Field(default_factory=dict)
    """JSON Schema of the result, kept as the raw dict (empty when not declared)."""
    server: str | None = None
    """MCP server the tool belongs to, if any."""
    group: str | None = None
    """Free grouping label (e.g. a product area), if any."""

    @field_validator("id", "name")
    @classmethod
    def _check_identifier(cls, value: str) -> str:
        return _raise_if(_identifier_problem(value, "value"), value)

    @field_validator("description")
    @classmethod
    def _check_description(cls, value: str) -> str:
        return _raise_if(_text_problem(value, "description"), value)


class Skill(BaseModel):
    """One skill: a named, described bundle of instructions that may declare tools."""

    model_config = _MODEL_CONFIG

    id: str
    """Unique id within the catalog's skills; defaults to the name."""
    name: str
    """The skill's name; projected into the indexed text."""
    description: str = ""
    """What the skill is for; projected verbatim."""
    tags: list[str] = Field(default_factory=list)
    """Tags; each projected whole and identifier-split."""
    tools: list[str] = Field(default_factory=list)
    """Ids of the tools the skill declares (offered alongside it)."""
    body: str = ""
    """The skill's markdown instructions; never indexed."""

    @field_validator("id", "name")
    @classmethod
    def _check_identifier(cls, value: str) -> str:
        return _raise_if(_identifier_problem(value, "value"), value)

    @field_validator("description")
    @classmethod
    def _check_description(cls, value: str) -> str:
        return _raise_if(_text_problem(value, "description"), value)


class ServerInfo(BaseModel):
    """An MCP server's own metadata (its tools live in `Catalog.tools`)."""

    model_config = _MODEL_CONFIG

    name: str
    """Server name; the prefix of its tools' ids."""
    description: str | None = None
    """What the server offers, if stated."""
    instructions: str | None = None
    """The server's instructions to the agent, if any."""


class Catalog(BaseModel):
    """Tools, skills and server metadata loaded from one source."""

    model_config = _MODEL_CONFIG

    tools: list[Tool] = Field(default_factory=list)
    """Tools in load order; ids are unique."""
    skills: list[Skill] = Field(default_factory=list)
    """Skills in load order; ids are unique."""
    servers: dict[str, ServerInfo] = Field(default_factory=dict)
    """MCP server metadata by server name (MCP and workspace formats)."""
    source: str | None = None
    """Where the catalog came from (a path or upload name), for messages."""
    format: str = "native"
    """Format it was loaded from (one of `FORMATS`); `to_data` writes it back in it."""

    @model_validator(mode="after")
    def _check_unique_ids(self) -> Catalog:
        for kind, items in (("tool", self.tools), ("skill", self.skills)):
            seen: set[str] = set()
            for item in items:
                if item.id in seen:
                    raise ValueError(f"duplicate {kind} id {_show(item.id)}; ids must be unique")
                seen.add(item.id)
        return self

    @cached_property
    def content_hash(self) -> str:
        """sha256 (hex) of the tools, skills and servers, independent of load order and process."""
        payload = {
            "tools": [_fields(t) for t in sorted(self.tools, key=lambda t: t.id)],
            "skills": [_fields(s) for s in sorted(self.skills, key=lambda s: s.id)],
            "servers": {k: _fields(v) for k, v in self.servers.items()},
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(b"ranklens-catalog-v1\n" + text.encode("ascii")).hexdigest()

    @cached_property
    def tool_index(self) -> dict[str, Tool]:
        """Tools by id."""
        return {t.id: t for t in self.tools}

    @cached_property
    def skill_index(self) -> dict[str, Skill]:
        """Skills by id."""
        return {s.id: s for s in self.skills}

    @property
    def is_empty(self) -> bool:
        """True when the catalog has neither tools nor skills."""
        return not self.tools and not self.skills

    def tool(self, tool_id: str) -> Tool:
        """The tool with this id; `CatalogError` (with close matches) when there is none."""
        if tool_id in self.tool_index:
            return self.tool_index[tool_id]
        raise CatalogError(_unknown_id_message("tool", tool_id, self.tool_index, self.source))

    def skill(self, skill_id: str) -> Skill:
        """The skill with this id; `CatalogError` (with close matches) when there is none."""
        if skill_id in self.skill_index:
            return self.skill_index[skill_id]
        raise CatalogError(_unknown_id_message("skill", skill_id, self.skill_index, self.source))

    def with_tool(self, tool: Tool) -> Catalog:
        """A new catalog with `tool` replacing the tool of the same id (in place) or appended."""
        return self._copy_with(tools=_replace_or_append(self.tools, tool))

    def with_skill(self, skill: Skill) -> Catalog:
        """A new catalog with `skill` replacing the skill of the same id (in place) or appended."""
        return self._copy_with(skills=_replace_or_append(self.skills, skill))

    def to_data(self, format: str | None = None) -> list[Any] | dict[str, Any]:
        """JSON-ready data in `format` (default: the format it was loaded from); see `catalog_to_data`."""
        return catalog_to_data(self, format)

    def save(self, path: str | Path, format: str | None = None) -> None:
        """Write the catalog to `path` (YAML for .yaml/.yml, else JSON); see `save_catalog`."""
        save_catalog(self, path, format)

    def _copy_with(self, **update: Any) -> Catalog:
        # A fresh instance (not model_copy) so cached properties are recomputed.
        fields = {"tools": self.tools, "skills": self.skills, "servers": self.servers}
        fields.update(update)
        return Catalog(**fields, source=self.source, format=self.format)


def _fields(model: BaseModel) -> dict[str, Any]:
    """A model's fields as a dict, without the copying `model_dump` does."""
    return {name: getattr(model, name) for name in type(model).model_fields}


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON data (much faster than `copy.deepcopy`)."""
    return json.loads(json.dumps(value))


def _replace_or_append(items: list[Any], new: Any) -> list[Any]:
    for i, old in enumerate(items):
        if old.id == new.id:
            return [*items[:i], new, *items[i + 1 :]]
    return [*items, new]


def _unknown_id_message(kind: str, wanted: str, index: Mapping[str, Any], source: str | None) -> str:
    # Close matches cost O(n) string comparisons: only offered for catalogs of human size.
    close = difflib.get_close_matches(str(wanted), list(index), n=3) if len(index) <= 5000 else []
    hint = f"did you mean {', '.join(map(_show, close))}?" if close else f"it has {len(index)} {kind}s"
    return f"{source or '<catalog>'}: no {kind} with id {_show(str(wanted))}; {hint}"


# --------------------------------------------------------------------------- checks
# Each check returns None or (problem, fix); loaders add the file and item to it,
# model validators raise it as a ValueError.

Problem = tuple[str, str] | None


def _raise_if(problem: Problem, value: str) -> str:
    """For model validators: raise `problem` as a ValueError, else return `value`."""
    if problem is not None:
        raise ValueError(f"{problem[0]}. Fix: {problem[1]}")
    return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({_show(value)})"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _show(text: str, limit: int = 60) -> str:
    """A quoted, escaped, shortened rendering of `text` for messages."""
    shown = json.dumps(text[:limit], ensure_ascii=False)
    return shown + ("..." if len(text) > limit else "")


def _identifier_problem(value: object, what: str) -> Problem:
    if not isinstance(value, str):
        example = f', e.g. "{value}"' if isinstance(value, int | float) and not isinstance(value, bool) else ""
        return f"{what} must be a string, got {_kind(value)}", f"write it as a quoted string{example}"
    if not value.strip():
        return f"{what} is empty", f"give it a non-empty {what}"
    if len(value) > MAX_ID_CHARS:
        return (
            f"{what} is {len(value)} characters long, over the limit MAX_ID_CHARS = {MAX_ID_CHARS}",
            f"shorten it to at most {MAX_ID_CHARS} characters",
        )
    bad = _BAD_CHAR.search(value)
    if bad:
        return (
            f"{what} contains the control character U+{ord(bad.group()):04X} at position {bad.start()}",
            "remove control characters (tabs, newlines, escapes) from it",
        )
    return None


def _text_problem(
    value: object, what: str, limit: int = MAX_DESCRIPTION_CHARS, limit_name: str = "MAX_DESCRIPTION_CHARS"
) -> Problem:
    if not isinstance(value, str):
        return f"{what} must be a string, got {_kind(value)}", f"write the {what} as a quoted string"
    if len(value) > limit:
        return (
            f"{what} is {len(value)} characters long, over the limit {limit_name} = {limit}",
            f"shorten it to at most {limit} characters",
        )
    bad = _SURROGATE.search(value)
    if bad:
        return (
            f"{what} contains an unpaired surrogate U+{ord(bad.group()):04X} at position {bad.start()}",
            "replace the broken \\uXXXX escape with the intended character",
        )
    return None


@dataclass
class _Budget:
    """How many schema values may still be visited: stops YAML alias bombs, whose
    expansion can exceed the file's size by orders of magnitude."""

    remaining: int


def _schema_problem(schema: dict[str, Any], label: str, budget: _Budget | None) -> Problem:
    """Walk a schema (iteratively, containers only on the stack) checking depth, keys and values."""
    # A path is a linked (parent, key-or-index) pair, turned into text only for a message.
    stack: list[tuple[dict[Any, Any] | list[Any], int, Any]] = [(schema, 1, (None, label))]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            return (
                f"{label} nests deeper than MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH} levels "
                f"at {_path_text(path)}",
                "flatten the schema, or move repeated parts into $defs and use $ref",
            )
        if budget is not None:
            budget.remaining -= len(node) + 1
            if budget.remaining < 0:
                return (
                    "the file's YAML aliases expand to more values than the file has bytes",
                    "write the repeated parts out instead of using aliases (*name)",
                )
        is_dict = isinstance(node, dict)
        for key, value in node.items() if is_dict else enumerate(node):
            if is_dict and type(key) is not str:
                return (
                    f"{label} has the non-string key {key!r} at {_path_text(path)}",
                    "quote the key (YAML reads unquoted 1, yes, on, null as non-strings)",
                )
            kind = type(value)
            if kind is str:
                if not value.isascii() and _SURROGATE.search(value):
                    return (
                        f"{label} has an unpaired surrogate at {_path_text((path, key))}",
                        "replace the broken \\uXXXX escape with the intended character",
                    )
            elif kind is dict or kind is list or isinstance(value, dict | list):
                stack.append((value, depth + 1, (path, key)))
            elif kind is float:
                if not math.isfinite(value):
                    return (
                        f"{label} has the non-finite number {value!r} at {_path_text((path, key))}",
                        "use a finite number (JSON has no NaN or Infinity)",
                    )
            elif value is not None and not isinstance(value, int | str):
                return (
                    f"{label} has {_kind(value)} at {_path_text((path, key))}, which JSON cannot hold",
                    "quote the value (YAML reads unquoted dates and times as non-strings)",
                )
    return None


def _path_text(path: Any) -> str:
    steps: list[str] = []
    while path is not None:
        path, step = path
        steps.append(step if path is None else f"[{step}]" if type(step) is int else f".{step}")
    steps.reverse()
    if len(steps) > 12:
        steps = [*steps[:6], f"...({len(steps) - 10} more)...", *steps[-4:]]
    return "".join(steps)


# --------------------------------------------------------------------------- items


@dataclass(frozen=True)
class _Item:
    """Where an item sits (file and path) and, once read, its name; builds errors."""

    source: str
    path: str
    name: str | None = None

    def error(self, problem: str, fix: str) -> CatalogError:
        where = self.path if self.name is None else f"{self.path} ({_show(self.name)})"
        return CatalogError(f"{self.source}: {where}: {problem}. Fix: {fix}.")

    def check(self, problem: Problem) -> None:
        if problem is not None:
            raise self.error(*problem)

    def named(self, name: str) -> _Item:
        return _Item(self.source, self.path, name)


@dataclass
class _Ctx:
    """Per-file parsing state: the name used in messages and the alias budget."""

    source: str
    budget: _Budget | None = None
    ids: dict[str, str] = field(default_factory=dict)


_NATIVE_TOOL_KEYS = ("id", "name", "description", "input_schema", "output_schema", "server", "group")
_NATIVE_ONLY_KEYS = frozenset({"id", "output_schema", "server", "group"})
_ANTHROPIC_KEYS = ("name", "description", "input_schema")
_ANTHROPIC_EXTRA_KEYS = frozenset(
    {"type", "cache_control", "strict", "defer_loading", "input_examples", "allowed_callers"}
)
_SKILL_KEYS = ("id", "name", "description", "tags", "tools", "body")
_SERVER_KEYS = ("description", "instructions", "tools", "title", "version")
_MCP_TOP_KEYS = frozenset({"nextCursor", "_meta", "server", "serverInfo", "instructions"})
_TOP_KEYS = {
    "native": ("tools", "skills", "servers", "$schema"),
    "anthropic": ("tools", "skills", "$schema"),
    "openai": ("tools", "skills", "$schema"),
    "mcp-workspace": ("servers", "skills", "$schema"),
}
_SHAPES = (
    'a list of tools [{"name", "description", "input_schema"}, ...] (native or Anthropic); '
    '{"tools": [...], "skills": [...]}; an MCP tools/list result {"tools": [{"name", '
    '"inputSchema"}]} or its JSON-RPC response; an MCP workspace {"servers": {"<server>": '
    '{"tools": [...]}}}; OpenAI function tools [{"type": "function", "function": {...}}]'
)


def _check_keys(item: _Item, raw: Mapping[Any, Any], allowed: Iterable[str], ignored=frozenset()) -> None:
    allowed = tuple(allowed)
    for key in raw:
        if key in allowed or key in ignored or (item.path == "top level" and _is_extension(key)):
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1)
        hint = f'did you mean "{close[0]}"? ' if close else ""
        raise item.error(f"unknown key {_show(str(key))}", f"{hint}accepted keys are {', '.join(allowed)}")


def _is_extension(key: object) -> bool:
    """Top-level ``x-...`` keys are ignored: a place for YAML anchors and tool-specific metadata."""
    return isinstance(key, str) and key.startswith("x-")


def _make_tool(
    item: _Item,
    raw: Mapping[str, Any],
    ctx: _Ctx,
    *,
    keys: Mapping[str, str],
    server: str | None = None,
) -> Tool:
    """Build a Tool from `raw`, whose field names are given by `keys` (field -> key in raw)."""

    def get(name: str) -> Any:
        return raw.get(keys[name]) if name in keys else None

    name = get("name")
    if name is None:
        raise item.error(f'has no "{keys["name"]}"', f'add "{keys["name"]}": "<tool_name>"')
    item.check(_identifier_problem(name, keys["name"]))
    item = item.named(name)

    tool_id = get("id")
    if tool_id is None:
        tool_id = f"{server}{SERVER_SEPARATOR}{name}" if server else name
    item.check(_identifier_problem(tool_id, keys.get("id", "id")))
    if tool_id in ctx.ids:
        fix = (
            "tool names must be unique within a server"
            if server
            else 'rename one of them or give one a distinct "id"'
        )
        raise item.error(f"duplicate id {_show(tool_id)}: {ctx.ids[tool_id]} has the same id", fix)
    ctx.ids[tool_id] = item.path

    description = get("description")
    if description is not None:
        item.check(_text_problem(description, keys["description"], MAX_DESCRIPTION_CHARS))

    schemas = {}
    for field_name in ("input_schema", "output_schema"):
        schema = get(field_name)
        label = keys.get(field_name, field_name)
        if schema is None:
            continue
        if not isinstance(schema, dict):
            raise item.error(
                f"{label} must be a JSON object, got {_kind(schema)}",
                f'write {label} as an object such as {{"type": "object", "properties": {{...}}}}',
            )
        item.check(_schema_problem(schema, label, ctx.budget))
        schemas[field_name] = schema

    extra = {}
    for field_name in ("server", "group"):
        value = get(field_name)
        if value is not None:
            item.check(_identifier_problem(value, field_name))
            extra[field_name] = value
    if server is not None:
        extra["server"] = server
    try:
        return Tool(id=tool_id, name=name, description=description or "", **schemas, **extra)
    except ValidationError as exc:  # every check above should have caught it first
        raise item.error(f"is not a valid tool ({exc.errors()[0]['msg']})", "correct that field") from exc


def _native_tool(raw: dict[str, Any], item: _Item, ctx: _Ctx) -> Tool:
    _check_keys(item, raw, _NATIVE_TOOL_KEYS)
    return _make_tool(item, raw, ctx, keys={k: k for k in _NATIVE_TOOL_KEYS})


def _anthropic_tool(raw: dict[str, Any], item: _Item, ctx: _Ctx) -> Tool:
    _check_keys(item, raw, _ANTHROPIC_KEYS, _ANTHROPIC_EXTRA_KEYS)
    return _make_tool(item, raw, ctx, keys={k: k for k in _ANTHROPIC_KEYS})


def _openai_tool(raw: dict[str, Any], item: _Item, ctx: _Ctx) -> Tool:
    if raw.get("type", "function" if "function" in raw else None) != "function":
        raise item.error(
            f'is not an OpenAI function tool (type is {_kind(raw.get("type"))})',
            'only {"type": "function", ...} tools can be ranked; remove built-in tools',
        )
    if "function" not in raw:  # flat Responses-API form
        return _make_tool(item, raw, ctx, keys={"name": "name", "description": "description",
                                                "input_schema": "parameters"})
    function = raw["function"]
    if not isinstance(function, dict):
        raise item.error(f'"function" must be an object, got {_kind(function)}',
                         'write it as {"name": ..., "description": ..., "parameters": {...}}')
    keys = {"name": "function.name", "description": "function.description",
            "input_schema": "function.parameters"}
    flat = {keys["name"]: function.get("name"), keys["description"]: function.get("description"),
            keys["input_schema"]: function.get("parameters")}
    return _make_tool(item, flat, ctx, keys=keys)


def _mcp_tool(raw: dict[str, Any], item: _Item, ctx: _Ctx, server: str | None) -> Tool:
    keys = {"name": "name", "description": "description",
            "input_schema": "inputSchema" if "inputSchema" in raw else "input_schema",
            "output_schema": "outputSchema" if "outputSchema" in raw else "output_schema"}
    return _make_tool(item, raw, ctx, keys=keys, server=server)


def _string_list(item: _Item, value: object, what: str) -> list[str]:
    """A list of strings from a list or a comma-separated string (None -> [])."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        raise item.error(f"{what} must be a list of strings, got {_kind(value)}",
                         f'write {what} as ["a", "b"] or "a, b"')
    for i, entry in enumerate(value):
        item.check(_identifier_problem(entry, f"{what}[{i}]"))
    return list(value)


def _make_skill(item: _Item, raw: Mapping[str, Any], ctx: _Ctx, *, body: object = None) -> Skill:
    name = raw.get("name")
    if name is None:
        raise item.error('has no "name"', 'add "name: <skill-name>"')
    item.check(_identifier_problem(name, "name"))
    item = item.named(name)
    skill_id = name if raw.get("id") is None else raw["id"]
    item.check(_identifier_problem(skill_id, "id"))
    if skill_id in ctx.ids:
        raise item.error(f"duplicate skill id {_show(skill_id)}: {ctx.ids[skill_id]} has the same id",
                         'rename one of them or give one a distinct "id"')
    ctx.ids[skill_id] = item.path
    description = raw.get("description")
    if description is not None:
        item.check(_text_problem(description, "description", MAX_DESCRIPTION_CHARS))
    body = raw.get("body") if body is None else body
    if body is not None:
        item.check(_text_problem(body, "body", MAX_FILE_BYTES, "MAX_FILE_BYTES"))
    return Skill(id=skill_id, name=name, description=description or "",
                 tags=_string_list(item, raw.get("tags"), "tags"),
                 tools=_string_list(item, raw.get("tools"), "tools"), body=body or "")


# --------------------------------------------------------------------------- shapes


def _objects(items: list[Any], ctx: _Ctx, prefix: str) -> Iterable[tuple[dict[str, Any], _Item]]:
    for i, raw in enumerate(items):
        item = _Item(ctx.source, f"{prefix}[{i}]")
        if not isinstance(raw, dict):
            raise item.error(f"is {_kind(raw)}, not an object", 'write each item as {"name": ..., ...}')
        function = raw.get("function")
        name = function.get("name") if isinstance(function, dict) else raw.get("name")
        yield raw, (item.named(name) if isinstance(name, str) else item)


def _tools_format(items: list[Any], top: Mapping[str, Any]) -> str:
    dicts = [x for x in items if isinstance(x, dict)]
    if any(x.get("type") == "function" or "function" in x for x in dicts):
        return "openai"
    if _MCP_TOP_KEYS & top.keys() or any("inputSchema" in x or "outputSchema" in x for x in dicts):
        return "mcp"
    if dicts and len(dicts) == len(items) and all(
        "input_schema" in x and not _NATIVE_ONLY_KEYS & x.keys() for x in dicts
    ):
        return "anthropic"
    return "native"


def _mcp_server(top: Mapping[str, Any], ctx: _Ctx) -> ServerInfo | None:
    """The server named by a tools/list document (``server`` or ``serverInfo.name``), if any."""
    info = {} if top.get("serverInfo") is None else top["serverInfo"]
    item = _Item(ctx.source, "serverInfo")
    if not isinstance(info, dict):
        raise item.error(f"must be an object, got {_kind(info)}", 'write {"name": "<server>"}')
    name = top.get("server", info.get("name"))
    if name is None:
        return None
    item = _Item(ctx.source, "server")
    item.check(_identifier_problem(name, "server name"))
    _check_server_name(item, name)
    description = info.get("description", top.get("description"))
    instructions = top.get("instructions", info.get("instructions"))
    for what, text in (("description", description), ("instructions", instructions)):
        if text is not None:
            item.check(_text_problem(text, what, MAX_DESCRIPTION_CHARS))
    return ServerInfo(name=name, description=description, instructions=instructions)


def _check_server_name(item: _Item, name: str) -> None:
    if SERVER_SEPARATOR in name:
        raise item.error(f'server name {_show(name)} contains "{SERVER_SEPARATOR}", '
                         "which separates server and tool in ids",
                         f'rename the server without "{SERVER_SEPARATOR}"')


def _parse_tools(items: list[Any], fmt: str, top: Mapping[str, Any], ctx: _Ctx):
    if fmt == "mcp":
        server = _mcp_server(top, ctx)
        name = server.name if server else None
        tools = [_mcp_tool(raw, item, ctx, name) for raw, item in _objects(items, ctx, "tools")]
        return tools, ({server.name: server} if server else {})
    make = {"openai": _openai_tool, "anthropic": _anthropic_tool, "native": _native_tool}[fmt]
    return [make(raw, item, ctx) for raw, item in _objects(items, ctx, "tools")], {}


def _parse_skills(value: object, ctx: _Ctx) -> list[Skill]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Item(ctx.source, "skills").error(f"must be a list, got {_kind(value)}",
                                                 'write "skills": [{"name": ..., ...}]')
    skills, skill_ctx = [], _Ctx(ctx.source, ctx.budget)
    for raw, item in _objects(value, skill_ctx, "skills"):
        _check_keys(item, raw, _SKILL_KEYS)
        skills.append(_make_skill(item, raw, skill_ctx))
    return skills


def _server_meta(name: object, raw: object, item: _Item, allowed: tuple[str, ...]) -> ServerInfo:
    item.check(_identifier_problem(name, "server name"))
    _check_server_name(item, name)
    if not isinstance(raw, dict):
        raise item.error(f"must be an object, got {_kind(raw)}",
                         'write {"description": ..., "instructions": ..., "tools": [...]}')
    _check_keys(item, raw, allowed)
    for what in ("description", "instructions"):
        if raw.get(what) is not None:
            item.check(_text_problem(raw[what], what, MAX_DESCRIPTION_CHARS))
    return ServerInfo(name=name, description=raw.get("description"), instructions=raw.get("instructions"))


def _parse_workspace(data: Mapping[str, Any], ctx: _Ctx) -> Catalog:
    _check_keys(_Item(ctx.source, "top level"), data, _TOP_KEYS["mcp-workspace"])
    servers_raw = data["servers"]
    if not isinstance(servers_raw, dict):
        raise _Item(ctx.source, "servers").error(
            f"must be an object keyed by server name, got {_kind(servers_raw)}",
            'write {"servers": {"<server>": {"tools": [...]}}}')
    tools, servers = [], {}
    for name, raw in servers_raw.items():
        path = f"servers[{_show(str(name))}]"
        servers[name] = _server_meta(name, raw, _Item(ctx.source, path), _SERVER_KEYS)
        items = [] if raw.get("tools") is None else raw["tools"]
        if not isinstance(items, list):
            raise _Item(ctx.source, f"{path}.tools").error(f"must be a list, got {_kind(items)}",
                                                          'write "tools": [{"name": ...}]')
        tools += [_mcp_tool(r, it, ctx, name) for r, it in _objects(items, ctx, f"{path}.tools")]
    return _catalog(ctx, tools, _parse_skills(data.get("skills"), ctx), servers, "mcp-workspace")


def _unwrap_jsonrpc(data: Mapping[str, Any], ctx: _Ctx) -> Mapping[str, Any]:
    if "error" in data:
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise CatalogError(f"{ctx.source}: is a JSON-RPC error response ({message}), not a tool "
                           "list. Fix: save the response of a successful tools/list call.")
    result = data.get("result")
    if not isinstance(result, dict):
        raise _Item(ctx.source, "result").error(f"must be an object, got {_kind(result)}",
                                                 'save the response of a tools/list call')
    outer = {k: data[k] for k in ("server", "serverInfo", "instructions") if k in data}
    return {**outer, **result}


def _parse_data(data: object, ctx: _Ctx) -> Catalog:
    if isinstance(data, list):
        fmt = _tools_format(data, {})
        tools, servers = _parse_tools(data, fmt, {}, ctx)
        return _catalog(ctx, tools, [], servers, fmt)
    if not isinstance(data, dict):
        what = "is empty" if data is None else f"holds {_kind(data)}"
        raise CatalogError(f"{ctx.source}: {what}, not a catalog. Fix: use one of these shapes: {_SHAPES}.")
    if "jsonrpc" in data or ({"result", "error"} & data.keys() and "tools" not in data):
        data = _unwrap_jsonrpc(data, ctx)
    if "servers" in data and "tools" not in data:
        return _parse_workspace(data, ctx)
    if "tools" not in data and "skills" not in data:
        keys = ", ".join(map(_show, map(str, list(data)[:8]))) or "none"
        raise CatalogError(f"{ctx.source}: an object without \"tools\", \"skills\" or \"servers\" "
                           f"(its keys: {keys}). Fix: use one of these shapes: {_SHAPES}.")
    items = [] if data.get("tools") is None else data["tools"]
    if not isinstance(items, list):
        raise _Item(ctx.source, "tools").error(f"must be a list, got {_kind(items)}",
                                                'write "tools": [{"name": ...}, ...]')
    fmt = _tools_format(items, data)
    if fmt != "mcp":
        _check_keys(_Item(ctx.source, "top level"), data, _TOP_KEYS[fmt])
    tools, servers = _parse_tools(items, fmt, data, ctx)
    if fmt == "native" and data.get("servers") is not None:
        if not isinstance(data["servers"], dict):
            raise _Item(ctx.source, "servers").error(f"must be an object, got {_kind(data['servers'])}",
                                                      'write {"<server>": {"description": ...}}')
        servers = {name: _server_meta(name, raw, _Item(ctx.source, f"servers[{_show(str(name))}]"),
                                      ("description", "instructions"))
                   for name, raw in data["servers"].items()}
    return _catalog(ctx, tools, _parse_skills(data.get("skills"), ctx), servers, fmt)


def _catalog(ctx: _Ctx, tools, skills, servers, fmt: str) -> Catalog:
    try:
        return Catalog(tools=tools, skills=skills, servers=servers, source=ctx.source, format=fmt)
    except ValidationError as exc:  # the item checks should have caught everything
        raise CatalogError(f"{ctx.source}: {exc.errors()[0]['msg']}") from exc


# --------------------------------------------------------------------------- text and files


class _YamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML loader that rejects duplicate keys instead of keeping the last."""

    def construct_mapping(self, node, deep=False):
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r}", key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


class _DuplicateKeyError(ValueError):
    pass


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return obj


def _load_json(text: str, source: str) -> object:
    try:
        return json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        where = " (`python -m json.tool FILE` points at it)" if Path(source).suffix else ""
        raise CatalogError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}. Fix: correct the syntax there{where}.") from None
    except _DuplicateKeyError as exc:
        raise CatalogError(f"{source}: invalid JSON: the key {_show(str(exc))} appears twice in one "
                           "object. Fix: keep one of them.") from None
    except RecursionError:
        raise CatalogError(f"{source}: invalid JSON: nested too deeply to parse (schemas may nest "
                           f"at most MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH} levels). "
                           "Fix: flatten the structure.") from None
    except ValueError as exc:  # e.g. integers over Python's digit limit
        raise CatalogError(f"{source}: invalid JSON: {exc}. Fix: correct the value.") from None


def _load_yaml(text: str, source: str, line_offset: int = 0) -> object:
    try:
        return yaml.load(text, Loader=_YamlLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1 + line_offset}, column {mark.column + 1}" if mark else ""
        detail = " ".join(p for p in (exc.context, exc.problem) if p)
        raise CatalogError(f"{source}: invalid YAML{where}: {detail}. Fix: correct the syntax "
                           "there (quote values that contain ': ' or start with a symbol).") from None
    except RecursionError:
        raise CatalogError(f"{source}: invalid YAML: nested too deeply to parse. "
                           "Fix: flatten the structure.") from None
    except Exception as exc:  # PyYAML lets some constructor errors escape unwrapped
        raise CatalogError(f"{source}: invalid YAML: {exc}. Fix: correct the value.") from None


def _decode(raw: bytes, source: str) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise CatalogError(f"{source}: is UTF-16 encoded. Fix: save the file as UTF-8.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CatalogError(f"{source}: is not valid UTF-8: byte 0x{raw[exc.start]:02X} at byte "
                           f"offset {exc.start} (line {line}) cannot be decoded. "
                           "Fix: save the file as UTF-8.") from None


def _check_size(size: int, source: str, what: str = "file") -> None:
    if size > MAX_FILE_BYTES:
        raise CatalogError(f"{source}: the {what} is {size:,} bytes, over the limit MAX_FILE_BYTES = "
                           f"{MAX_FILE_BYTES:,} (20 MiB). Fix: split the catalog into smaller files.")


def parse_catalog(data: object, source: str = "<input>") -> Catalog:
    """Build a catalog from already-parsed JSON/YAML data, detecting its format."""
    return _parse_data(data, _Ctx(source))


def parse_catalog_text(text: str, source: str, suffix: str = ".json") -> Catalog:
    """Parse catalog text: JSON for .json, YAML for .yaml/.yml, a SKILL.md for .md, else sniffed."""
    size = len(text.encode("utf-8", "surrogatepass"))
    _check_size(size, source)
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise CatalogError(f"{source}: is empty. Fix: put a catalog in it, e.g. "
                           '[{"name": "get_user", "description": "..."}].')
    suffix = suffix.lower() if suffix.startswith(".") or not suffix else f".{suffix.lower()}"
    if suffix == ".md":
        skill = parse_skill_markdown(text, source)
        return Catalog(skills=[skill], source=source, format="skills-folder")
    if suffix == ".json":
        data = _load_json(text, source)
    elif suffix in (".yaml", ".yml"):
        data = _load_yaml(text, source)
    elif text.lstrip()[:1] in ("[", "{"):
        try:
            data = _load_json(text, source)
        except CatalogError as json_error:
            try:
                data = _load_yaml(text, source)
            except CatalogError:
                raise json_error from None
    else:
        data = _load_yaml(text, source)
    # Parsed text holds at most one value per byte; more means YAML aliases expanded.
    return _parse_data(data, _Ctx(source, _Budget(size + 1024)))


def parse_catalog_bytes(raw: bytes, filename: str) -> Catalog:
    """Parse an uploaded file: a zip of SKILL.md folders, or UTF-8 JSON/YAML/SKILL.md text."""
    _check_size(len(raw), filename)
    if filename.lower().endswith(".zip") or raw.startswith(b"PK\x03\x04"):
        return _load_zip(raw, filename)
    return parse_catalog_text(_decode(raw, filename), filename, PurePosixPath(filename).suffix)


def parse_tool(data: object, source: str = "<input>") -> Tool:
    """Validate one native tool object (e.g. an edit made in the app) with the loaders' checks."""
    item = _Item(source, "tool")
    if not isinstance(data, dict):
        raise item.error(f"is {_kind(data)}, not an object", 'write {"name": ..., "description": ...}')
    return _native_tool(data, item, _Ctx(source))


def load_catalog(path: str | Path) -> Catalog:
    """Load a catalog file (.json/.yaml/.yml/.zip/SKILL.md) or a folder of ``*/SKILL.md`` skills."""
    path = Path(path)
    source = str(path)
    try:
        if path.is_dir():
            return _load_skills_folder(path, source)
        _check_size(path.stat().st_size, source)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CatalogError(f"{source}: no such file or folder. Fix: check the path.") from None
    except OSError as exc:
        raise CatalogError(f"{source}: cannot be read ({exc.strerror or exc}). "
                           "Fix: check the path and its permissions.") from None
    return parse_catalog_bytes(raw, source)


def require_items(catalog: Catalog, source: str | Path) -> Catalog:
    """``catalog`` when it has a tool or a skill; CatalogError naming ``source`` otherwise.

    The loaders accept an empty catalog (``[]``, ``{"tools": []}``); the commands that rank
    or check one call this first, so an empty file is refused instead of matching nothing.
    """
    if catalog.is_empty:
        raise CatalogError(
            f"{source} has no tools or skills. Fix: load a catalog with at least one tool, "
            'e.g. [{"name": "get_user", "description": "Fetch one user by id."}]'
        )
    return catalog


# --------------------------------------------------------------------------- skills


_FENCE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)


def parse_skill_markdown(text: str, source: str) -> Skill:
    """Parse one SKILL.md: YAML front matter between ``---`` lines, then the markdown body."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    item = _Item(source, "front matter")
    if not re.match(r"---[ \t]*\n", text):
        raise item.error("is missing: the file must start with a line '---'",
                         "begin the file with '---', 'name: ...', 'description: ...', '---'")
    start = text.index("\n") + 1
    end = _FENCE.search(text, start)
    if end is None:
        raise item.error("is not closed", "add a line '---' after the front matter")
    meta = _load_yaml(text[start : end.start()], source, line_offset=1)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise item.error(f"must be YAML key: value pairs, got {_kind(meta)}",
                         "write 'name: ...' and 'description: ...' lines")
    body = text[end.end() :].lstrip("\n").rstrip()
    return _make_skill(item, meta, _Ctx(source), body=body)


def _collect_skills(entries: Iterable[tuple[str, str]], source: str) -> Catalog:
    """A catalog of skills from (file label, SKILL.md text) pairs; ids must be unique."""
    skills: list[Skill] = []
    seen: dict[str, str] = {}
    for label, text in entries:
        skill = parse_skill_markdown(text, label)
        if skill.id in seen:
            raise CatalogError(f"{label}: duplicate skill id {_show(skill.id)}: {seen[skill.id]} has "
                               "the same id. Fix: give one of them a distinct 'id:' or 'name:'.")
        seen[skill.id] = label
        skills.append(skill)
    return Catalog(skills=skills, source=source, format="skills-folder")


def _load_skills_folder(folder: Path, source: str) -> Catalog:
    files = sorted(
        p for p in folder.rglob("SKILL.md")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise CatalogError(f"{source}: no SKILL.md found. Fix: lay the folder out as "
                           "<folder>/<skill>/SKILL.md.")

    def entries() -> Iterable[tuple[str, str]]:
        for file in files:
            label = str(file)
            try:
                _check_size(file.stat().st_size, label)
                raw = file.read_bytes()
            except OSError as exc:
                raise CatalogError(f"{label}: cannot be read ({exc.strerror or exc}). "
                                   "Fix: check its permissions.") from None
            yield label, _decode(raw, label)

    return _collect_skills(entries(), source)


def _load_zip(raw: bytes, source: str) -> Catalog:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        infos = sorted(
            (i for i in archive.infolist()
             if not i.is_dir() and PurePosixPath(i.filename).name == "SKILL.md"
             and not any(p.startswith((".", "__MACOSX")) for p in PurePosixPath(i.filename).parts)),
            key=lambda i: i.filename,
        )
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CatalogError(f"{source}: is not a valid zip archive ({exc}). "
                           "Fix: re-create it with a zip tool.") from None
    if not infos:
        raise CatalogError(f"{source}: the zip holds no SKILL.md. Fix: zip a folder laid out as "
                           "<skill>/SKILL.md.")

    def entries() -> Iterable[tuple[str, str]]:
        total = 0
        for info in infos:
            label = f"{source} (entry {info.filename})"
            try:
                with archive.open(info) as handle:
                    data = handle.read(MAX_FILE_BYTES + 1)
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError,
                    ValueError) as exc:
                raise CatalogError(f"{label}: cannot be extracted ({exc}). "
                                   "Fix: re-create the zip without encryption.") from None
            total += len(data)
            _check_size(total, source, "uncompressed SKILL.md content")
            yield label, _decode(data, label)

    return _collect_skills(entries(), source)


# --------------------------------------------------------------------------- writing


def _lossy(tool: Tool, fmt: str, what: str) -> CatalogError:
    return CatalogError(f"tool {_show(tool.id)} cannot be written as {fmt}: {what}. "
                        'Fix: write the catalog with format="native".')


def _mcp_item(tool: Tool, fmt: str) -> dict[str, Any]:
    expected = f"{tool.server}{SERVER_SEPARATOR}{tool.name}" if tool.server else tool.name
    if tool.id != expected:
        raise _lossy(tool, fmt, f"its id is not {_show(expected)} (server + name)")
    if tool.group:
        raise _lossy(tool, fmt, "it has a group, which MCP has no place for")
    item = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
    if tool.output_schema:
        item["outputSchema"] = tool.output_schema
    return item


def _plain_item(tool: Tool, fmt: str) -> dict[str, Any]:
    """`tool` for OpenAI/Anthropic, which only hold a name, a description and an input schema."""
    if tool.id != tool.name:
        raise _lossy(tool, fmt, f"its id differs from its name {_show(tool.name)}")
    for what, value in (("output_schema", tool.output_schema), ("server", tool.server),
                        ("group", tool.group)):
        if value:
            raise _lossy(tool, fmt, f"it has a {what}, which {fmt} has no place for")
    if fmt == "openai":
        return {"type": "function", "function": {
            "name": tool.name, "description": tool.description, "parameters": tool.input_schema}}
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def _server_fields(info: ServerInfo) -> dict[str, Any]:
    return {"description": info.description, "instructions": info.instructions}


def _native_item(tool: Tool) -> dict[str, Any]:
    return {k: v for k, v in _fields(tool).items() if v or k in ("description", "input_schema")}


def catalog_to_data(catalog: Catalog, format: str | None = None) -> list[Any] | dict[str, Any]:
    """JSON-ready data for `catalog` in `format` (default `catalog.format`) that re-parses to the
    same tools and skills; ``skills-folder`` is written as native JSON. Raises `CatalogError` when
    the format cannot hold something (e.g. an output schema in OpenAI format) instead of dropping it."""
    fmt = format or catalog.format
    if fmt not in FORMATS:
        raise CatalogError(f"unknown catalog format {_show(str(fmt))}. Fix: use one of {', '.join(FORMATS)}.")
    return _copy_json(_to_data(catalog, fmt))  # a deep copy: editing it leaves the catalog alone


def _to_data(catalog: Catalog, fmt: str) -> list[Any] | dict[str, Any]:
    skills = [_fields(s) for s in catalog.skills]
    if fmt in ("native", "skills-folder"):
        out: dict[str, Any] = {"tools": [_native_item(t) for t in catalog.tools], "skills": skills}
        if catalog.servers:
            out["servers"] = {name: _server_fields(s) for name, s in catalog.servers.items()}
        return out
    if fmt in ("openai", "anthropic"):
        tools = [_plain_item(t, fmt) for t in catalog.tools]
        return {"tools": tools, "skills": skills} if skills else tools
    if fmt == "mcp":
        names = {t.server for t in catalog.tools} | set(catalog.servers)
        if len(names) > 1:
            raise CatalogError("the catalog has tools of several servers (or some without one), which "
                               'one MCP tools/list result cannot hold. Fix: use format="mcp-workspace".')
        server = next(iter(names), None)
        out = {"tools": [_mcp_item(t, fmt) for t in catalog.tools]}
        if server is not None:
            info = catalog.servers.get(server) or ServerInfo(name=server)
            meta = {k: v for k, v in _server_fields(info).items() if v is not None}
            out = {"server": server, **meta, **out}
    else:  # mcp-workspace
        servers = {name: {**_server_fields(info), "tools": []}
                   for name, info in catalog.servers.items()}
        for tool in catalog.tools:
            if tool.server is None:
                raise _lossy(tool, fmt, "it has no server")
            entry = servers.setdefault(tool.server, {"tools": []})
            entry["tools"].append(_mcp_item(tool, fmt))
        out = {"servers": {name: {k: v for k, v in entry.items() if v is not None}
                           for name, entry in servers.items()}}
    if skills:
        out["skills"] = skills
    return out


def save_catalog(catalog: Catalog, path: str | Path, format: str | None = None) -> None:
    """Write `catalog` to `path` atomically: YAML for .yaml/.yml, else JSON (UTF-8)."""
    path = Path(path)
    data = catalog_to_data(catalog, format)
    if path.suffix.lower() in (".yaml", ".yml"):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise CatalogError(f"{path}: cannot be written ({exc.strerror or exc}). "
                           "Fix: check the folder exists and is writable.") from None
