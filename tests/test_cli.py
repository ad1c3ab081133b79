"""The command line: search, explain, run; JSON is stable; errors exit 2 without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.cli import main
from tests.conftest import ROOT

TOOLS = {"tools": [
    {"name": "search_files", "description": "Search files by name in a folder."},
    {"name": "send_email", "description": "Send an email message."},
    {"name": "read_file", "description": "Read a file's contents."},
]}


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "catalog.json"
    path.write_text(json.dumps(TOOLS))
    return path


def test_search_json_is_stable_and_complete(catalog_path, capsys):
    assert main(["search", str(catalog_path), "find files", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "bm25" and out["profile"] == "ratel-0.12"
    # "file's" stems to "file": read_file has tf 2 in a shorter text.
    assert [h["id"] for h in out["hits"]] == ["read_file", "search_files"]
    assert out["hits"][0]["rank"] == 0


def test_search_table_and_no_result_reason(catalog_path, capsys):
    assert main(["search", str(catalog_path), "find files"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("#") and "search_files" in out
    assert main(["search", str(catalog_path), "the"]) == 0
    assert "No results" in capsys.readouterr().out


def test_explain_prints_terms_and_json(catalog_path, capsys):
    assert main(["explain", str(catalog_path), "the files", "read_file"]) == 0
    out = capsys.readouterr().out
    assert "contribution" in out and "dropped as stop words: the" in out
    assert main(["explain", str(catalog_path), "files", "read_file", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["terms"][0]["term"] == "file" and data["terms"][0]["fields"] == ["name.split", "description"]


def test_run_writes_a_run_file(catalog_path, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "send mail", "relevant": ["send_email"]}\n{"query": "read a file"}\n')
    out = tmp_path / "run.json"
    assert main(["run", str(catalog_path), str(queries), "--out", str(out)]) == 0
    run = json.loads(out.read_text())
    assert run["send mail"][0][0] == "send_email"
    assert set(run) == {"send mail", "read a file"}


def test_bad_input_exits_2_with_a_message(catalog_path, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["search", str(bad), "x"]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "Traceback" not in err
    assert main(["explain", str(catalog_path), "x", "no_such_tool"]) == 2
    assert "no_such_tool" in capsys.readouterr().err


def test_explain_an_unknown_id_suggests_the_closest_and_the_fix(catalog_path, capsys):
    assert main(["explain", str(catalog_path), "x", "send_emial"]) == 2
    err = capsys.readouterr().err
    assert "no tool 'send_emial' is registered (did you mean 'send_email'?)" in err
    assert "`ranklens search CATALOG QUERY`" in err and "catalog file" in err


def test_explain_lists_each_stop_word_once_and_absent_words_as_typed(catalog_path, capsys):
    assert main(["explain", str(catalog_path), "in that the financial is in the final files",
                 "read_file"]) == 0
    out = capsys.readouterr().out
    assert "dropped as stop words: in, that, the, is\n" in out
    assert "in no tool of the catalog: financial (→ financi), final\n" in out


def test_top_k_zero_and_negative(catalog_path, capsys):
    assert main(["search", str(catalog_path), "files", "--top-k", "0"]) == 0
    assert capsys.readouterr().out == "No results: top-k is 0: nothing asked for.\n"
    assert main(["search", str(catalog_path), "files", "--top-k", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reason"] == "top-k is 0: nothing asked for"
    with pytest.raises(SystemExit) as info:
        main(["search", str(catalog_path), "files", "--top-k", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "ranklens search: error: --top-k must be >= 0" in err
    assert err.startswith("usage: ranklens search ")  # the subcommand's usage, not the top level


@pytest.mark.parametrize("content", ["[]", '{"tools": [], "skills": []}'])
def test_an_empty_catalog_is_refused(tmp_path, capsys, content):
    empty = tmp_path / "empty.json"
    empty.write_text(content)
    for argv in (["search", str(empty), "files"], ["explain", str(empty), "files", "x"],
                 ["run", str(empty), str(empty)]):
        assert main(argv) == 2
        assert f"{empty} has no tools or skills" in capsys.readouterr().err


def test_compare_help_prints_one_percent_sign(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "95% interval" in out and "%%" not in out


def test_output_is_byte_identical_across_hash_seeds(catalog_path):
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "core.cli", "search", str(catalog_path), "files email message", "--json"],
            capture_output=True, env=env, cwd=ROOT, check=True,
        )
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_floor_option_returns_nothing_with_a_reason_and_rejects_bad_syntax(catalog_path, capsys):
    assert main(["search", str(catalog_path), "files", "--floor", "bm25=99", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hits"] == [] and "relevance floor 99" in out["reason"]
    assert main(["search", str(catalog_path), "files", "--floor", "bm25"]) == 2
    assert "ARM=NUMBER" in capsys.readouterr().err


def test_missing_reranker_folder_exits_2_naming_it(catalog_path, capsys):
    assert main(["search", str(catalog_path), "files", "--reranker", "/no/such/folder"]) == 2
    assert "/no/such/folder" in capsys.readouterr().err
