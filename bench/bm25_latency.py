"""BM25 latency and memory: ranklens against ratel-ai 0.12.0, rank_bm25 and bm25s, in one run.

For synthetic catalogs of 1k, 10k and 100k tools (bench/synthetic.py) each
engine runs in its own subprocess (so peak memory is its own) and reports:

- build: index construction (ratel-ai: register + first search, since it
  builds its index on the first search);
- register: adding one edited tool to a built index, then searching
  (ratel-ai rebuilds its whole index on the first search after a register);
- query median / p95 at top_k 10 over the same queries;
- peak RSS of the process (tools in memory included) and RSS before indexing.

Usage: python bench/bm25_latency.py [--sizes 1000,10000,100000] [--queries 300] [--json]
Targets (issue 2): at 10k, query median <= 0.5x ratel-ai's, build <= 1.5x
ratel-ai's register + first search, one-tool register < 10 ms; at 100k,
median query < 10 ms and peak memory < 2 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

ENGINES = ("ranklens", "ratel-ai", "bm25s", "rank_bm25")
RANK_BM25_MAX = 10_000  # pure-Python scoring: every query walks every document


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed_queries(search, queries: list[str]) -> tuple[float, float]:
    for q in queries[:10]:  # warm-up
        search(q)
    lat = []
    for q in queries:
        t = time.perf_counter()
        search(q)
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    return statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]


def worker(engine: str, n: int, n_queries: int) -> dict:
    """Measure one engine on one catalog size; runs in a fresh process."""
    import asyncio

    from synthetic import make_queries, make_tools

    tools = make_tools(n)
    queries = make_queries(n_queries)
    edited = [t.model_copy(update={"description": t.description + " Edited for the benchmark."}) for t in tools[:20]]
    rss_before = _rss_mb()
    out: dict = {"engine": engine, "n": n}

    if engine == "ranklens":
        from core.search import ToolCatalog

        t = time.perf_counter()
        cat = ToolCatalog(tools)
        out["build_ms"] = (time.perf_counter() - t) * 1000
        regs = []
        for tool in edited:
            t = time.perf_counter()
            cat.register(tool)
            cat.search(queries[0], 10)
            regs.append((time.perf_counter() - t) * 1000)
        out["register_ms"] = statistics.median(regs)
        out["query_median_ms"], out["query_p95_ms"] = _timed_queries(lambda q: cat.search(q, 10), queries)

    elif engine == "ratel-ai":
        from ratel_ai import Tool as RTool
        from ratel_ai import ToolRegistry

        rtools = [RTool(x.id, x.name, x.description, x.input_schema, x.output_schema) for x in tools]
        t = time.perf_counter()
        reg = ToolRegistry()
        asyncio.run(reg.register(rtools))
        reg.search(queries[0], 10)
        out["build_ms"] = (time.perf_counter() - t) * 1000
        regs = []
        for tool in edited:
            t = time.perf_counter()
            asyncio.run(reg.register(RTool(tool.id, tool.name, tool.description, tool.input_schema, tool.output_schema)))
            reg.search(queries[0], 10)
            regs.append((time.perf_counter() - t) * 1000)
        out["register_ms"] = statistics.median(regs)
        out["query_median_ms"], out["query_p95_ms"] = _timed_queries(lambda q: reg.search(q, 10), queries)

    elif engine in ("bm25s", "rank_bm25"):
        from core.analysis import DEFAULT_ANALYZER
        from core.projection import project_tool

        corpus = [DEFAULT_ANALYZER.analyze(project_tool(x)) for x in tools]
        analyze = DEFAULT_ANALYZER.analyze
        if engine == "bm25s":
            import bm25s
            import numpy as np

            t = time.perf_counter()
            retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
            retriever.index(corpus, show_progress=False)
            out["build_ms"] = (time.perf_counter() - t) * 1000
            vocab = retriever.vocab_dict

            def search(q: str):
                ids = [vocab[w] for w in analyze(q) if w in vocab]
                if not ids:
                    return []
                scores = retriever.get_scores(ids)
                return np.argpartition(-scores, 10)[:10]
        else:
            import numpy as np
            from rank_bm25 import BM25Okapi

            t = time.perf_counter()
            retriever = BM25Okapi(corpus, k1=0.9, b=0.4)
            out["build_ms"] = (time.perf_counter() - t) * 1000

            def search(q: str):
                scores = retriever.get_scores(analyze(q))
                return np.argpartition(-scores, 10)[:10]

        out["register_ms"] = None  # no incremental update: a change means a rebuild
        out["query_median_ms"], out["query_p95_ms"] = _timed_queries(search, queries)
    else:
        raise ValueError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")

    out["rss_before_mb"] = rss_before
    out["peak_rss_mb"] = _rss_mb()
    return out


def run_worker(engine: str, n: int, n_queries: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", engine, "--n", str(n), "--queries", str(n_queries)],
        capture_output=True, text=True,
    )
    if proc.returncode:
        return {"engine": engine, "n": n, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(v, unit="") -> str:
    return "-" if v is None else f"{v:,.2f}{unit}" if isinstance(v, float) else str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.queries)))
        return 0

    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        for engine in args.engines.split(","):
            if engine == "rank_bm25" and n > RANK_BM25_MAX:
                results.append({"engine": engine, "n": n, "skipped": f"pure-Python scoring; too slow above {RANK_BM25_MAX:,} tools"})
                continue
            r = run_worker(engine, n, args.queries)
            results.append(r)
            if not args.json:
                print(f"  measured {engine} at {n:,} tools", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0

    print(f"\nBM25 latency, top_k 10, {args.queries} queries, synthetic catalogs (bench/synthetic.py)\n")
    header = f"{'tools':>8} {'engine':<10} {'build ms':>10} {'register ms':>12} {'q median ms':>12} {'q p95 ms':>9} {'peak RSS MB':>12} {'RSS before':>11}"
    print(header)
    print("-" * len(header))
    for r in results:
        if "skipped" in r or "error" in r:
            print(f"{r['n']:>8,} {r['engine']:<10} {r.get('skipped') or r.get('error')}")
            continue
        print(
            f"{r['n']:>8,} {r['engine']:<10} {_fmt(r['build_ms']):>10} {_fmt(r['register_ms']):>12} "
            f"{_fmt(r['query_median_ms']):>12} {_fmt(r['query_p95_ms']):>9} {_fmt(r['peak_rss_mb']):>12} {_fmt(r['rss_before_mb']):>11}"
        )
    print("\nRatios ranklens / ratel-ai (lower is better):")
    by = {(r["engine"], r["n"]): r for r in results if "build_ms" in r}
    for n in sorted({r["n"] for r in results}):
        a, b = by.get(("ranklens", n)), by.get(("ratel-ai", n))
        if a and b:
            print(
                f"  {n:>7,} tools: query median {a['query_median_ms'] / b['query_median_ms']:.2f}x, "
                f"build {a['build_ms'] / b['build_ms']:.2f}x, register+search {a['register_ms'] / b['register_ms']:.3f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
