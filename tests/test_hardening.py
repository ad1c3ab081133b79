"""Hostile and broken input (issue 8): loaders, ``register()``, projection and queries.

tests/test_catalog.py already checks each loader error (invalid JSON/YAML, wrong
shapes, missing names, duplicate ids, depth, sizes, non-UTF-8, YAML alias bombs)
and fuzzes the loaders with small random data and bytes. This file adds what
was missing:

- the same bad items through ``ToolCatalog.register`` with dicts, in every
  tool format, and at the exact limits;
- self-referencing schemas that branch (a cycle the depth cap alone does not
  stop in time);
- a hypothesis suite over arbitrary JSON-ish catalogs and queries: load or
  `CatalogError`, projection terminates, search never raises, explanations
  add up to scores, rankings do not depend on the run or the load order;
- a time-bounded mutation fuzzer over real catalog files (see
  `test_loader_fuzz_for_a_bounded_time` for why it is not atheris);
- hostile queries (empty, 10k characters, other scripts, emoji, control and
  RTL characters) for every method, with a time bound.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import random
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.catalog import (
    MAX_DESCRIPTION_CHARS,
    MAX_FILE_BYTES,
    MAX_ID_CHARS,
    MAX_SCHEMA_DEPTH,
    Tool,
    load_catalog,
    parse_catalog,
    parse_catalog_bytes,
    parse_catalog_text,
)
from core.cli import main
from core.embedding import HashingEmbedder
from core.errors import CatalogError, QueryError, RanklensError
from core.projection import project_skill, project_tool, tool_projection
from core.search import SkillCatalog, ToolCatalog

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_catalogs"
WORKSPACE_150 = SAMPLES / "mcp_workspace.json"  # 152 tools


def nested(depth: int, key: str = "items") -> dict:
    """A schema of exactly ``depth`` levels as MAX_SCHEMA_DEPTH counts them (``{}`` is 1)."""
    root: dict = {}
    node = root
    for _ in range(depth - 1):
        node[key] = {}
        node = node[key]
    return root


def float32_sum(values) -> float:
    total = np.float32(0.0)
    for value in values:
        total = np.float32(total + np.float32(value))
    return float(total)


# --------------------------------------------------------------------------- register() with dicts

GOOD = {"name": "get_user", "description": "Fetch one user by id."}
BAD_DICTS = {
    "no name": ({"description": "x"}, 'has no "name"'),
    "null name": ({"name": None}, 'has no "name"'),
    "number name": ({"name": 7}, "name must be a string, got a number (7)"),
    "10k-char name": ({"name": "n" * 10_000}, f"MAX_ID_CHARS = {MAX_ID_CHARS}"),
    "10k-char id": ({"name": "a", "id": "i" * 10_000}, f"MAX_ID_CHARS = {MAX_ID_CHARS}"),
    "10k-char server": ({"name": "a", "server": "s" * 10_000}, "server is 10000 characters"),
    "number group": ({"name": "a", "group": 3}, "group must be a string"),
    "control character": ({"name": "get\x1buser"}, "U+001B"),
    "number description": ({"name": "a", "description": 1.5}, "description must be a string"),
    "long description": ({"name": "a", "description": "x" * (MAX_DESCRIPTION_CHARS + 1)},
                         "MAX_DESCRIPTION_CHARS"),
    "surrogate": ({"name": "a", "description": "bad \ud800"}, "unpaired surrogate"),
    "schema not object": ({"name": "a", "input_schema": ["x"]}, "input_schema must be a JSON object"),
    "too deep": ({"name": "a", "output_schema": nested(MAX_SCHEMA_DEPTH + 1)},
                 f"MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH}"),
    "nan": ({"name": "a", "input_schema": {"minimum": float("nan")}}, "non-finite number"),
    "non-string key": ({"name": "a", "input_schema": {"properties": {1: {}}}}, "non-string key 1"),
    "unknown key": ({"name": "a", "inputSchema": {}}, 'unknown key "inputSchema"'),
}


@pytest.mark.parametrize(("raw", "expected"), BAD_DICTS.values(), ids=BAD_DICTS.keys())
def test_register_refuses_a_bad_dict_naming_it_and_changes_nothing(raw: dict, expected: str) -> None:
    catalog = ToolCatalog([{"name": "send_email", "description": "Send an email."}])
    before = catalog.search("send email user", 5)
    with pytest.raises(RanklensError) as info:
        catalog.register([GOOD, raw])
    message = str(info.value)
    assert "tool #1" in message and expected in message, message
    assert len(message) < 600  # a 10k-character value is shown shortened
    assert "get_user" not in catalog and len(catalog) == 1  # the good one was not added either
    assert catalog.search("send email user", 5) == before


def test_register_refuses_things_that_are_not_tools_with_a_query_error() -> None:
    for bad in (None, 42, 3.5):
        with pytest.raises(QueryError, match="register"):
            ToolCatalog().register(bad)  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="#0 is a list"):
        ToolCatalog([[{"name": "a"}]])


def test_register_accepts_a_dict_exactly_at_the_limits() -> None:
    name = "n" * MAX_ID_CHARS
    catalog = ToolCatalog([{"name": name, "description": "word " * (MAX_DESCRIPTION_CHARS // 5),
                            "input_schema": nested(MAX_SCHEMA_DEPTH)}])
    assert catalog.search("word", 1).ids() == [name]


def test_skill_dicts_are_refused_naming_the_field_and_shortening_the_value() -> None:
    with pytest.raises(QueryError) as info:
        SkillCatalog([{"name": "s" * 10_000}])
    message = str(info.value)
    assert "skill #0" in message and "MAX_ID_CHARS" in message and len(message) < 400
    with pytest.raises(QueryError, match=r"skill #1 \('b'\) is not a valid Skill: description: "):
        SkillCatalog([{"name": "a"}, {"name": "b", "description": 5}])


# --------------------------------------------------------------------------- loaders: each format

NUMBER_WHERE_A_STRING_BELONGS = {
    "native id": ([{"name": "a", "id": 12}], "tools[0]", "id must be a string"),
    "native server": ([{"name": "a", "server": 1}], 'tools[0] ("a")', "server must be a string"),
    "native group": ([{"name": "a", "group": False}], 'tools[0] ("a")', "group must be a string"),
    "openai name": ([{"type": "function", "function": {"name": 5}}], "tools[0]",
                    "function.name must be a string"),
    "openai description": ([{"type": "function", "function": {"name": "f", "description": []}}],
                           'tools[0] ("f")', "function.description must be a string"),
    "anthropic description": ([{"name": "a", "description": 2, "input_schema": {}}], 'tools[0] ("a")',
                              "description must be a string"),
    "mcp name": ({"tools": [{"name": 1.5, "inputSchema": {}}]}, "tools[0]", "name must be a string"),
    "mcp server": ({"server": 9, "tools": []}, "server", "server name must be a string"),
    "mcp instructions": ({"server": "s", "instructions": 1, "tools": []}, "server",
                         "instructions must be a string"),
    "workspace tool": ({"servers": {"fs": {"tools": [{"name": None, "inputSchema": {}}]}}},
                       'servers["fs"].tools[0]', 'has no "name"'),
    "skill tags": ({"skills": [{"name": "s", "tags": "a, 3"}, {"name": "t", "tags": [[1]]}]},
                   'skills[1] ("t")', "tags[0] must be a string"),
    "skill body": ({"skills": [{"name": "s", "body": 1}]}, 'skills[0] ("s")', "body must be a string"),
}


@pytest.mark.parametrize(("data", "item", "problem"), NUMBER_WHERE_A_STRING_BELONGS.values(),
                         ids=NUMBER_WHERE_A_STRING_BELONGS.keys())
def test_numbers_where_strings_belong_are_refused_in_every_format(data, item, problem) -> None:
    for loader in (lambda: parse_catalog(data, "up.json"),
                   lambda: parse_catalog_bytes(json.dumps(data).encode(), "up.json")):
        with pytest.raises(CatalogError) as info:
            loader()
        message = str(info.value)
        assert message.startswith(f"up.json: {item}") and problem in message and "Fix:" in message, message


LONG = "x" * 10_000
LONG_IDENTIFIERS = {
    "native name": [{"name": LONG}],
    "native id": [{"name": "a", "id": LONG}],
    "group": [{"name": "a", "group": LONG}],
    "mcp server": {"server": LONG, "tools": [{"name": "a", "inputSchema": {}}]},
    "workspace server": {"servers": {LONG: {"tools": []}}},
    "openai name": [{"type": "function", "function": {"name": LONG}}],
    "skill tag": {"skills": [{"name": "s", "tags": [LONG]}]},
    "skill tool": {"skills": [{"name": "s", "tools": [LONG]}]},
}


@pytest.mark.parametrize("data", LONG_IDENTIFIERS.values(), ids=LONG_IDENTIFIERS.keys())
def test_10k_character_identifiers_are_refused_with_the_limit(data) -> None:
    with pytest.raises(CatalogError) as info:
        parse_catalog_bytes(json.dumps(data).encode(), "long.json")
    message = str(info.value)
    assert f"over the limit MAX_ID_CHARS = {MAX_ID_CHARS}" in message and "Fix:" in message
    assert len(message) < 600, "the 10k-character value must not be echoed whole"


def test_limits_are_inclusive_and_one_more_is_refused(tmp_path: Path) -> None:
    at_limit = [{"name": "deep", "description": "d" * MAX_DESCRIPTION_CHARS,
                 "input_schema": nested(MAX_SCHEMA_DEPTH, "properties")}]
    path = tmp_path / "limits.json"
    path.write_text(json.dumps(at_limit), encoding="utf-8")
    assert load_catalog(path).tools[0].id == "deep"
    over = [{"name": "deep", "input_schema": nested(MAX_SCHEMA_DEPTH + 1, "properties")}]
    path.write_text(json.dumps(over), encoding="utf-8")
    with pytest.raises(CatalogError, match=r'limits.json: tools\[0\] \("deep"\): input_schema nests deeper'):
        load_catalog(path)
    padded = b"[]" + b" " * (MAX_FILE_BYTES - 2)  # exactly 20 MiB
    assert parse_catalog_bytes(padded, "padded.json").is_empty


def test_readme_states_the_limits_the_loaders_enforce() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"{MAX_FILE_BYTES // (1024 * 1024)} MiB per file" in readme
    assert f"{MAX_DESCRIPTION_CHARS:,} characters per description" in readme
    assert f"{MAX_SCHEMA_DEPTH} levels of schema nesting" in readme


def test_control_and_bidi_characters_in_text_fields_load_and_search() -> None:
    # Newlines, tabs, NUL, ANSI escapes and RTL marks are allowed in descriptions
    # (only identifiers refuse control characters): they must index and search.
    data = [{"name": "wipe_disk", "description": "Erase\x00 the\tdisk\x1b[31m now\u202e\u200f.",
             "input_schema": {"properties": {"device\u200f": {"description": "Block \x07device",
                                                             "enum": ["sda", 1, None, ["x"], {"y": 2}]}}}}]
    catalog = parse_catalog_bytes(json.dumps(data).encode(), "ctl.json")
    text = project_tool(catalog.tools[0])
    assert "\x00" in text and "sda" in text and "None" not in text
    index = ToolCatalog(catalog.tools)
    assert index.search("erase the disk device sda", 3).ids() == ["wipe_disk"]


# --------------------------------------------------------------------------- self-reference

def branching_cycle() -> dict:
    schema: dict = {"type": "object", "properties": {}}
    schema["properties"]["left"] = schema
    schema["properties"]["right"] = {"type": "array", "items": schema}
    return schema


@pytest.mark.timeout(60)  # a hang detector: before the cut at cycles this needed 2^256 steps
def test_branching_self_reference_projects_in_bounded_time() -> None:
    raw = Tool.model_construct(id="tree", name="tree", description="A tree.",
                               input_schema=branching_cycle(), output_schema={})
    assert tool_projection(raw).text == "tree A tree. left right"  # each node once per path
    tool = Tool(id="tree", name="tree", description="A tree.", input_schema=branching_cycle())
    catalog = ToolCatalog([tool])  # pydantic copies the top dict: one more level, still finite
    assert catalog.search("right tree", 1).ids() == ["tree"]


def test_self_referencing_dict_is_refused_by_register_and_the_loaders() -> None:
    with pytest.raises(CatalogError, match=r'tool #0: tool \("tree"\): input_schema nests deeper'):
        ToolCatalog([{"name": "tree", "input_schema": branching_cycle()}])
    with pytest.raises(CatalogError, match="MAX_SCHEMA_DEPTH"):
        parse_catalog([{"name": "tree", "input_schema": branching_cycle()}])
    text = "- name: tree\n  input_schema: &s {properties: {left: *s, right: {items: *s}}}\n"
    with pytest.raises(CatalogError, match=r'tools.yaml: tools\[0\] \("tree"\)'):
        parse_catalog_text(text, "tools.yaml", ".yaml")


def test_ref_cycles_in_a_file_load_project_and_search() -> None:
    schema = {
        "$defs": {"node": {"type": "object", "properties": {
            "child": {"$ref": "#/$defs/node"}, "label": {"type": "string", "description": "Node label"}}}},
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/node"}, "walk": {"$ref": "#"}},
    }
    catalog = parse_catalog_bytes(json.dumps([{"name": "walk_tree", "input_schema": schema}]).encode(),
                                  "ref.json")
    assert project_tool(catalog.tools[0]) == "walk_tree walk tree root walk"  # $ref never followed
    assert ToolCatalog(catalog.tools).search("walk the tree", 1).ids() == ["walk_tree"]


# --------------------------------------------------------------------------- hypothesis: arbitrary catalogs

WORDS = ["get", "user", "users", "file", "send", "email", "the", "a", "of", "deploy", "refund",
         "Crème", "北京", "über", "🚀", "HTTPServer", "don't", "v1.2", "x", "42", "_", "-", ""]
NAMES = ["get_user", "sendEmail", "list-files", "北京_map", "deploy", "x", "a", "Crème", "🚀"]
ANY_CHAR = st.characters(exclude_categories=[])  # surrogates and control characters included
TEXT_CHAR = st.characters(exclude_categories=["Cs"])  # what a UTF-8 file can hold
NAME_CHAR = st.characters(exclude_categories=["Cs", "Cc"])


def _unique_names(items: list) -> list:
    """Suffix string names with their position, so most generated lists have no duplicate ids."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            item = {**item, "name": f"{item['name']}{i}"}
        out.append(item)
    return out


