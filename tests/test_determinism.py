"""Same catalog and query, same bytes (issue 8).

``ranklens search --json``, ``explain --json`` and ``eval --json`` must print
byte-identical output across processes, PYTHONHASHSEED values (0, 1, random)
and load orders of the same set of tools (shuffled copies of a sample catalog
written to files of the same name), for BM25 and for semantic and hybrid
search with the deterministic ``hashing`` model, with a cold or a warm
embedding cache; and ``eval --jobs N`` must print what ``--jobs 1`` prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.catalog import load_catalog
from core.cli import main
from core.embedding import HashingEmbedder
from core.evaluation import load_queries, run_queries, run_queries_parallel
from core.search import ToolCatalog

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_catalogs"
HASHING = ["--model", "hashing:64"]

# One driver process runs every command through core.cli.main and prints each
# command's exit code and stdout, so nine processes cover seeds x load orders.
DRIVER = """
import contextlib, io, json, sys
from core.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    results.append([argv, code, out.getvalue()])
sys.stdout.write(json.dumps(results, ensure_ascii=False))
"""


def shuffled_copy(data, order: str):
    """The same tools (and servers) in another order: ``original``, ``reversed`` or ``shuffled``."""
    def arrange(items: list) -> list:
        if order == "reversed":
            return items[::-1]
        if order == "shuffled":
            items = list(items)
            random.Random(7).shuffle(items)
        return items

    if isinstance(data, list):
        return arrange(data)
    data = dict(data)
    if "tools" in data:
        data["tools"] = arrange(data["tools"])
    if "servers" in data:
        servers = {name: {**server, "tools": arrange(server.get("tools", []))}
                   for name, server in data["servers"].items()}
        data["servers"] = {name: servers[name] for name in arrange(list(servers))}
    return data


def write_orders(tmp_path: Path, sample: str) -> dict[str, Path]:
    """A folder per load order, each holding ``catalog.json`` and ``queries.jsonl``."""
    data = json.loads((SAMPLES / f"{sample}.json").read_text(encoding="utf-8"))
    folders = {}
    for order in ("original", "reversed", "shuffled"):
        folder = tmp_path / sample / order
        folder.mkdir(parents=True)
        (folder / "catalog.json").write_text(json.dumps(shuffled_copy(data, order), indent=1), encoding="utf-8")
        (folder / "queries.jsonl").write_bytes((SAMPLES / f"{sample}.queries.jsonl").read_bytes())
        folders[order] = folder
    ids = [{t.id for t in load_catalog(f / "catalog.json").tools} for f in folders.values()]
    orders = [[t.id for t in load_catalog(f / "catalog.json").tools] for f in folders.values()]
    assert ids[0] == ids[1] == ids[2] and orders[0] != orders[1] != orders[2]
    return folders


def commands(queries: list[str], tool_ids: list[str]) -> list[list[str]]:
    out = []
    for query in queries:
        out.append(["search", "catalog.json", query, "--json", "--top-k", "20"])
        for method in ("semantic", "hybrid"):
            out.append(["search", "catalog.json", query, "--json", "--method", method, *HASHING])
        for tool_id in tool_ids:
            out.append(["explain", "catalog.json", query, tool_id, "--json"])
    out.append(["eval", "catalog.json", "queries.jsonl", "--json", "--worst", "50"])
    out.append(["eval", "catalog.json", "queries.jsonl", "--json", "--method", "hybrid", *HASHING])
    return out


@pytest.mark.parametrize("sample", ["support_billing", "mcp_workspace"])
def test_json_output_is_byte_identical_across_processes_seeds_and_load_orders(tmp_path, sample) -> None:
    folders = write_orders(tmp_path, sample)
    judgments = load_queries(folders["original"] / "queries.jsonl")
    tools = load_catalog(folders["original"] / "catalog.json").tools
    queries = [judgments[0].query, "the refund of a 🚀 北京 \u202e charge"]
    argv = commands(queries, [tools[-1].id])
    cache = tmp_path / "cache"  # shared: the first processes embed (cold), later ones read (warm)
    runs = []
    for seed in ("0", "1", "random"):
        for order, folder in folders.items():
            env = {**os.environ, "PYTHONHASHSEED": seed, "RANKLENS_CACHE_DIR": str(cache),
                   "PYTHONPATH": str(ROOT)}
            proc = subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(argv)], cwd=folder, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            runs.append((seed, order, proc))
    outputs = {}
    for seed, order, proc in runs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr.decode()
        outputs[(seed, order)] = stdout
    reference = outputs[("0", "original")]
    for key, stdout in outputs.items():
        assert stdout == reference, f"{key} differs from seed 0, original order"
    results = json.loads(reference)
    assert all(code == 0 for _, code, _ in results)
    first = json.loads(results[0][2])
    assert first["hits"] and first["query"] == queries[0]
    assert json.loads(results[-1][2])["config"]["method"] == "hybrid"


def test_the_console_script_prints_what_main_prints(tmp_path, capsys) -> None:
    # The driver above calls core.cli.main; the installed entry point must print the same bytes.
    catalog = SAMPLES / "support_billing.json"
    argv = ["search", str(catalog), "I was charged twice", "--json"]
    assert main(argv) == 0
    in_process = capsys.readouterr().out.encode("utf-8")
    for seed in ("1", "random"):
        proc = subprocess.run([sys.executable, "-m", "core.cli", *argv], cwd=ROOT, capture_output=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        assert proc.stdout == in_process


# --------------------------------------------------------------------------- eval --jobs

@pytest.mark.parametrize("method", [[], ["--method", "hybrid", *HASHING]], ids=["bm25", "hybrid"])
def test_eval_jobs_prints_exactly_what_one_job_prints(tmp_path, monkeypatch, capsys, method) -> None:
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "cache"))
    catalog, queries = SAMPLES / "mcp_workspace.json", SAMPLES / "mcp_workspace.queries.jsonl"
    outputs = []
    for jobs in ("1", "2", "3"):
        run_out = tmp_path / f"run{jobs}.json"
        assert main(["eval", str(catalog), str(queries), "--json", "--worst", "100", "--jobs", jobs,
                     "--run-out", str(run_out), *method]) == 0
        outputs.append((capsys.readouterr().out, run_out.read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2]


def test_run_queries_parallel_equals_run_queries_and_checks_jobs(tmp_path) -> None:
    path = SAMPLES / "support_billing.json"
    judgments = load_queries(SAMPLES / "support_billing.queries.jsonl")
    serial = run_queries(ToolCatalog(load_catalog(path).tools), judgments, 10)
    assert run_queries_parallel(path, judgments, 10, jobs=2) == serial
    assert list(run_queries_parallel(path, judgments[:1], 10, jobs=4)) == [judgments[0].query]
    assert main(["eval", str(path), str(SAMPLES / "support_billing.queries.jsonl"), "--jobs", "0"]) == 2


# --------------------------------------------------------------------------- dense scores and row order

class DenseFake(HashingEmbedder):
    """Dense deterministic vectors: their dot products round differently with BLAS row position."""

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(self.dimension)
        return (vector / np.linalg.norm(vector)).astype(np.float32)


def test_dense_scores_do_not_depend_on_registration_order() -> None:
    # 33 rows of 384 dimensions: row positions that fall in a BLAS kernel's remainder
    # were scored differently in the last bit before the matrix was kept in id order.
    tools = load_catalog(SAMPLES / "support_billing.json").tools[:33]
    rnd = random.Random(3)
    rankings = []
    for _ in range(4):
        order = list(tools)
        rnd.shuffle(order)
        catalog = ToolCatalog(order, method="hybrid", model=DenseFake(384), persistent_cache=False)
        rankings.append([catalog.search_with(q, 33, m) for q in ("refund a charge", "cancel my plan")
                         for m in ("semantic", "hybrid")])
    assert all(r == rankings[0] for r in rankings)
