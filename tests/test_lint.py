"""Tests for core.lint: every rule fires on a definition built to trigger it and stays quiet
on a clean one; ordering, exit codes and the CLI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from core import lint
from core.catalog import Catalog, Skill, Tool
from core.evaluation import Judgment
from core.lint import RULES, Finding, exit_code, lint_catalog, saturation_gain
from tests.conftest import keys_sorted

# --------------------------------------------------------------------------- clean definitions

REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "description": "The order number from the receipt"},
        "amount": {"type": "number", "description": "How much to give back; omit for all of it"},
    },
    "required": ["order_id"],
    "additionalProperties": False,
}


def refund(**changes) -> Tool:
    data = {
        "id": "refund_order",
        "name": "refund_order",
        "description": "Give a customer their money back for part or all of an order. Use when a "
        "customer asks for a refund or reports being charged twice.",
        "input_schema": REFUND_SCHEMA,
    }
    data.update(changes)
    return Tool(**data)


def track(**changes) -> Tool:
    data = {
        "id": "track_shipment",
        "name": "track_shipment",
        "description": "Say where a parcel is now and when it should arrive. Use when a "
        "customer asks where their delivery is or why it is late.",
        "input_schema": {
            "type": "object",
            "properties": {"tracking_number": {"type": "string", "description": "Carrier code"}},
            "required": ["tracking_number"],
            "additionalProperties": False,
        },
    }
    data.update(changes)
    return Tool(**data)


def onboarding(**changes) -> Skill:
    data = {
        "id": "customer_onboarding",
        "name": "customer_onboarding",
        "description": "Walk a new customer through setting up their account and first invoice. "
        "Use when someone has just signed up and asks how to get started.",
        "tags": ["onboarding", "accounts"],
    }
    data.update(changes)
    return Skill(**data)


def rules_of(findings: list[Finding], tool_id: str | None = None) -> set[str]:
    return {f.rule for f in findings if tool_id is None or f.tool_id == tool_id}


def test_clean_catalog_has_no_findings():
    findings = lint_catalog(Catalog(tools=[refund(), track()], skills=[onboarding()]))
    assert findings == []
    assert exit_code(findings) == 0


def test_registry_is_complete_and_kebab_case():
    assert all(r.severity in lint.SEVERITIES for r in RULES.values())
    assert all(rid == rid.lower() and " " not in rid and "_" not in rid for rid in RULES)
    assert all(r.rationale.endswith(".") for r in RULES.values())


# --------------------------------------------------------------------------- per-rule triggers
#
# (rule, a catalog that triggers it, the tool id it must name)

TRIGGERS = {
    "missing-description": (Catalog(tools=[refund(description="")]), "refund_order"),
    "anemic-description": (
        Catalog(tools=[refund(description="Refunds orders. Use when refunding.")]),
        "refund_order",
    ),
    "missing-use-when": (
        Catalog(tools=[refund(description="Give a customer their money back for part or all "
                                          "of an order they paid for by card.")]),
        "refund_order",
    ),
    "repeated-term": (
        Catalog(tools=[refund(description="Refund an order. The refund goes to the card; a "
                                          "refund of a refunded order fails. Use when asked.")]),
        "refund_order",
    ),
    "paraphrase-chain": (
        Catalog(tools=[track(description="Find, search, look up or locate a parcel and say when "
                                         "it arrives. Use when a customer asks about delivery.")]),
        "track_shipment",
    ),
    "marketing-words": (
        Catalog(tools=[refund(description="A powerful, seamless way to give a customer their "
                                          "money back. Use when a customer asks for a refund.")]),
        "refund_order",
    ),
    "schema-in-prose": (
        Catalog(tools=[refund(description="Takes a string parameter with the order and returns "
                                          "JSON. Use when a customer asks for a refund.")]),
        "refund_order",
    ),
    "transport-details": (
        Catalog(tools=[refund(description="Sends a POST request to the payments service with a "
                                          "30s timeout and 3 retries. Use when a customer asks "
                                          "for a refund.")]),
        "refund_order",
    ),
    "near-duplicate": (
        Catalog(tools=[refund(), refund(id="refund_purchase", name="refund_purchase"), track()]),
        "refund_order",
    ),
    "kebab-case-name": (Catalog(tools=[refund(id="refund-order", name="refund-order")]),
                        "refund-order"),
    "dotted-name": (Catalog(tools=[refund(id="orders.refund", name="orders.refund")]),
                    "orders.refund"),
    "vague-parameter-name": (
        Catalog(tools=[refund(input_schema={
            "type": "object", "properties": {"arg1": {"type": "string"}},
            "required": ["arg1"], "additionalProperties": False})]),
        "refund_order",
    ),
    "non-string-enum": (
        Catalog(tools=[refund(input_schema={
            "type": "object",
            "properties": {"reason": {"type": "integer", "enum": [1, 2, 3],
                                      "description": "Why the customer wants it back"}},
            "required": ["reason"], "additionalProperties": False})]),
        "refund_order",
    ),
    "untyped-property": (
        Catalog(tools=[refund(input_schema={
            "type": "object", "properties": {"order_id": {"description": "The order number"}},
            "required": ["order_id"], "additionalProperties": False})]),
        "refund_order",
    ),
    "missing-required": (
        Catalog(tools=[refund(input_schema={
            "type": "object", "properties": {"order_id": {"type": "string"}},
            "additionalProperties": False})]),
        "refund_order",
    ),
    "missing-additional-properties": (
        Catalog(tools=[refund(input_schema={
            "type": "object", "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"]})]),
        "refund_order",
    ),
    "skill-without-tags": (Catalog(skills=[onboarding(tags=[])]), "customer_onboarding"),
}


@pytest.mark.parametrize("rule", sorted(TRIGGERS))
def test_rule_triggers(rule):
    catalog, tool_id = TRIGGERS[rule]
    findings = lint_catalog(catalog)
    hits = [f for f in findings if f.rule == rule]
    assert hits, f"{rule} did not fire; got {rules_of(findings)}"
    f = hits[0]
    assert f.tool_id == tool_id
    assert f.severity == RULES[rule].severity
    assert f.suggestion and f.message


def test_every_definition_rule_has_a_trigger_test():
    query_rules = {r.id for r in RULES.values() if r.needs_queries}
    assert set(RULES) - query_rules == set(TRIGGERS)


# --------------------------------------------------------------------------- details of single rules


def test_missing_description_suppresses_the_other_description_rules():
    findings = lint_catalog(Catalog(tools=[refund(description="")]))
    assert rules_of(findings) == {"missing-description"}
    assert findings[0].severity == "error" and exit_code(findings) == 1


def test_anemic_counts_words():
    seven = "one two three four five six seven"
    eight = seven + " eight"
    assert "anemic-description" in rules_of(lint_catalog(Catalog(tools=[refund(description=seven)])))
    assert "anemic-description" not in rules_of(
        lint_catalog(Catalog(tools=[refund(description=eight)]))
    )


@pytest.mark.parametrize(
    "clause",
    ["Use when a customer asks.", "Use this tool when asked.", "Call it if asked.",
     "Useful for refunds.", "Use this to refund.",
     # a sentence opening with Use/Call/Invoke and a situation word
     "Use before answering a billing question.", "Use before promising a refund date.",
     "Use only after verifying the customer's identity.", "Use to undo a duplicate charge.",
     "Call after a payment fails.", "Invoke whenever the card was charged twice.",
     "Use for disputed charges.", "Use if the order was never delivered."],
)
def test_use_when_variants_are_accepted(clause):
    desc = "Give a customer their money back for part or all of an order. " + clause
    assert "missing-use-when" not in rules_of(lint_catalog(Catalog(tools=[refund(description=desc)])))


def test_use_only_counts_at_the_start_of_a_sentence():
    # "use to" / "use only" inside a sentence is not a clause about the caller's situation
    desc = "Give a customer the money back that they were able to use only once for an order."
    assert "missing-use-when" in rules_of(lint_catalog(Catalog(tools=[refund(description=desc)])))


def test_use_when_suggestion_is_a_template_not_built_from_the_id(tmp_path):
    catalog = Catalog(tools=[refund(id="do_search", name="do_search",
                                    description="Give a customer their money back for an order.")])
    f = next(f for f in lint_catalog(catalog) if f.rule == "missing-use-when")
    assert f.suggestion == 'Add a sentence like: "Use when <the situation a caller is in, in their words>."'
    assert "do search" not in f.suggestion
    # with a query set, one judged query for the tool is quoted
    judgments = [Judgment("I was charged twice", {"do_search": 1.0}),
                 Judgment("where is my parcel", {"other": 1.0})]
    f = next(f for f in lint_catalog(catalog, judgments) if f.rule == "missing-use-when")
    assert f.suggestion.endswith('A judged query for it: "I was charged twice".')
    f = next(f for f in lint_catalog(Catalog(tools=[refund(description="")]), judgments)
             if f.rule == "missing-description")
    assert "<the situation a caller is in" in f.suggestion and "refund order" not in f.suggestion


def test_rules_have_a_category_shown_in_findings_table_and_rule_list():
    schema = {r.id for r in RULES.values() if r.category == "schema"}
    assert schema == {"untyped-property", "missing-required", "missing-additional-properties"}
    assert {r.category for r in RULES.values()} == {"ranking", "schema"}
    # non-string-enum changes what the projection indexes: a ranking rule
    assert RULES["non-string-enum"].category == "ranking"
    catalog, _ = TRIGGERS["missing-required"]
    f = next(f for f in lint_catalog(catalog) if f.rule == "missing-required")
    assert f.category == "schema" and f.to_dict()["category"] == "schema"
    text = lint.format_findings([f])
    assert "WARNING missing-required               schema  tool refund_order" in text
    assert text.endswith("0 errors, 1 warning, 0 info")  # not "infos"
    assert Finding("r", "warning", "a", "", "").category == "ranking"  # unknown rule
    assert "missing-required               warning  schema" in lint.format_rules()


def test_repeated_term_threshold_and_text():
    # "refund" family: Refund, refund, refund, refunded -> stem "refund" x4 -> fires
    catalog, _ = TRIGGERS["repeated-term"]
    f = next(f for f in lint_catalog(catalog) if f.rule == "repeated-term")
    assert f.text == "refund/refunded ×4"
    # copy 4 adds 1.551 - 1.462 = 0.090 of the first copy's weight
    assert "copy 4 of 'refund' adds only 9%" in f.message
    three = "Refund an order. The refund goes back to the card it came from. Use for a refund."
    assert "repeated-term" not in rules_of(lint_catalog(Catalog(tools=[refund(description=three)])))
    # numbers are not reported: "1" five times
    nums = "Pages 1, 1, 1, 1 and 1 of the order history. Use when a customer asks for history."
    assert "repeated-term" not in rules_of(lint_catalog(Catalog(tools=[refund(description=nums)])))


def test_saturation_gain_values():
    # tf (k1 + 1) / (tf + k1) with k1 = 0.9: 1.9/1.9, 3.8/2.9, 5.7/3.9, 7.6/4.9
    assert [round(saturation_gain(n), 3) for n in (1, 2, 3, 4)] == [1.0, 1.31, 1.462, 1.551]


def test_paraphrase_chain_needs_three_synonyms_close_together():
    catalog, _ = TRIGGERS["paraphrase-chain"]
    f = next(f for f in lint_catalog(catalog) if f.rule == "paraphrase-chain")
    assert f.text == "find, search, look up, locate"
    two = "Find or search for a parcel and say when it arrives. Use when asked about delivery."
    assert "paraphrase-chain" not in rules_of(lint_catalog(Catalog(tools=[track(description=two)])))
    far = ("Find a parcel by its carrier code and say when it should arrive at the door; the "
           "customer can then search the history, and later locate it. Use when asked.")
    assert "paraphrase-chain" not in rules_of(lint_catalog(Catalog(tools=[track(description=far)])))


def test_marketing_words_listed_and_whole_words_only():
    catalog, _ = TRIGGERS["marketing-words"]
    f = next(f for f in lint_catalog(catalog) if f.rule == "marketing-words")
    assert f.text == "powerful, seamless"
    ok = "Robustness checks aside, give the customer money back. Use when a refund is asked for."
    assert "marketing-words" not in rules_of(lint_catalog(Catalog(tools=[refund(description=ok)])))


def test_schema_in_prose_and_transport_texts():
    findings = lint_catalog(TRIGGERS["schema-in-prose"][0])
    f = next(f for f in findings if f.rule == "schema-in-prose")
    assert f.text == "Takes a string; returns JSON; string parameter"
    findings = lint_catalog(TRIGGERS["transport-details"][0])
    f = next(f for f in findings if f.rule == "transport-details")
    assert f.text == "POST; timeout; retries"
    # "delete" and "get" in ordinary prose are not HTTP verbs
    ok = "Get the order, then delete the hold on it. Use when a customer asks to release a hold."
    assert {"transport-details", "schema-in-prose"}.isdisjoint(
        rules_of(lint_catalog(Catalog(tools=[refund(description=ok)])))
    )


def test_near_duplicate_lists_shared_terms_once_per_pair():
    findings = [f for f in lint_catalog(TRIGGERS["near-duplicate"][0]) if f.rule == "near-duplicate"]
    assert len(findings) == 1
    f = findings[0]
    assert (f.tool_id, f.related) == ("refund_order", "refund_purchase")
    shared = f.text.rstrip("…").split(", ")
    assert {"money", "refund", "order"} <= set(shared) and len(shared) == 15  # first 15 shown
    assert "share 19 of 22 analysed terms" in f.message
    # what still differs: the name terms ("order" is in both descriptions); 19 + 1 + 2 = 22,
    # shown as the definitions spell them, not as stems (refund_ord, purchas)
    assert "only the words [refund_order] vs [purchase, refund_purchase] differ" in f.suggestion


def test_kebab_and_dotted_messages_explain_the_split():
    f = next(f for f in lint_catalog(TRIGGERS["kebab-case-name"][0]) if f.rule == "kebab-case-name")
    assert "'refund_order'" in f.suggestion and "hyphens separate words" in f.message
    f = next(f for f in lint_catalog(TRIGGERS["dotted-name"][0]) if f.rule == "dotted-name")
    assert f.text == "orders.refund" and "'orders', 'refund'" in f.message
    # '::' (as in 'Server::Tool') splits in the analyzer: not a dotted name
    plain = refund(id="Payments::Refund order", name="Payments::Refund order")
    assert {"dotted-name", "kebab-case-name"}.isdisjoint(rules_of(lint_catalog(Catalog(tools=[plain]))))


def test_kebab_case_skill_names_are_the_convention():
    skill = onboarding(id="customer-onboarding", name="customer-onboarding")
    assert lint_catalog(Catalog(skills=[skill])) == []


def test_near_duplicate_ignores_a_shared_output_schema():
    event = {"type": "object", "properties": {
        f"field_{i}": {"type": "string", "description": f"event detail number {i} of the booking"}
        for i in range(30)
    }}
    a = refund(output_schema=event)
    b = track(output_schema=event)
    assert "near-duplicate" not in rules_of(lint_catalog(Catalog(tools=[a, b, CHARGE])))


@pytest.mark.parametrize("key", ["arg1", "x", "data2", "param", "value_3", "tmp"])
def test_vague_parameter_names(key):
    schema = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key],
              "additionalProperties": False}
    findings = lint_catalog(Catalog(tools=[refund(input_schema=schema)]))
    f = next(f for f in findings if f.rule == "vague-parameter-name")
    assert f.text == key and f.path == f"input.properties.{key}"


@pytest.mark.parametrize("key", ["order_id", "data", "query", "axis", "value", "args_schema_version"])
def test_specific_parameter_names_pass(key):
    schema = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key],
              "additionalProperties": False}
    assert "vague-parameter-name" not in rules_of(lint_catalog(Catalog(tools=[refund(input_schema=schema)])))


def test_schema_rules_recurse_into_nested_and_items():
    schema = {
        "type": "object",
        "properties": {
            "lines": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"description": "untyped"},
                "kind": {"type": "integer", "enum": [1, "two"]},
            }}},
        },
        "required": ["lines"],
        "additionalProperties": False,
    }
    findings = lint_catalog(Catalog(tools=[refund(input_schema=schema)]))
    paths = {(f.rule, f.path) for f in findings}
    assert ("untyped-property", "input.properties.lines.items.properties.sku") in paths
    assert ("non-string-enum", "input.properties.lines.items.properties.kind.enum") in paths
    f = next(f for f in findings if f.rule == "non-string-enum")
    assert f.text == "[1]"
    # output schemas are checked for types, not for names (p50, x are the data's own
    # vocabulary) nor for required/additionalProperties
    out = refund(output_schema={"type": "object", "properties": {"x": {"type": "string"},
                                                                 "p50": {"type": "number"}}})
    assert rules_of(lint_catalog(Catalog(tools=[out]))) == set()
    out = refund(output_schema={"type": "object", "properties": {"x": {}}})
    assert rules_of(lint_catalog(Catalog(tools=[out]))) == {"untyped-property"}


def test_typed_by_ref_or_anyof_is_not_untyped():
    schema = {"type": "object", "properties": {"a_date": {"$ref": "#/$defs/d"},
                                               "b_num": {"anyOf": [{"type": "string"}]}},
              "required": [], "additionalProperties": False}
    assert "untyped-property" not in rules_of(lint_catalog(Catalog(tools=[refund(input_schema=schema)])))


def test_no_properties_means_no_required_findings():
    findings = lint_catalog(Catalog(tools=[refund(input_schema={})]))
    assert {"missing-required", "missing-additional-properties"}.isdisjoint(rules_of(findings))


def test_skill_description_rules_apply_to_skills():
    findings = lint_catalog(Catalog(skills=[onboarding(description="Onboarding.", tags=[])]))
    assert rules_of(findings) == {"anemic-description", "missing-use-when", "skill-without-tags"}
    assert {f.kind for f in findings} == {"skill"}


# --------------------------------------------------------------------------- query-set rules

CHARGE = Tool(
    id="charge_card", name="charge_card",
    description="Charge a customer's card for an order. Use when a customer pays for an order "
    "or a card payment must be taken for a customer order.",
    input_schema=REFUND_SCHEMA,
)


def test_unreachable_tool():
    cat = Catalog(tools=[refund(), track()])
    # "parcel" is in track_shipment; judged for refund_order, which shares no query word
    judged = [Judgment("lost parcel", {"refund_order": 1})]
    findings = lint_catalog(cat, judged)
    f = next(f for f in findings if f.rule == "unreachable-tool")
    assert f.tool_id == "refund_order" and f.text == "lost parcel"
    assert "lost" in f.suggestion and "parcel" in f.suggestion
    reached = [Judgment("money back for my order", {"refund_order": 1})]
    assert "unreachable-tool" not in rules_of(lint_catalog(cat, reached))


def test_unexercised_tool():
    cat = Catalog(tools=[refund(), track()])
    findings = lint_catalog(cat, [Judgment("money back", {"refund_order": 1})])
    assert [f.tool_id for f in findings if f.rule == "unexercised-tool"] == ["track_shipment"]
    # judged as relevant somewhere, or merely retrieved: exercised
    both = [Judgment("money back", {"refund_order": 1}), Judgment("where is my parcel", {})]
    assert "unexercised-tool" not in rules_of(lint_catalog(cat, both))
    # without a query set the query rules do not run
    assert "unexercised-tool" not in rules_of(lint_catalog(cat))


def test_shadowing_tool():
    cat = Catalog(tools=[refund(), CHARGE, track()])
    # both queries are about refunds but say "card" and "order", which charge_card repeats
    judged = [
        Judgment("card order customer refund", {"refund_order": 1}),
        Judgment("customer card payment order back", {"refund_order": 1}),
    ]
    findings = lint_catalog(cat, judged)
    f = next(f for f in findings if f.rule == "shadowing-tool")
    assert (f.tool_id, f.related) == ("charge_card", "refund_order")
    assert "in 2 judged queries" in f.message and "card" in f.suggestion
    # one query is not enough (SHADOW_MIN_QUERIES = 2)
    assert "shadowing-tool" not in rules_of(lint_catalog(cat, judged[:1]))
    # a tool relevant to the query itself does not shadow
    both = [Judgment(j.query, {"refund_order": 1, "charge_card": 1}) for j in judged]
    assert "shadowing-tool" not in rules_of(lint_catalog(cat, both))


# --------------------------------------------------------------------------- ordering, selection, exit codes


def test_findings_sorted_by_severity_then_tool():
    cat = Catalog(tools=[refund(description="", id="b_tool", name="b_tool"),
                         refund(id="a-tool", name="a-tool",
                                description="Money back. Use when asked.")])
    findings = lint_catalog(cat)
    # the error of b_tool comes first although "a-tool" sorts before it; then warnings, then
    # info, each by tool id and rule
    assert [(f.severity, f.tool_id, f.rule) for f in findings] == [
        ("error", "b_tool", "missing-description"),
        ("warning", "a-tool", "anemic-description"),
        ("info", "a-tool", "kebab-case-name"),
    ]
    assert findings == lint_catalog(cat)  # deterministic


def test_rule_selection_and_unknown_rule():
    cat = Catalog(tools=[refund(description="")])
    assert lint_catalog(cat, rules=["missing-use-when"]) == []
    with pytest.raises(lint.QueryError, match="valid rules"):
        lint_catalog(cat, rules=["no-such-rule"])


def test_exit_code_is_1_for_findings_at_or_above_fail_on():
    info = Finding("kebab-case-name", "info", "t", "", "s")
    warning = Finding("missing-use-when", "warning", "t", "", "s")
    error = Finding("missing-description", "error", "t", "", "s")
    # default fail_on="warning": info alone passes, a warning or an error fails with 1 (never 2)
    assert exit_code([]) == 0 and exit_code([info]) == 0
    assert exit_code([info, warning]) == 1 and exit_code([warning, error, info]) == 1
    assert exit_code([error]) == 1
    assert exit_code([info, warning], fail_on="error") == 0
    assert exit_code([warning, error], fail_on="error") == 1
    assert exit_code([info], fail_on="info") == 1 and exit_code([], fail_on="info") == 0
    with pytest.raises(lint.QueryError, match="valid: error, warning, info"):
        exit_code([info], fail_on="fatal")


# --------------------------------------------------------------------------- CLI


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ranklens")
    lint.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def _catalog_file(tmp_path: Path, tools: list[Tool]) -> Path:
    path = tmp_path / "cat.json"
    path.write_text(json.dumps({"tools": [t.model_dump() for t in tools]}), encoding="utf-8")
    return path


def test_cli_text_and_exit_codes(tmp_path, capsys):
    assert _cli(["lint", str(_catalog_file(tmp_path, [refund(), track()]))]) == 0
    assert "no findings" in capsys.readouterr().out
    kebab = refund(id="refund-order", name="refund-order")
    assert _cli(["lint", str(_catalog_file(tmp_path, [kebab]))]) == 0  # info only
    assert _cli(["lint", str(_catalog_file(tmp_path, [refund(description="Refunds.")]))]) == 1
    out = capsys.readouterr().out
    assert "WARNING anemic-description" in out and "fix:" in out
    # an error finding is a failed check (1), not bad input (2)
    assert _cli(["lint", str(_catalog_file(tmp_path, [refund(description="")]))]) == 1


def test_cli_fail_on_picks_the_gating_severity(tmp_path, capsys):
    warned = _catalog_file(tmp_path, [refund(description="Refunds.")])
    assert _cli(["lint", str(warned), "--fail-on", "error"]) == 0
    assert _cli(["lint", str(warned), "--fail-on", "warning"]) == 1
    errored = tmp_path / "errored.json"
    errored.write_text(json.dumps({"tools": [refund(description="").model_dump()]}))
    assert _cli(["lint", str(errored), "--fail-on", "error"]) == 1
    (tmp_path / "k").mkdir()
    kebab = _catalog_file(tmp_path / "k", [refund(id="refund-order", name="refund-order")])
    assert _cli(["lint", str(kebab)]) == 0
    assert _cli(["lint", str(kebab), "--fail-on", "info", "--json"]) == 1
    capsys.readouterr()
    assert _cli(["lint", str(warned), "--fail-on", "error", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 0 and data["fail_on"] == "error" and data["counts"]["warning"] == 2
    with pytest.raises(SystemExit) as info:
        _cli(["lint", str(warned), "--fail-on", "fatal"])
    assert info.value.code == 2
    assert "--fail-on" in capsys.readouterr().err


def test_cli_help_states_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        _cli(["lint", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0 no finding at or above the --fail-on severity" in text
    assert "2 bad input" in text and "{info,warning,error}" in text


def test_cli_json_rule_ignore_and_queries(tmp_path, capsys):
    path = _catalog_file(tmp_path, [refund(description="Refunds."), track()])
    assert _cli(["lint", str(path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert keys_sorted(data)
    assert data["exit_code"] == 1 and data["counts"]["warning"] == 2
    assert {f["rule"] for f in data["findings"]} == {"anemic-description", "missing-use-when"}
    assert set(data["findings"][0]) == {"rule", "severity", "category", "kind", "tool_id", "path",
                                        "text", "message", "suggestion", "related"}
    assert data["findings"][0]["category"] == "ranking"
    assert _cli(["lint", str(path), "--ignore", "anemic-description",
                 "--ignore", "missing-use-when"]) == 0
    capsys.readouterr()
    q = tmp_path / "q.jsonl"
    q.write_text('{"query": "lost parcel", "relevant": ["refund_order"]}\n')
    assert _cli(["lint", str(path), "--queries", str(q), "--rule", "unreachable-tool",
                 "--json"]) == 1
    assert [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]] == [
        "unreachable-tool"
    ]


def test_cli_input_errors(tmp_path, capsys):
    assert _cli(["lint", str(tmp_path / "missing.json")]) == 2
    assert "ranklens lint: error:" in capsys.readouterr().err
    path = _catalog_file(tmp_path, [refund()])
    assert _cli(["lint", str(path), "--rule", "nope"]) == 2
    assert "valid rules" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        _cli(["lint", "--list-rules"])
    assert info.value.code == 0
    assert "missing-use-when" in capsys.readouterr().out


def test_cli_refuses_an_empty_catalog(tmp_path, capsys):
    assert _cli(["lint", str(_catalog_file(tmp_path, []))]) == 2
    assert "cat.json has no tools or skills" in capsys.readouterr().err
    assert lint_catalog(Catalog()) == []  # the library still accepts one


def test_unknown_rule_message_is_singular_for_one_rule():
    with pytest.raises(lint.QueryError, match="unknown lint rule nope;"):
        lint_catalog(Catalog(), rules=["nope"])
    with pytest.raises(lint.QueryError, match="unknown lint rules a, b;"):
        lint_catalog(Catalog(), rules=["a", "b"])