def catalog_strategy(hostile: bool):
    """JSON-ish catalogs: plausible ones (most load), or hostile ones (values of any type anywhere)."""
    chars = ANY_CHAR if hostile else TEXT_CHAR
    words = st.lists(st.sampled_from(WORDS) | st.text(chars, max_size=6), max_size=8).map(" ".join)
    numbers = (st.integers(-(2**70), 2**70) | st.floats(allow_nan=hostile, allow_infinity=hostile)
               | st.sampled_from([0, -1, 10**30, -0.0, 1e308]))
    scalars = st.none() | st.booleans() | numbers | words
    keys = st.sampled_from(["name", "id", "description", "type", "properties", "items", "enum", "$ref",
                            "inputSchema", "input_schema", "tools", "skills", "function"]) | st.text(max_size=5)
    jsonish = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(keys, inner, max_size=5), max_leaves=20)
    if hostile:
        identifier = st.sampled_from(NAMES) | st.text(max_size=8) | scalars
    else:
        identifier = st.sampled_from(NAMES) | st.text(NAME_CHAR, min_size=1, max_size=8).filter(str.strip)
    key_text = identifier.filter(lambda k: isinstance(k, str))
    loose = scalars if hostile else st.nothing()

    def extend(inner):
        prop = st.fixed_dictionaries({}, optional={
            "type": st.sampled_from(["string", "object", "array"]) | scalars,
            "description": words | scalars,
            "enum": st.lists(scalars, max_size=4) | scalars,
            "properties": st.dictionaries(key_text, inner, max_size=4),
            "items": inner | st.lists(inner, max_size=2),
        })
        return prop | jsonish if hostile else prop

    schemas = st.recursive(
        st.fixed_dictionaries({}, optional={"description": words, "enum": st.lists(scalars, max_size=3)}),
        extend, max_leaves=12)
    native_tool = st.fixed_dictionaries({"name": identifier}, optional={
        "id": identifier, "description": words | loose, "input_schema": schemas | loose,
        "output_schema": schemas, "server": identifier, "group": identifier})
    mcp_tool = st.fixed_dictionaries({"name": identifier}, optional={
        "description": words, "inputSchema": schemas, "outputSchema": schemas, "title": scalars})
    openai_tool = st.fixed_dictionaries({
        "type": st.just("function") | loose,
        "function": st.fixed_dictionaries({"name": identifier},
                                          optional={"description": words, "parameters": schemas})})
    skill = st.fixed_dictionaries({"name": identifier}, optional={
        "description": words | loose, "tags": st.lists(identifier, max_size=3) | words, "body": words})

    def tool_lists(tool):
        unique = st.lists(tool, max_size=8).map(_unique_names)
        return st.lists(tool | jsonish, max_size=8) | unique if hostile else unique

    shapes = [
        tool_lists(native_tool),
        st.fixed_dictionaries({"tools": tool_lists(native_tool)},
                              optional={"skills": st.lists(skill, max_size=5).map(_unique_names)}),
        st.fixed_dictionaries({"skills": st.lists(skill, max_size=6).map(_unique_names)}),
        st.fixed_dictionaries({"tools": tool_lists(mcp_tool)}, optional={"server": identifier}),
        st.fixed_dictionaries({"servers": st.dictionaries(
            key_text.filter(lambda k: "__" not in k),
            st.fixed_dictionaries({"tools": st.lists(mcp_tool, max_size=4).map(_unique_names)}),
            max_size=3)}),
        tool_lists(openai_tool),
    ]
    return st.one_of(*shapes, jsonish) if hostile else st.one_of(*shapes)


