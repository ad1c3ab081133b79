"""Tests for core.catalog: every accepted format, round trips, the content hash and the errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.catalog import (
    MAX_DESCRIPTION_CHARS,
    MAX_FILE_BYTES,
    MAX_ID_CHARS,
    MAX_SCHEMA_DEPTH,
    Catalog,
    ServerInfo,
    Skill,
    Tool,
    catalog_to_data,
    load_catalog,
    parse_catalog,
    parse_catalog_bytes,
    parse_catalog_text,
    parse_skill_markdown,
    parse_tool,
)
from core.errors import CatalogError

ROOT = Path(__file__).parent.parent

USER_SCHEMA = {"type": "object", "properties": {"user_id": {"type": "string", "description": "Id."}}}

NATIVE = {
    "tools": [
        {"id": "users.get", "name": "get_user", "description": "Fetch a user.", "input_schema": USER_SCHEMA,
         "output_schema": {"type": "object"}, "server": "crm", "group": "users"},
        {"name": "delete_user", "description": "Delete a user."},
    ],
    "skills": [
        {"name": "offboarding", "description": "Offboard an employee.", "tags": ["hr", "accounts"],
         "tools": ["delete_user"], "body": "# Steps\n1. Delete the account."},
    ],
}
OPENAI = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather now.",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                                      "strict": True}},
    {"type": "function", "name": "get_time", "description": "Time now.", "parameters": {"type": "object"}},
]
ANTHROPIC = [
    {"name": "search_docs", "description": "Search the docs.", "input_schema": {"type": "object"}},
    {"name": "open_doc", "description": "Open one doc.", "input_schema": {"type": "object"},
     "cache_control": {"type": "ephemeral"}},
]
MCP = {
    "server": "fs",
    "instructions": "Paths are absolute.",
    "tools": [
        {"name": "read_file", "title": "Read file", "description": "Read a file.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
         "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "write_file", "description": "Write a file.", "inputSchema": {"type": "object"}},
    ],
    "nextCursor": None,
}
WORKSPACE = {
    "servers": {
        "filesystem": {"description": "Local files.", "instructions": "Stay in /work.",
                       "tools": [{"name": "read_file", "description": "Read.", "inputSchema": {}}]},
        "calendar": {"tools": [{"name": "list_events", "description": "List events.",
                                "inputSchema": {"type": "object"}}]},
    },
}


def skill_md(name: str = "refund-policy", extra: str = "", body: str = "How to refund.") -> str:
    front = f"name: {name}\ndescription: Refund rules for {name}.\ntags: billing, refunds\n{extra}"
    return f"---\n{front}---\n\n{body}\n"


def make_skills_folder(root: Path) -> Path:
    folder = root / "skills"
    for name in ("refund-policy", "data-export"):
        (folder / name).mkdir(parents=True)
        (folder / name / "SKILL.md").write_text(skill_md(name), encoding="utf-8")
    return folder


def zip_bytes(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


# --------------------------------------------------------------------------- formats


def test_native_dict_loads_every_field_and_defaults_id_to_name() -> None:
    catalog = parse_catalog(NATIVE, "native.json")
    assert catalog.format == "native"
    assert catalog.source == "native.json"
    first, second = catalog.tools
    assert first == Tool(id="users.get", name="get_user", description="Fetch a user.",
                         input_schema=USER_SCHEMA, output_schema={"type": "object"},
                         server="crm", group="users")
    assert (second.id, second.input_schema, second.output_schema, second.server) == (
        "delete_user", {}, {}, None)
    assert catalog.skills == [Skill(id="offboarding", name="offboarding",
                                    description="Offboard an employee.", tags=["hr", "accounts"],
                                    tools=["delete_user"], body="# Steps\n1. Delete the account.")]


def test_native_list_with_ids_is_native_and_null_optional_fields_are_defaults() -> None:
    catalog = parse_catalog([{"id": "a1", "name": "a", "input_schema": {}, "description": None,
                              "output_schema": None}])
    assert catalog.format == "native"
    assert catalog.tools == [Tool(id="a1", name="a")]


def test_anthropic_list_is_detected_and_extra_api_keys_are_ignored() -> None:
    catalog = parse_catalog(ANTHROPIC, "anthropic.json")
    assert catalog.format == "anthropic"
    assert [t.id for t in catalog.tools] == ["search_docs", "open_doc"]
    assert catalog.tools[1].input_schema == {"type": "object"}


def test_openai_nested_and_flat_forms_map_parameters_to_input_schema() -> None:
    for data in (OPENAI, {"tools": OPENAI}):
        catalog = parse_catalog(data, "openai.json")
        assert catalog.format == "openai"
        weather, time = catalog.tools
        assert (weather.id, weather.description) == ("get_weather", "Weather now.")
        assert weather.input_schema["properties"] == {"city": {"type": "string"}}
        assert (time.id, time.input_schema) == ("get_time", {"type": "object"})


def test_mcp_result_with_server_prefixes_ids_and_maps_camel_case() -> None:
    catalog = parse_catalog(MCP, "mcp.json")
    assert catalog.format == "mcp"
    read, write = catalog.tools
    assert (read.id, read.name, read.server) == ("fs__read_file", "read_file", "fs")
    assert read.input_schema == {"type": "object", "properties": {"path": {"type": "string"}}}
    assert read.output_schema == {"type": "object"}
    assert write.id == "fs__write_file"
    assert catalog.servers == {"fs": ServerInfo(name="fs", instructions="Paths are absolute.")}


def test_mcp_result_without_server_keeps_names_and_jsonrpc_wrapper_is_unwrapped() -> None:
    plain = parse_catalog({"tools": [{"name": "ping", "inputSchema": {}}]})
    assert (plain.format, plain.tools[0].id, plain.tools[0].server, plain.servers) == (
        "mcp", "ping", None, {})
    wrapped = parse_catalog({"jsonrpc": "2.0", "id": 7, "serverInfo": {"name": "net", "version": "1"},
                             "result": {"tools": [{"name": "ping", "inputSchema": {}}]}})
    assert wrapped.tools == [Tool(id="net__ping", name="ping", server="net")]


def test_mcp_workspace_fills_servers_and_prefixes_ids() -> None:
    catalog = parse_catalog(WORKSPACE, "ws.json")
    assert catalog.format == "mcp-workspace"
    assert [t.id for t in catalog.tools] == ["filesystem__read_file", "calendar__list_events"]
    assert [t.server for t in catalog.tools] == ["filesystem", "calendar"]
    assert catalog.servers["filesystem"] == ServerInfo(
        name="filesystem", description="Local files.", instructions="Stay in /work.")
    assert catalog.servers["calendar"] == ServerInfo(name="calendar")


def test_yaml_file_loads_like_json(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(textwrap.dedent("""\
        tools:
          - name: run_query
            description: Run SQL.
            input_schema:
              type: object
              properties:
                sql: {type: string, description: The query.}
        skills:
          - name: reporting
            tags: [sql, dashboards]
        """), encoding="utf-8")
    catalog = load_catalog(path)
    assert catalog.source == str(path)
    assert catalog.tools[0].input_schema["properties"]["sql"]["description"] == "The query."
    assert catalog.skills[0].tags == ["sql", "dashboards"]


def test_skills_folder_reads_front_matter_and_body(tmp_path: Path) -> None:
    folder = make_skills_folder(tmp_path)
    (folder / "data-export" / "notes.txt").write_text("ignored", encoding="utf-8")
    catalog = load_catalog(folder)
    assert catalog.format == "skills-folder"
    assert [s.id for s in catalog.skills] == ["data-export", "refund-policy"]  # sorted by path
    skill = catalog.skills[1]
    assert skill.tags == ["billing", "refunds"]
    assert skill.description == "Refund rules for refund-policy."
    assert skill.body == "How to refund."


def test_skill_front_matter_id_tools_and_list_tags() -> None:
    text = "---\nid: s1\nname: Export\ntags: [a, b]\ntools: [fs__read_file]\nlicense: MIT\n---\nBody\n"
    skill = parse_skill_markdown(text, "SKILL.md")
    assert skill == Skill(id="s1", name="Export", tags=["a", "b"], tools=["fs__read_file"], body="Body")


def test_zip_of_skill_folders_including_a_top_level_folder(tmp_path: Path) -> None:
    raw = zip_bytes({"bundle/refund-policy/SKILL.md": skill_md("refund-policy"),
                     "bundle/data-export/SKILL.md": skill_md("data-export"),
                     "__MACOSX/bundle/data-export/SKILL.md": b"\x00junk"})
    from_bytes = parse_catalog_bytes(raw, "skills.zip")
    path = tmp_path / "skills.zip"
    path.write_bytes(raw)
    from_file = load_catalog(path)
    assert [s.id for s in from_bytes.skills] == ["data-export", "refund-policy"]
    assert from_file.skills == from_bytes.skills


def test_single_skill_md_and_uploaded_json_and_yaml_bytes() -> None:
    assert parse_catalog_bytes(skill_md().encode(), "SKILL.md").skills[0].id == "refund-policy"
    assert parse_catalog_bytes(json.dumps(ANTHROPIC).encode(), "a.json").format == "anthropic"
    yaml_text = "- name: a\n  description: b\n"
    assert parse_catalog_bytes(b"\xef\xbb\xbf" + yaml_text.encode(), "t.yml").tools[0].id == "a"
    assert parse_catalog_text(yaml_text, "pasted", suffix=".txt").tools[0].description == "b"


def test_ref_cycles_load_unchanged() -> None:
    schema = {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
              "$ref": "#/$defs/node"}
    assert parse_catalog([{"name": "walk", "input_schema": schema}]).tools[0].input_schema == schema


def test_lenient_corners_openai_without_type_and_x_keys_for_yaml_anchors() -> None:
    untyped = parse_catalog([{"function": {"name": "f", "parameters": {}}}])
    assert (untyped.format, untyped.tools[0].id) == ("openai", "f")
    text = "x-common: &id {type: string}\ntools:\n  - name: a\n    input_schema: {properties: {id: *id}}\n"
    catalog = parse_catalog_text(text, "t.yaml", ".yaml")
    assert catalog.tools[0].input_schema == {"properties": {"id": {"type": "string"}}}


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("data", [NATIVE, OPENAI, ANTHROPIC, MCP, WORKSPACE,
                                  {**WORKSPACE, "skills": NATIVE["skills"]}],
                         ids=["native", "openai", "anthropic", "mcp", "workspace", "workspace+skills"])
def test_to_data_reparses_to_an_equal_catalog(data: object) -> None:
    catalog = parse_catalog(data, "in.json")
    again = parse_catalog(json.loads(json.dumps(catalog.to_data())), "in.json")
    assert again == catalog
    assert again.content_hash == catalog.content_hash


def test_skills_folder_round_trips_through_native_json(tmp_path: Path) -> None:
    catalog = load_catalog(make_skills_folder(tmp_path))
    data = catalog.to_data()
    assert set(data) == {"tools", "skills"}
    again = parse_catalog(data)
    assert (again.format, again.skills) == ("native", catalog.skills)


def test_workspace_written_as_native_keeps_servers_and_data_is_a_copy() -> None:
    catalog = parse_catalog(WORKSPACE)
    data = catalog.to_data("native")
    again = parse_catalog(data)
    assert (again.format, again.tools, again.servers) == ("native", catalog.tools, catalog.servers)
    data["tools"][0]["input_schema"]["type"] = "mutated"
    assert catalog.tools[0].input_schema == {}


def test_save_then_load_in_json_and_yaml(tmp_path: Path) -> None:
    catalog = parse_catalog(MCP, "mcp.json")
    for name in ("out.json", "out.yaml"):
        catalog.save(tmp_path / name)
        loaded = load_catalog(tmp_path / name)
        assert (loaded.tools, loaded.servers, loaded.format) == (catalog.tools, catalog.servers, "mcp")
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_edited_catalog_is_written_in_another_format_or_refused() -> None:
    catalog = parse_catalog(ANTHROPIC)
    assert catalog_to_data(catalog, "openai")[0]["function"]["name"] == "search_docs"
    mcp = parse_catalog(MCP)
    with pytest.raises(CatalogError, match=r'"fs__read_file".*openai.*format="native"'):
        mcp.to_data("openai")
    with pytest.raises(CatalogError, match="use one of native, mcp"):
        mcp.to_data("xml")
    with pytest.raises(CatalogError, match="mcp-workspace"):
        parse_catalog(WORKSPACE).to_data("mcp")


# --------------------------------------------------------------------------- catalog helpers


def test_content_hash_ignores_load_order_and_tracks_content() -> None:
    catalog = parse_catalog(NATIVE)
    reordered = parse_catalog({"tools": NATIVE["tools"][::-1], "skills": NATIVE["skills"]})
    assert reordered.tools != catalog.tools
    assert reordered.content_hash == catalog.content_hash
    assert len(catalog.content_hash) == 64
    edited = catalog.with_tool(catalog.tools[1].model_copy(update={"description": "Remove a user."}))
    assert edited.content_hash != catalog.content_hash
    renamed_source = parse_catalog(NATIVE, "elsewhere.yaml")
    assert renamed_source.content_hash == catalog.content_hash


def test_content_hash_is_the_same_in_other_processes() -> None:
    code = ("import json, sys; from core.catalog import parse_catalog; "
            "print(parse_catalog(json.loads(sys.argv[1])).content_hash)")
    hashes = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code, json.dumps(WORKSPACE)], cwd=ROOT, env=env,
                             capture_output=True, text=True, check=True)
        hashes.add(out.stdout.strip())
    assert hashes == {parse_catalog(WORKSPACE).content_hash}


def test_with_tool_replaces_in_place_or_appends_and_leaves_the_original() -> None:
    catalog = parse_catalog(NATIVE)
    changed = catalog.with_tool(Tool(id="users.get", name="get_user", description="New."))
    assert [t.id for t in changed.tools] == ["users.get", "delete_user"]
    assert changed.tool("users.get").description == "New."
    assert catalog.tool("users.get").description == "Fetch a user."
    added = catalog.with_tool(Tool(id="z", name="z"))
    assert [t.id for t in added.tools] == ["users.get", "delete_user", "z"]
    assert added.with_skill(Skill(id="s", name="s")).skill("s").name == "s"


def test_lookups_and_is_empty() -> None:
    catalog = parse_catalog(NATIVE, "native.json")
    assert catalog.skill("offboarding").tools == ["delete_user"]
    with pytest.raises(CatalogError, match=r'native.json: no tool with id "delete_usr"; did you mean "delete_user"'):
        catalog.tool("delete_usr")
    assert not catalog.is_empty
    assert parse_catalog([]).is_empty


def test_models_are_frozen_and_check_their_fields() -> None:
    tool = Tool(id="a", name="a")
    with pytest.raises(ValidationError):
        tool.name = "b"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="empty"):
        Tool(id="", name="a")
    with pytest.raises(ValidationError, match="extra"):
        Tool(id="a", name="a", colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="duplicate tool id"):
        Catalog(tools=[tool, tool])
    assert Tool.model_fields["input_schema"].description.startswith("JSON Schema")


def test_parse_tool_checks_one_edited_tool() -> None:
    assert parse_tool({"name": "x", "description": "y"}) == Tool(id="x", name="x", description="y")
    with pytest.raises(CatalogError, match=r"editor: tool \(\"x\"\): input_schema must be a JSON object"):
        parse_tool({"name": "x", "input_schema": "oops"}, "editor")


# --------------------------------------------------------------------------- errors

DEEP: dict = {}
_node = DEEP
for _ in range(MAX_SCHEMA_DEPTH):
    _node["items"] = {}
    _node = _node["items"]

ERROR_CASES = {
    "invalid json": ('{"tools": [\n  {"name": "a",}\n]}', ["line 2, column 16", "Fix:"]),
    "wrong shape": ('{"tool": []}', ['"tool"', "Fix: use one of these shapes", "MCP workspace"]),
    "scalar top level": ("42", ["holds a number (42)", "Fix:"]),
    "empty file": ("  \n", ["is empty", "Fix:"]),
    "not an object": ('[{"name": "a"}, "b"]', ["tools[1]", "not an object", "Fix:"]),
    "no name": ('[{"name": "a"}, {"description": "x"}]', ["tools[1]", 'no "name"', "Fix: add"]),
    "empty name": ('[{"name": "  "}]', ["tools[0]", "name is empty", "Fix:"]),
    "number name": ('[{"name": 7}]', ["tools[0]", "must be a string, got a number (7)", "Fix:"]),
    "duplicate ids": ('[{"name": "a"}, {"name": "b"}, {"name": "a"}]',
                      ['tools[2] ("a")', "tools[0] has the same id", "Fix:"]),
    "schema not object": ('[{"name": "get_user", "input_schema": "string"}]',
                          ['tools[0] ("get_user")', "input_schema must be a JSON object", "Fix:"]),
    "mcp schema not object": ('{"tools": [{"name": "r", "inputSchema": [1]}]}',
                              ['tools[0] ("r")', "inputSchema must be a JSON object", "Fix:"]),
    "description not string": ('[{"name": "a", "description": 3}]',
                               ['tools[0] ("a")', "description must be a string", "Fix:"]),
    "description too long": (json.dumps([{"name": "a", "description": "x" * (MAX_DESCRIPTION_CHARS + 1)}]),
                             ['("a")', "MAX_DESCRIPTION_CHARS = 100000", "Fix:"]),
    "schema too deep": (json.dumps([{"name": "deep", "input_schema": DEEP}]),
                        ['("deep")', "MAX_SCHEMA_DEPTH = 64", "input_schema.items.items", "Fix:"]),
    "id too long": (json.dumps([{"name": "n" * (MAX_ID_CHARS + 1)}]), ["tools[0]", "MAX_ID_CHARS = 512", "Fix:"]),
    "control character": ('[{"name": "get\\u001buser"}]', ["tools[0]", "U+001B", "Fix: remove"]),
    "unknown key": ('[{"name": "a", "desc": "x"}]', ['tools[0] ("a")', 'unknown key "desc"', "accepted keys"]),
    "duplicate json key": ('[{"name": "a", "name": "b"}]', ['key "name" appears twice', "Fix:"]),
    "json nested too deep": ("[" * 100_000 + "]" * 100_000, ["nested too deeply", "Fix:"]),
    "nan": ('[{"name": "a", "input_schema": {"default": NaN}}]', ['("a")', "input_schema.default", "Fix:"]),
    "openai builtin": ('[{"type": "function", "function": {"name": "f"}}, {"type": "web_search"}]',
                       ["tools[1]", "not an OpenAI function tool", "Fix:"]),
    "openai no name": ('[{"type": "function", "function": {"description": "d"}}]',
                       ["tools[0]", '"function.name"', "Fix:"]),
    "server with separator": ('{"server": "a__b", "tools": [{"name": "t", "inputSchema": {}}]}',
                              ['"a__b"', "separates server and tool", "Fix:"]),
    "workspace server not object": ('{"servers": {"fs": []}}', ['servers["fs"]', "must be an object", "Fix:"]),
    "workspace tool": ('{"servers": {"fs": {"tools": [{"name": "r"}, {"name": "r"}]}}}',
                       ['servers["fs"].tools[1] ("r")', "duplicate id \"fs__r\"", "Fix:"]),
    "jsonrpc error": ('{"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "boom"}}',
                      ["JSON-RPC error response (boom)", "Fix:"]),
    "skill without name": ('{"skills": [{"description": "d"}]}', ["skills[0]", 'no "name"', "Fix:"]),
    "skill tags": ('{"skills": [{"name": "s", "tags": [1]}]}', ['skills[0] ("s")', "tags[0]", "Fix:"]),
}


@pytest.mark.parametrize("text, expected", ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_bad_json_raises_catalog_error_naming_file_item_and_fix(text: str, expected: list[str]) -> None:
    with pytest.raises(CatalogError) as info:
        parse_catalog_text(text, "my_tools.json")
    message = str(info.value)
    assert message.startswith("my_tools.json: ")
    for part in expected:
        assert part in message, message


YAML_CASES = {
    "syntax": ("tools:\n  - name: a\n    description: bad: colon\n", ["line 3", "Fix:"]),
    "duplicate key": ("- name: a\n  name: b\n", ["line 2", "duplicate key 'name'", "Fix:"]),
    "date in schema": ("- name: a\n  input_schema: {default: 2024-01-01}\n",
                       ['("a")', "input_schema.default", "a date", "Fix: quote"]),
    "non-string key": ("- name: a\n  input_schema: {properties: {1: {}}}\n",
                       ['("a")', "non-string key 1", "Fix: quote"]),
    "boolean name": ("- name: yes\n", ["tools[0]", "boolean (true)", "Fix:"]),
    "recursive alias": ("- name: a\n  input_schema: &s {items: *s}\n", ['("a")', "MAX_SCHEMA_DEPTH", "Fix:"]),
    "alias bomb": ("x-a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
        f"x-{i}: &a{i} [{','.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]\n" for i in range(7))
        + "tools:\n  - name: boom\n    input_schema: {items: *a6}\n",
        ['("boom")', "aliases expand", "Fix:"]),
}


@pytest.mark.parametrize("text, expected", YAML_CASES.values(), ids=YAML_CASES.keys())
def test_bad_yaml_raises_catalog_error(text: str, expected: list[str]) -> None:
    with pytest.raises(CatalogError) as info:
        parse_catalog_text(text, "tools.yaml", suffix=".yaml")
    message = str(info.value)
    assert message.startswith("tools.yaml")
    for part in expected:
        assert part in message, message


def test_python_data_errors_recursive_schema_and_surrogate_description() -> None:
    loop: dict = {}
    loop["items"] = loop
    with pytest.raises(CatalogError, match=r'<input>: tools\[0\] \("a"\): input_schema nests deeper'):
        parse_catalog([{"name": "a", "input_schema": loop}])
    with pytest.raises(CatalogError, match=r'tools\[0\] \("a"\): description contains an unpaired surrogate'):
        parse_catalog_text('[{"name": "a", "description": "x\\ud800"}]', "s.json")


def test_non_utf8_bytes_name_the_byte_offset() -> None:
    with pytest.raises(CatalogError, match=r"up.json: is not valid UTF-8: byte 0xFF at byte offset 13 \(line 2\).*Fix"):
        parse_catalog_bytes(b'[{"name":\n "a\xff"}]', "up.json")
    with pytest.raises(CatalogError, match=r"UTF-16.*Fix"):
        parse_catalog_bytes("[]".encode("utf-16"), "up.json")


def test_files_over_the_size_limit_are_refused_before_parsing(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"big.json: .*MAX_FILE_BYTES = 20,971,520.*Fix"):
        parse_catalog_bytes(b" " * (MAX_FILE_BYTES + 1), "big.json")
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no 20 MiB written
    with pytest.raises(CatalogError, match="MAX_FILE_BYTES"):
        load_catalog(path)


def test_skill_md_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"a/SKILL.md: front matter: is missing.*Fix"):
        parse_skill_markdown("# Just markdown\n", "a/SKILL.md")
    with pytest.raises(CatalogError, match=r"a/SKILL.md: front matter: has no \"name\".*Fix"):
        parse_skill_markdown("---\ndescription: x\n---\nbody\n", "a/SKILL.md")
    with pytest.raises(CatalogError, match=r"a/SKILL.md: front matter: is not closed.*Fix"):
        parse_skill_markdown("---\nname: x\n", "a/SKILL.md")
    with pytest.raises(CatalogError, match=r"a/SKILL.md: invalid YAML at line 3.*Fix"):
        parse_skill_markdown("---\nname: x\ndescription: use: when\n---\n", "a/SKILL.md")
    folder = make_skills_folder(tmp_path)
    (folder / "copy").mkdir()
    (folder / "copy" / "SKILL.md").write_text(skill_md("refund-policy"), encoding="utf-8")
    with pytest.raises(CatalogError, match=r"refund-policy/SKILL.md: duplicate skill id \"refund-policy\": "
                                           r".*copy/SKILL.md has the same id.*Fix"):
        load_catalog(folder)


def test_folder_zip_and_path_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CatalogError, match=r"empty: no SKILL.md found.*Fix"):
        load_catalog(tmp_path / "empty")
    with pytest.raises(CatalogError, match=r"missing.json: no such file or folder.*Fix"):
        load_catalog(tmp_path / "missing.json")
    with pytest.raises(CatalogError, match=r"s.zip: is not a valid zip archive.*Fix"):
        parse_catalog_bytes(b"PK\x03\x04 truncated", "s.zip")
    with pytest.raises(CatalogError, match=r"s.zip: the zip holds no SKILL.md.*Fix"):
        parse_catalog_bytes(zip_bytes({"readme.md": "hi"}), "s.zip")
    with pytest.raises(CatalogError, match=r"s.zip \(entry x/SKILL.md\): front matter: has no \"name\""):
        parse_catalog_bytes(zip_bytes({"x/SKILL.md": "---\ntags: a\n---\n"}), "s.zip")


# --------------------------------------------------------------------------- fuzz

_KEYS = st.sampled_from(["name", "id", "description", "input_schema", "inputSchema", "server", "serverInfo",
                         "tools", "skills", "servers", "type", "function", "parameters", "tags", "body",
                         "jsonrpc", "result", "properties", "items"]) | st.text(max_size=4)
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_JSONISH = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(_KEYS, inner, max_size=5), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSONISH)
def test_arbitrary_data_loads_or_raises_catalog_error_and_round_trips(data: object) -> None:
    try:
        catalog = parse_catalog(data, "fuzz.json")
    except CatalogError:
        return
    assert len(catalog.content_hash) == 64
    again = parse_catalog(json.loads(json.dumps(catalog.to_data())), "fuzz.json")
    assert (again.tools, again.skills, again.servers) == (catalog.tools, catalog.skills, catalog.servers)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.sampled_from(["a.json", "a.yaml", "a.zip", "SKILL.md", "a.txt"]))
def test_arbitrary_bytes_load_or_raise_catalog_error(raw: bytes, filename: str) -> None:
    try:
        parse_catalog_bytes(raw, filename)
    except CatalogError as exc:
        assert str(exc).startswith(filename)


# --------------------------------------------------------------------------- sample catalogs

SAMPLE_NAMES = ("support_billing.json", "dev_platform.json", "mcp_workspace.json", "data_analytics.yaml",
                "flawed_examples.json", "skills")
SAMPLES = [ROOT / "sample_catalogs" / name for name in SAMPLE_NAMES
           if (ROOT / "sample_catalogs" / name).exists()]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_catalogs_load(path: Path) -> None:
    catalog = load_catalog(path)
    assert not catalog.is_empty
