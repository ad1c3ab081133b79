"""Golden projections of hand-written definitions, and provenance spans."""

from __future__ import annotations

import pytest

from core.catalog import Skill, Tool
from core.projection import (
    project_skill,
    project_tool,
    skill_projection,
    split_identifier,
    tool_projection,
)


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("searchFiles", "search Files"),
        ("get_user", "get user"),
        ("fetch-user2", "fetch-user2"),
        ("HTTPServer", "HTTPServer"),
        ("getHTTPResponse", "get HTTPResponse"),
        ("list_repoIssues", "list repo Issues"),
        ("v2Api", "v2Api"),
    ],
)
def test_identifier_split(name, split):
    assert split_identifier(name) == split


NESTED = Tool(
    id="cal__create_event",
    name="createEvent",
    description="Create a calendar event.",
    input_schema={
        "type": "object",
        "description": "top-level description is not indexed",
        "required": ["title"],
        "properties": {
            "title": {"type": "string", "description": "Event title", "title": "not indexed"},
            "attendees": {
                "type": "array",
                "description": "People to invite",
                "items": {
                    "type": "object",
                    "description": "items description is not indexed",
                    "properties": {
                        "email_address": {"type": "string", "description": "Their email"},
                        "response": {"enum": ["accepted", "declined", 3, None]},
                    },
                },
            },
            "visibility": {"type": "integer", "enum": [0, 1], "default": "public"},
            "options": {
                "type": "object",
                "properties": {"remindMe": {"type": "boolean", "description": "Send a reminder"}},
            },
            "location": {"$ref": "#/$defs/place"},
            "choice": {"anyOf": [{"type": "object", "properties": {"hidden": {}}}]},
        },
        "$defs": {"place": {"properties": {"city": {"description": "never reached"}}}},
    },
    output_schema={"type": "object", "properties": {"event_id": {"type": "string"}}},
)


def test_golden_nested_objects_arrays_refs_and_non_string_enums():
    assert project_tool(NESTED) == (
        "createEvent create Event Create a calendar event. "
        "title Event title "
        "attendees People to invite "
        "email_address email address Their email "
        "response accepted declined "
        "visibility "
        "options remindMe remind Me Send a reminder "
        "location choice "
        "event_id event id"
    )


def test_golden_array_form_items_ignored_and_top_level_items_followed():
    tool = Tool(
        id="t",
        name="t",
        description="",
        input_schema={
            "type": "object",
            "properties": {"pair": {"type": "array", "items": [{"properties": {"a": {}}}]}},
        },
        output_schema={"type": "array", "items": {"type": "object", "properties": {"row_id": {}}}},
    )
    # Empty description omitted; array-form items ignored; object items of the
    # top-level output schema followed.
    assert project_tool(tool) == "t pair row_id row id"


def test_golden_kebab_name_is_not_split():
    tool = Tool(id="fetch-user-profile", name="fetch-user-profile", description="Fetch a profile.")
    assert project_tool(tool) == "fetch-user-profile Fetch a profile."


def test_golden_skill_projection_excludes_body():
    skill = Skill(
        id="triage-inbox",
        name="triageInbox",
        description="Sort new mail.",
        tags=["mail_triage", "inbox"],
        tools=["mail__search"],
        body="# Never indexed",
    )
    assert project_skill(skill) == "triageInbox triage Inbox Sort new mail. mail_triage mail triage inbox"


def test_self_referencing_python_schema_terminates():
    schema: dict = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    tool = Tool.model_construct(
        id="loop", name="loop", description="", input_schema=schema, output_schema={}
    )
    text = project_tool(tool)  # the cycle is cut where the node would contain itself
    assert text == "loop self"


def test_spans_cover_the_text_and_name_their_fields():
    proj = tool_projection(NESTED)
    assert " ".join(text for _, text in proj.parts()) == proj.text
    paths = {span.path: text for span, text in proj.parts()}
    assert paths["input.properties.attendees.items.properties.email_address.description"] == "Their email"
    assert paths["input.properties.attendees.items.properties.response.enum[1]"] == "declined"
    assert paths["name.split"] == "create Event"
    assert paths["output.properties.event_id.split"] == "event id"
    kinds = {span.kind for span in proj.spans}
    assert {"name", "split_name", "description", "param", "param_split", "param_description", "enum"} <= kinds
    sproj = skill_projection(Skill(id="s", name="s", description="d", tags=["a_b"]))
    assert [(s.kind, t) for s, t in sproj.parts()] == [
        ("name", "s"), ("description", "d"), ("tag", "a_b"), ("tag_split", "a b")
    ]