words = st.lists(st.sampled_from(WORDS) | st.text(ANY_CHAR, max_size=6), max_size=8).map(" ".join)
catalogs = st.one_of(catalog_strategy(hostile=False), catalog_strategy(hostile=True))
queries = words | st.text(ANY_CHAR, max_size=30) | st.sampled_from(["", "   ", "the of a", "get user"])


def check_index(index, items, query: str, rnd: random.Random) -> list[tuple[str, float]]:
    """Search, then check determinism, explanations and load-order independence; return the ranking."""
    result = index.search(query, 10)
    assert result == index.search(query, 10)
    assert result.hits or result.reason, "an empty result must say why"
    ranking = [(h.id, h.score) for h in result]
    assert [r for r, _ in enumerate(ranking)] == [h.rank for h in result]
    for hit in result:
        exp = index.explain(query, hit.id)
        assert exp.score == hit.score and exp.rank == hit.rank
        assert float32_sum(t.contribution for t in exp.terms) == hit.score
    shuffled = list(items)
    rnd.shuffle(shuffled)
    other = type(index)(shuffled)
    assert [(h.id, h.score) for h in other.search(query, 10)] == ranking
    return ranking


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=catalogs, qs=st.lists(queries, min_size=1, max_size=3), rnd=st.randoms(use_true_random=False))
def test_arbitrary_catalogs_load_project_search_and_explain_consistently(data, qs, rnd) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unidecode warns about lone surrogates in queries
        try:
            catalog = parse_catalog(data, "fuzz.json")
        except CatalogError as exc:
            assert str(exc).startswith("fuzz.json")
            with pytest.raises(CatalogError):  # the same data as a file fails the same way
                parse_catalog_bytes(json.dumps(data).encode(), "fuzz.json")
            return
        again = parse_catalog_bytes(json.dumps(data).encode(), "fuzz.json")
        assert (again.tools, again.skills) == (catalog.tools, catalog.skills)
        for tool in catalog.tools:
            projection = tool_projection(tool)
            assert projection.text == project_tool(tool)
            assert all(projection.text[s.start:s.end] == t for s, t in projection.parts())
        for item in catalog.skills:
            project_skill(item)
        for items, kind in ((catalog.tools, ToolCatalog), (catalog.skills, SkillCatalog)):
            index = kind(items)
            for q in qs:
                check_index(index, items, q, rnd)


