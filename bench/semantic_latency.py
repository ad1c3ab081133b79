"""Semantic and hybrid search latency through the catalog facade, on a synthetic 10k-tool catalog.

Measures, with the real embedding model (default: the bundled all-MiniLM-L6-v2):

- cold embed: `ToolCatalog(tools, method="hybrid")` with an empty cache
  (model load + embedding every projection text);
- warm reopen: the same construction in a fresh process with the cache warm
  (nothing is embedded; reports whether torch was imported);
- query latency: median and p95 of `search_async` for semantic and hybrid
  (query embedding + cosine + BM25 arm + RRF fusion), over distinct queries
  so the query cache never hits, and BM25 alone for reference.

Targets (issue 3): warm reopen under 2 s; hybrid query under 25 ms median.

    python bench/semantic_latency.py            # 10,000 tools
    python bench/semantic_latency.py --n 1000   # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from synthetic import make_queries, make_tools  # noqa: E402

from core.search import ToolCatalog  # noqa: E402


def reopen(n: int, cache_dir: str, model: str | None) -> dict:
    """Warm reopen, run in a fresh process."""
    tools = make_tools(n)
    embedded = [0]

    def progress(done: int, total: int) -> None:  # called only when texts miss the cache
        embedded[0] = max(embedded[0], done)

    t = time.perf_counter()
    cat = ToolCatalog(tools, method="hybrid", model=model, cache_dir=cache_dir, progress=progress)
    seconds = time.perf_counter() - t
    return {
        "warm_reopen_s": seconds,
        "texts_embedded": embedded[0],
        "model_loaded": bool(getattr(cat.embedder, "loaded", False)),
        "torch_imported": "torch" in sys.modules,
    }


def _lat(fn, queries: list[str]) -> tuple[float, float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return statistics.median(out), out[int(0.95 * (len(out) - 1))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--model", default=None, help="embedding model spec (default: the bundled MiniLM)")
    ap.add_argument("--cache-dir", default=None, help="reuse this cache folder (default: a fresh temp folder)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reopen", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.reopen:
        print(json.dumps(reopen(args.n, args.cache_dir, args.model)))
        return 0

    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="ranklens-bench-")
    results: dict = {"n": args.n, "queries": args.queries}
    try:
        tools = make_tools(args.n)
        queries = make_queries(args.queries + 10, seed=5)
        t = time.perf_counter()
        cat = ToolCatalog(tools, method="hybrid", model=args.model, cache_dir=cache_dir)
        results["cold_build_s"] = time.perf_counter() - t
        results["model"] = cat.embedder.spec.describe() if cat.embedder else None
        cmd = [sys.executable, __file__, "--reopen", "--n", str(args.n), "--cache-dir", cache_dir]
        if args.model:
            cmd += ["--model", args.model]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results.update(json.loads(proc.stdout.strip().splitlines()[-1]))

        for q in queries[:10]:  # warm-up: model, BLAS, caches
            asyncio.run(cat.search_async(q, 10, method="hybrid"))
        timed = queries[10:]
        for method in ("bm25", "semantic", "hybrid"):
            med, p95 = _lat(lambda q, m=method: asyncio.run(cat.search_async(q, 10, method=m)), timed)
            results[f"{method}_median_ms"], results[f"{method}_p95_ms"] = med, p95
            # distinct queries only: the query-vector LRU must not hide the embedding cost
            cat.embedding_cache.queries.clear()
    finally:
        if not args.cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)

    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"\nSemantic / hybrid latency, {args.n:,} synthetic tools, {args.queries} distinct queries, top 10")
    print(f"model: {results['model']}")
    print(f"cold build (load model + embed all):  {results['cold_build_s']:.1f} s")
    print(
        f"warm reopen (fresh process):          {results['warm_reopen_s']:.2f} s  "
        f"(texts embedded {results['texts_embedded']}, model loaded {results['model_loaded']}, "
        f"torch imported {results['torch_imported']})   target < 2 s"
    )
    for method in ("bm25", "semantic", "hybrid"):
        target = "   target < 25 ms" if method == "hybrid" else ""
        print(f"{method:<9} query median {results[f'{method}_median_ms']:6.2f} ms   p95 {results[f'{method}_p95_ms']:6.2f} ms{target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
