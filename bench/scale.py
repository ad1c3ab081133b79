"""Scale: a 100k-tool catalog and a 10k-query evaluation (issue 8).

Each measurement runs in its own subprocess, so its peak memory (ru_maxrss)
is its own:

- ``bm25``: build a `ToolCatalog` over N synthetic tools (bench/synthetic.py,
  built in memory: `load_catalog` refuses files over 20 MiB, and 100k tools
  are about 100 MB of JSON); BM25 query median and p95 at top_k 10; the
  latency of registering one edited tool (then searching) on the built index;
  peak RSS (the tools in memory included) and RSS before indexing.
- ``dense-cold`` / ``dense-warm``: the embedding cache machinery at N tools,
  with `HashingEmbedder(384)` standing in for the model (384-d like
  all-MiniLM-L6-v2). Embedding 100k texts with the real model takes about
  20 minutes on 2 cores, so the figures are the cache's own: a cold build
  (hash-embed everything, write the cache file), then, in a fresh process, a
  warm reopen (read and verify the file, embed nothing) and a semantic query.
  They are not model timings.
- ``eval``: ``ranklens eval --json`` of Q judged queries on an M-tool catalog
  file, end to end (process start, load, index, rank, metrics), with
  ``--jobs 1`` and ``--jobs 2``; the two outputs must be identical.

The machine load (``os.getloadavg``) is printed before and after: the
figures are wall-clock times and move with whatever else runs.

Usage: python bench/scale.py [--tools 100000] [--eval-tools 10000] [--eval-queries 10000]
                             [--only bm25,dense,eval] [--json]
Targets (issue 8): BM25 query median < 10 ms at 100k tools, peak memory < 2 GB,
eval of 10k queries on 10k tools < 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

TARGET_QUERY_MS = 10.0
TARGET_PEAK_MB = 2048.0
TARGET_EVAL_S = 60.0
DENSE_DIMENSION = 384


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[int(0.95 * (len(values) - 1))]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} CPUs"


# --------------------------------------------------------------------------- workers


def worker_bm25(n: int, n_queries: int) -> dict:
    from synthetic import make_queries, make_tools

    from core.search import ToolCatalog

    tools = make_tools(n)
    queries = make_queries(n_queries)
    edited = [t.model_copy(update={"description": t.description + " Edited for the benchmark."})
              for t in random.Random(5).sample(tools, 50)]
    rss_before = _rss_mb()
    started = time.perf_counter()
    catalog = ToolCatalog(tools)
    build_s = time.perf_counter() - started
    for q in queries[:20]:  # warm-up
        catalog.search(q, 10)
    latencies = []
    for q in queries:
        t = time.perf_counter()
        catalog.search(q, 10)
        latencies.append((time.perf_counter() - t) * 1000)
    registers = []
    for tool in edited:
        t = time.perf_counter()
        assert catalog.register(tool) == [tool.id]
        catalog.search(queries[0], 10)
        registers.append((time.perf_counter() - t) * 1000)
    query_median, query_p95 = _percentiles(latencies)
    register_median, register_p95 = _percentiles(registers)
    return {"tools": n, "build_s": build_s, "query_median_ms": query_median, "query_p95_ms": query_p95,
            "register_median_ms": register_median, "register_p95_ms": register_p95,
            "rss_before_mb": rss_before, "peak_rss_mb": _rss_mb()}


def worker_dense(n: int, cache_dir: str, phase: str, n_queries: int) -> dict:
    import warnings

    from synthetic import make_queries, make_tools

    from core.embedding import EmbeddingCache, HashingEmbedder
    from core.search import ToolCatalog

    tools = make_tools(n)
    model = HashingEmbedder(DENSE_DIMENSION)
    rss_before = _rss_mb()
    cache_open_s = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a rebuilt or memory-only cache would invalidate the figures
        if phase == "warm":  # the cache file alone: read, verify the checksum, index the keys
            started = time.perf_counter()
            EmbeddingCache.for_embedder(model, cache_dir=cache_dir)
            cache_open_s = time.perf_counter() - started
        started = time.perf_counter()
        catalog = ToolCatalog(tools, method="semantic", model=model, cache_dir=cache_dir)
        open_s = time.perf_counter() - started
    out = {"tools": n, "phase": phase, "open_s": open_s, "cache_open_s": cache_open_s,
           "texts_embedded": model.texts_embedded,
           "cache_file_mb": catalog.embedding_cache.path.stat().st_size / 2**20,
           "rss_before_mb": rss_before}
    if phase == "warm":
        latencies = []
        for q in make_queries(n_queries):
            t = time.perf_counter()
            catalog.search_with(q, 10, "semantic")
            latencies.append((time.perf_counter() - t) * 1000)
        out["semantic_query_median_ms"], out["semantic_query_p95_ms"] = _percentiles(latencies)
    out["peak_rss_mb"] = _rss_mb()
    return out


def _run_worker(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"worker {args} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- eval


def write_eval_files(folder: Path, n_tools: int, n_queries: int) -> tuple[Path, Path]:
    """A catalog file of synthetic tools and a judged query set: one query per target tool,
    from words of its name and description (so the metrics mean something)."""
    from synthetic import FILLER, make_tools

    from core.catalog import Catalog

    tools = make_tools(n_tools, seed=11)
    catalog_path = folder / "catalog.json"
    Catalog(tools=tools).save(catalog_path)
    rnd = random.Random(12)
    seen: set[str] = set()
    lines = []
    while len(lines) < n_queries:
        tool = rnd.choice(tools)
        words = tool.description.replace(".", " ").replace(",", " ").split()
        query = " ".join([*tool.name.replace("_", " ").split(), *rnd.sample(words, min(len(words), 4)),
                          rnd.choice(FILLER)])
        if query not in seen:
            seen.add(query)
            lines.append(json.dumps({"query": query, "relevant": [tool.id]}))
    queries_path = folder / "queries.jsonl"
    queries_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return catalog_path, queries_path


def measure_eval(n_tools: int, n_queries: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ranklens-scale-") as tmp:
        catalog_path, queries_path = write_eval_files(Path(tmp), n_tools, n_queries)
        out: dict = {"tools": n_tools, "queries": n_queries,
                     "catalog_file_mb": catalog_path.stat().st_size / 2**20}
        outputs = {}
        for jobs in (1, 2):
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "core.cli", "eval", str(catalog_path), str(queries_path), "--json",
                 "--jobs", str(jobs)],
                capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            elapsed = time.perf_counter() - started
            if proc.returncode:
                raise RuntimeError(f"ranklens eval --jobs {jobs} failed:\n{proc.stderr.decode()}")
            out[f"jobs{jobs}_s"] = elapsed
            outputs[jobs] = proc.stdout
        out["identical"] = outputs[1] == outputs[2]
        metrics = json.loads(outputs[1])["metrics"]
        out["hit@1"], out["ndcg@10"] = metrics["hit@1"], metrics["ndcg@10"]
    return out


# --------------------------------------------------------------------------- report


def _verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def report(results: dict) -> None:
    print(f"\nRanklens scale benchmark (bench/scale.py); load average at start {results['load_start']}, "
          f"at end {results['load_end']}\n")
    if "bm25" in results:
        r = results["bm25"]
        print(f"BM25, {r['tools']:,} synthetic tools (built in memory), top_k 10, {results['n_queries']} queries")
        print(f"  build                {r['build_s']:8.2f} s")
        print(f"  query median / p95   {r['query_median_ms']:8.2f} / {r['query_p95_ms']:.2f} ms   "
              f"{_verdict(r['query_median_ms'] < TARGET_QUERY_MS)} (< {TARGET_QUERY_MS:g} ms)")
        print(f"  register one edit    {r['register_median_ms']:8.2f} / {r['register_p95_ms']:.2f} ms "
              "(median / p95, register + one search)")
        print(f"  peak RSS             {r['peak_rss_mb']:8.0f} MB   {_verdict(r['peak_rss_mb'] < TARGET_PEAK_MB)} "
              f"(< {TARGET_PEAK_MB:g} MB; {r['rss_before_mb']:.0f} MB before indexing: Python, "
              "numpy and the Tool objects)")
    if "dense_cold" in results:
        cold, warm = results["dense_cold"], results["dense_warm"]
        print(f"\nEmbedding cache at {cold['tools']:,} tools, HashingEmbedder({DENSE_DIMENSION}) standing "
              "in for the model (NOT model timings: the real model needs ~20 min to embed 100k texts on 2 cores)")
        print(f"  cold build           {cold['open_s']:8.2f} s   ({cold['texts_embedded']:,} texts hash-embedded, "
              f"cache file {cold['cache_file_mb']:.0f} MB written)")
        print(f"  warm cache file open {warm['cache_open_s']:8.2f} s   (read, checksum verified, keys indexed)")
        print(f"  warm catalog reopen  {warm['open_s']:8.2f} s   ({warm['texts_embedded']:,} texts embedded; "
              "projection, cache lookup and the BM25 index included)")
        print(f"  semantic query       {warm['semantic_query_median_ms']:8.2f} / "
              f"{warm['semantic_query_p95_ms']:.2f} ms (median / p95: hashing query vector, "
              f"{warm['tools']:,} x {DENSE_DIMENSION} cosine)")
        print(f"  peak RSS cold / warm {cold['peak_rss_mb']:8.0f} / {warm['peak_rss_mb']:.0f} MB   "
              f"{_verdict(max(cold['peak_rss_mb'], warm['peak_rss_mb']) < TARGET_PEAK_MB)}")
    if "eval" in results:
        r = results["eval"]
        print(f"\nranklens eval --json, {r['queries']:,} queries on {r['tools']:,} tools "
              f"({r['catalog_file_mb']:.1f} MB catalog file), end to end")
        print(f"  --jobs 1             {r['jobs1_s']:8.2f} s   {_verdict(r['jobs1_s'] < TARGET_EVAL_S)} "
              f"(< {TARGET_EVAL_S:g} s)")
        print(f"  --jobs 2             {r['jobs2_s']:8.2f} s   {_verdict(r['jobs2_s'] < TARGET_EVAL_S)}; "
              f"speed-up {r['jobs1_s'] / r['jobs2_s']:.2f}x; outputs identical: {r['identical']}")
        print(f"  (hit@1 {r['hit@1']:.3f}, ndcg@10 {r['ndcg@10']:.3f} on the generated judgments)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", type=int, default=100_000, help="catalog size for bm25 and dense (default 100000)")
    ap.add_argument("--queries", type=int, default=300, help="timed queries (default 300)")
    ap.add_argument("--eval-tools", type=int, default=10_000)
    ap.add_argument("--eval-queries", type=int, default=10_000)
    ap.add_argument("--only", default="bm25,dense,eval", help="comma-separated parts to run")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        kind, *rest = args.worker
        if kind == "bm25":
            out = worker_bm25(int(rest[0]), int(rest[1]))
        else:
            out = worker_dense(int(rest[0]), rest[1], rest[2], int(rest[3]))
        print(json.dumps(out))
        return 0

    parts = set(args.only.split(","))
    unknown = parts - {"bm25", "dense", "eval"}
    if unknown:
        ap.error(f"unknown parts {', '.join(sorted(unknown))}; valid: bm25, dense, eval")
    results: dict = {"load_start": _load(), "n_queries": args.queries}
    if "bm25" in parts:
        print(f"  bm25 at {args.tools:,} tools ...", file=sys.stderr)
        results["bm25"] = _run_worker("bm25", str(args.tools), str(args.queries))
    if "dense" in parts:
        with tempfile.TemporaryDirectory(prefix="ranklens-scale-cache-") as cache_dir:
            for phase in ("cold", "warm"):
                print(f"  embedding cache, {phase}, at {args.tools:,} tools ...", file=sys.stderr)
                results[f"dense_{phase}"] = _run_worker("dense", str(args.tools), cache_dir, phase,
                                                        str(args.queries))
    if "eval" in parts:
        print(f"  eval of {args.eval_queries:,} queries on {args.eval_tools:,} tools ...", file=sys.stderr)
        results["eval"] = measure_eval(args.eval_tools, args.eval_queries)
    results["load_end"] = _load()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