class DenseFake(HashingEmbedder):
    """A deterministic embedder with dense vectors (hashing vectors are sparse, and their dot
    products come out exact in any summation order, which would hide order effects)."""

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(self.dimension)
        return (vector / np.linalg.norm(vector)).astype(np.float32)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=catalog_strategy(hostile=False),
       qs=st.lists(queries, min_size=1, max_size=2), rnd=st.randoms(use_true_random=False))
def test_semantic_and_hybrid_rankings_do_not_depend_on_load_order(data, qs, rnd) -> None:
    try:
        tools = parse_catalog(data, "fuzz.json").tools
    except CatalogError:
        return
    shuffled = list(tools)
    rnd.shuffle(shuffled)
    first, second = (ToolCatalog(t, method="hybrid", model=DenseFake(64), persistent_cache=False)
                     for t in (tools, shuffled))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in qs:
            for method in ("semantic", "hybrid"):
                result = first.search_with(q, 5, method)
                assert result == first.search_with(q, 5, method)
                assert result == second.search_with(q, 5, method)  # scores equal bit for bit
                for hit in result:
                    exp = first.explain(q, hit.id, method)
                    if method == "hybrid":
                        assert exp.fused_score == pytest.approx(hit.score, rel=1e-12)


# --------------------------------------------------------------------------- loader fuzz target

