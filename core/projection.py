"""Projection: the text of a tool or skill definition that the index sees.

Pure functions. The projection is exactly the reference engine's
(../shared/reference/engine-contract.md, "Projection"): parts joined by one space, in order

1. the name whole, then its identifier-split form when that differs;
2. the description verbatim (omitted when empty);
3. for each property of the input schema, then of the output schema, in the
   schema's key order: the key whole, then split; its string ``description``;
   each string ``enum`` value; then recursively the property's own
   ``properties``, and ``items`` when ``items`` is an object.

``type``, ``required``, ``title``, ``const``, ``default``, ``anyOf``, ``oneOf``,
``allOf``, ``$ref``, ``$defs`` and the schema's top-level ``description`` are
not indexed. ``$ref`` is never followed, so a self-referencing schema projects
in finite time; a Python object graph with a cycle is cut where a node would
contain itself, and any path at ``MAX_PROJECTION_DEPTH``.

`tool_projection` also returns provenance: which span of the text came from
which field, so an explanation can say where a matched term came from.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.catalog import Skill, Tool



def split_identifier(name: str) -> str:
    """``_`` becomes a space; a space goes between a lowercase and an uppercase letter.

    Hyphens and digits are not split: ``searchFiles`` -> ``search Files``,
    ``get_user`` -> ``get user``, ``fetch-user2`` stays as it is.
    """
    out = []
    prev = ""
    for ch in name:
        if ch == "_":
            out.append(" ")
        else:
            if prev.islower() and ch.isupper():
                out.append(" ")
            out.append(ch)
        prev = ch
    return "".join(out)


# Field kinds, coarse enough to colour by in the app.
KIND_NAME = "name"
KIND_SPLIT_NAME = "split_name"
KIND_DESCRIPTION = "description"
KIND_PARAM = "param"
KIND_PARAM_SPLIT = "param_split"
KIND_PARAM_DESCRIPTION = "param_description"
KIND_ENUM = "enum"
KIND_TAG = "tag"
KIND_TAG_SPLIT = "tag_split"
KINDS = (
    KIND_NAME,
    KIND_SPLIT_NAME,
    KIND_DESCRIPTION,
    KIND_PARAM,
    KIND_PARAM_SPLIT,
    KIND_PARAM_DESCRIPTION,
    KIND_ENUM,
    KIND_TAG,
    KIND_TAG_SPLIT,
)


@dataclass(frozen=True)
class Part:
    """One part of a projection: its text and where in the definition it came from.

    Attributes:
        text: the part's text, as it appears in the projection.
        kind: one of `KINDS`.
        path: the field's path, e.g. ``name``, ``description``,
            ``input.properties.path.description``, ``input.properties.mode.enum[1]``,
            ``tags[0]``.
    """

    text: str
    kind: str
    path: str


@dataclass(frozen=True)
class Span:
    """A part placed in the projection text: ``text[start:end]`` came from ``path``."""

    start: int
    end: int
    kind: str
    path: str


@dataclass(frozen=True)
class Projection:
    """The projected text with its provenance."""

    text: str
    spans: tuple[Span, ...]

    def parts(self) -> Iterator[tuple[Span, str]]:
        """Each span with its text."""
        for span in self.spans:
            yield span, self.text[span.start : span.end]


def _name_parts(name: str, kind: str, split_kind: str, path: str) -> Iterator[Part]:
    yield Part(name, kind, path)
    split = split_identifier(name)
    if split != name:
        yield Part(split, split_kind, path + ".split")


# Deeper than this, a schema can only be a Python object graph with a cycle
# (JSON text cannot nest it: loaders reject nesting beyond 64 levels).
MAX_PROJECTION_DEPTH = 256


def _schema_parts(
    schema: Any, path: str, out: list[Part], depth: int = 0, active: set[int] | None = None
) -> None:
    """Append the parts of one schema node: its ``properties``, then its object ``items``.

    ``active`` holds the ids of the nodes on the current path: a node that
    contains itself (a Python object graph with a cycle) is not entered again,
    so a cycle, even one that branches, projects in finite time. (JSON text
    has no cycles; this guards tools built in Python.)
    """
    if depth > MAX_PROJECTION_DEPTH:
        return
    if active is None:
        active = set()
    elif id(schema) in active:
        return
    active.add(id(schema))
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, prop in props.items():
            key = str(key)
            ppath = f"{path}.properties.{key}"
            out.append(Part(key, KIND_PARAM, ppath))
            split = split_identifier(key)
            if split != key:
                out.append(Part(split, KIND_PARAM_SPLIT, ppath + ".split"))
            if not isinstance(prop, Mapping):
                continue
            desc = prop.get("description")
            if isinstance(desc, str):
                out.append(Part(desc, KIND_PARAM_DESCRIPTION, ppath + ".description"))
            enum = prop.get("enum")
            if isinstance(enum, list):
                for i, value in enumerate(enum):
                    if isinstance(value, str):
                        out.append(Part(value, KIND_ENUM, f"{ppath}.enum[{i}]"))
            if "properties" in prop or "items" in prop:
                _schema_parts(prop, ppath, out, depth + 1, active)
    items = schema.get("items")
    if isinstance(items, Mapping):
        _schema_parts(items, path + ".items", out, depth + 1, active)
    active.discard(id(schema))


def tool_parts(
    name: str,
    description: str,
    input_schema: Mapping[str, Any] | None,
    output_schema: Mapping[str, Any] | None,
) -> list[Part]:
    """The ordered parts of a tool's projection."""
    parts = list(_name_parts(name, KIND_NAME, KIND_SPLIT_NAME, "name"))
    if description:
        parts.append(Part(description, KIND_DESCRIPTION, "description"))
    if isinstance(input_schema, Mapping):
        _schema_parts(input_schema, "input", parts)
    if isinstance(output_schema, Mapping):
        _schema_parts(output_schema, "output", parts)
    return parts


def skill_parts(name: str, description: str, tags: list[str] | tuple[str, ...]) -> list[Part]:
    """The ordered parts of a skill's projection: name, split name, description, tags."""
    parts = list(_name_parts(name, KIND_NAME, KIND_SPLIT_NAME, "name"))
    if description:
        parts.append(Part(description, KIND_DESCRIPTION, "description"))
    for i, tag in enumerate(tags):
        parts.extend(_name_parts(tag, KIND_TAG, KIND_TAG_SPLIT, f"tags[{i}]"))
    return parts


def join_parts(parts: list[Part]) -> Projection:
    """Join parts with one space, recording each part's span."""
    spans = []
    pos = 0
    for i, part in enumerate(parts):
        if i:
            pos += 1
        spans.append(Span(pos, pos + len(part.text), part.kind, part.path))
        pos += len(part.text)
    return Projection(" ".join(p.text for p in parts), tuple(spans))


def tool_projection(tool: Tool) -> Projection:
    """A tool's projection with provenance."""
    return join_parts(
        tool_parts(tool.name, tool.description, tool.input_schema, tool.output_schema)
    )


def skill_projection(skill: Skill) -> Projection:
    """A skill's projection with provenance. The body is never indexed."""
    return join_parts(skill_parts(skill.name, skill.description, skill.tags))


def project_tool(tool: Tool) -> str:
    """The text the index sees for a tool."""
    return " ".join(
        p.text for p in tool_parts(tool.name, tool.description, tool.input_schema, tool.output_schema)
    )


def project_skill(skill: Skill) -> str:
    """The text the index sees for a skill."""
    return " ".join(p.text for p in skill_parts(skill.name, skill.description, skill.tags))