FUZZ_SECONDS = float(os.environ.get("RANKLENS_FUZZ_SECONDS", "4"))
FUZZ_SEED = int(os.environ.get("RANKLENS_FUZZ_SEED", "0"))
TOKENS = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"null", b"NaN", b"-Infinity", b"1e999",
          b"-0", b"9" * 5000, b'"\\ud800"', b'"\\u0000"', b"\xff", b"\xef\xbb\xbf", b"&a ", b"*a",
          b"\n- ", b": ", b"---\n", b"!!python/object:os.system", b'"name"', b'"inputSchema"',
          b'"properties"', b'"$ref": "#"', b"\t", b"\x00", "\u202e".encode(), "北京🚀".encode()]


def _fuzz_seeds() -> list[tuple[str, bytes]]:
    seeds = [(p.name, p.read_bytes()) for p in sorted(SAMPLES.glob("*.json")) + sorted(SAMPLES.glob("*.yaml"))]
    skills = sorted(SAMPLES.glob("skills/*/SKILL.md"))[:3]
    seeds += [(f"{p.parent.name}.SKILL.md", p.read_bytes()) for p in skills]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:  # stored, so byte mutations reach the text
        for p in skills:
            archive.writestr(f"bundle/{p.parent.name}/SKILL.md", p.read_bytes())
    seeds.append(("skills.zip", buffer.getvalue()))
    seeds += [
        ("mcp.json", b'{"server": "fs", "tools": [{"name": "read", "inputSchema": {"properties": '
                     b'{"path": {"description": "A path", "enum": ["a", 1]}}}}]}'),
        ("openai.json", b'[{"type": "function", "function": {"name": "f", "parameters": {}}}]'),
        ("ws.yaml", b"servers:\n  fs:\n    tools:\n      - name: read\n        inputSchema: {}\n"),
    ]
    return seeds


HOSTILE_VALUES = [None, True, 0, -1, 2**80, -1e308, 0.5, "", " ", "x" * 600, "\x00", "\x1b[31m",
                  "\u202e", "北京🚀", [], {}, [None], {"$ref": "#"}, {"properties": {"p": {"$ref": "#"}}},
                  {"enum": [1, None, "a"]}, {"items": [{}]}, nested(MAX_SCHEMA_DEPTH + 1)]


def _hostile(rnd: random.Random):
    return copy.deepcopy(rnd.choice(HOSTILE_VALUES))


def _mutate_value(node, rnd: random.Random):
    """Replace, add or delete one value somewhere in parsed JSON data."""
    if isinstance(node, dict) and node and rnd.random() < 0.8:
        key = rnd.choice(list(node))
        if rnd.random() < 0.2:
            node[rnd.choice(["name", "id", "description", "properties", "enum", "x"])] = _hostile(rnd)
        elif rnd.random() < 0.1:
            del node[key]
        else:
            node[key] = _mutate_value(node[key], rnd)
        return node
    if isinstance(node, list) and node and rnd.random() < 0.8:
        i = rnd.randrange(len(node))
        node[i] = _mutate_value(node[i], rnd)
        return node
    return _hostile(rnd)


def mutate(data: bytes, rnd: random.Random, seeds: list[tuple[str, bytes]]) -> bytes:
    if data[:1] in (b"[", b"{") and rnd.random() < 0.5:  # structured: keeps the JSON valid
        tree = json.loads(data)
        for _ in range(rnd.randint(1, 3)):
            tree = _mutate_value(tree, rnd)
        return json.dumps(tree, ensure_ascii=rnd.random() < 0.5).encode("utf-8", "surrogatepass")
    buf = bytearray(data)
    for _ in range(rnd.choice([1, 1, 1, 2, 3, 6])):
        pos = rnd.randint(0, len(buf))
        op = rnd.randrange(6)
        if op == 0 and buf:
            buf[min(pos, len(buf) - 1)] ^= 1 << rnd.randrange(8)
        elif op == 1:
            buf[pos:pos] = rnd.choice(TOKENS)
        elif op == 2:
            del buf[pos:pos + rnd.randint(1, 64)]
        elif op == 3 and buf:
            start = rnd.randrange(len(buf))
            buf[pos:pos] = buf[start:start + rnd.randint(1, 256)]
        elif op == 4:
            other = rnd.choice(seeds)[1]
            start = rnd.randrange(len(other))
            buf[pos:] = other[start:start + rnd.randint(1, 4096)]
        else:
            buf[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
    return bytes(buf)


def fuzz_one(data: bytes, filename: str) -> bool:
    """The fuzz target: load, and on success project, index and search; True if it loaded."""
    try:
        catalog = parse_catalog_bytes(data, filename)
    except CatalogError as exc:
        assert str(exc).startswith(filename)
        return False
    for tool in catalog.tools:
        project_tool(tool)
    items = catalog.tools or catalog.skills
    index = (ToolCatalog if catalog.tools else SkillCatalog)(items)
    result = index.search("get the user file", 5)
    for hit in result:
        index.explain("get the user file", hit.id)
    return True


def test_loader_fuzz_for_a_bounded_time(tmp_path: Path) -> None:
    """Mutated real catalogs go in for RANKLENS_FUZZ_SECONDS (default 4); only CatalogError may come out.

    Why not atheris: it installs offline (a 35 MB cp311 manylinux wheel), but its
    coverage guidance would mostly instrument the C JSON/YAML parsers' Python
    callers, it runs the target in its own process and exits that process on a
    crash, and it would add a native dependency. This loop needs nothing new, is
    deterministic (iteration ``i`` of seed ``S`` is always the same input, so a
    failure reproduces from the message), mutates real files so the structure
    survives deep enough to reach the item checks, and is bounded by time.
    CI can raise RANKLENS_FUZZ_SECONDS for a longer run.
    """
    seeds = _fuzz_seeds()
    deadline = time.monotonic() + FUZZ_SECONDS
    iteration = 0
    loaded = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while time.monotonic() < deadline:
            rnd = random.Random(f"{FUZZ_SEED}:{iteration}")
            name, seed = rnd.choice(seeds)
            data = mutate(seed, rnd, seeds)
            try:
                loaded += fuzz_one(data, name)
            except Exception as exc:
                crash = tmp_path / f"crash-{FUZZ_SEED}-{iteration}-{name}"
                crash.write_bytes(data)
                raise AssertionError(
                    f"iteration {iteration} (RANKLENS_FUZZ_SEED={FUZZ_SEED}) on a mutation of {name} "
                    f"raised {type(exc).__name__}: {exc}; input saved to {crash}"
                ) from exc
            iteration += 1
    assert iteration >= 3, f"only {iteration} inputs in {FUZZ_SECONDS} s"
    assert loaded, "no mutated input loaded: the mutations are too destructive to reach the item checks"


# --------------------------------------------------------------------------- hostile queries

HOSTILE_QUERIES = {
    "empty": "",
    "whitespace": " \t\n\u3000 ",
    "stop words only": "the of and to it is what",
    "10k characters": ("share the deck with dana and schedule a meeting " * 250)[:10_000],
    "10k one word": "q" * 10_000,
    "10k random code points": "".join(chr(32 + (i * 7919) % 0x2FFF) for i in range(10_000)),
    "CJK": "把文件分享给同事",
    "Cyrillic": "отправить письмо коллеге",
    "Arabic": "أرسل البريد الإلكتروني",
    "Devanagari": "ईमेल भेजें",
    "emoji": "📅 schedule 🚀🔥 meeting 👨‍👩‍👧",
    "control characters": "send\x00 email\x1b[31m to\x07 dana\x7f\x85",
    "RTL marks": "\u200fsend\u202e email\u200e \u2067dana\u2069",
    "combining marks": "e\u0301" * 2000,
    "lone surrogate": "send \ud83d email",
}


@pytest.fixture(scope="module")
def workspace_catalogs():
    tools = load_catalog(WORKSPACE_150).tools
    assert len(tools) >= 150
    return ToolCatalog(tools), ToolCatalog(tools, method="hybrid", model=HashingEmbedder(64),
                                           persistent_cache=False)


@pytest.mark.timeout(60)  # bounded time: a hang fails the test; speed lives in bench/
@pytest.mark.parametrize("method", ["bm25", "semantic", "hybrid"])
@pytest.mark.parametrize("query", HOSTILE_QUERIES.values(), ids=HOSTILE_QUERIES.keys())
def test_hostile_queries_give_a_defined_result_quickly(workspace_catalogs, query: str, method: str) -> None:
    bm25, dense = workspace_catalogs
    catalog = bm25 if method == "bm25" else dense
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unidecode warns about the lone surrogate
        result = catalog.search_with(query, 10, method)
        explanation = bm25.explain(query, bm25.tools[0].id)
    assert result.method == method and len(result) <= 10
    assert result.hits or result.reason, "no hits must come with a reason"
    assert [h.rank for h in result] == list(range(len(result)))
    assert float32_sum(t.contribution for t in explanation.terms) == explanation.score
    if not query.strip():
        assert not result.hits and result.reason == "the query is empty"


def test_queries_without_searchable_words_say_so_for_bm25(workspace_catalogs) -> None:
    bm25, _ = workspace_catalogs
    assert bm25.search("the of and to it", 5).reason == (
        "the query has no searchable words (empty, or only stop words)")
    assert bm25.search("\x00\x01\u200f", 5).reason == (
        "the query has no searchable words (empty, or only stop words)")
    assert bm25.search("отправить письмо", 5).reason == "no tool shares a word with the query"


def test_cli_refuses_a_query_that_is_not_utf8_and_prints_hostile_ones_as_json(capsys) -> None:
    catalog = str(WORKSPACE_150)
    assert main(["search", catalog, "send \udcff email", "--json"]) == 2  # argv byte 0xFF
    assert "not valid UTF-8" in capsys.readouterr().err
    for query in ("", HOSTILE_QUERIES["RTL marks"], HOSTILE_QUERIES["control characters"], "📅"):
        assert main(["search", catalog, query, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["query"] == query
        assert main(["explain", catalog, query, "filesystem__write_file", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["query"] == query
