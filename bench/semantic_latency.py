"""Semantic search latency on a synthetic 10k-tool corpus.

Measures, with the real embedding model (default: the bundled all-MiniLM-L6-v2):

- cold embed: model load + embedding every tool text into an empty cache;
- warm reopen: a fresh process that resolves the model, opens the cache file
  and gets every vector back without embedding anything (and says whether it
  imported torch);
- query latency: median query embedding, cosine top-10 over all vectors,
  their sum, the same with the query LRU warm, and an RRF fusion of two
  100-deep runs (the fusion step of hybrid search).

Targets (issue 3): warm reopen under 2 s; hybrid query under 25 ms median.

    python bench/semantic_latency.py            # 10,000 tools
    python bench/semantic_latency.py --n 1000   # quicker
    python bench/semantic_latency.py --json

The corpus and queries are generated from a fixed seed. Until the hybrid
catalog exists this measures the semantic machinery directly (core.embedding,
core.fusion); the BM25 arm is not included in the hybrid figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.embedding import (
    EmbeddingCache,
    QueryCache,
    embed_with_cache,
    make_embedder,
    rank_by_cosine,
)
from core.fusion import reciprocal_rank_fusion

VERBS = ["get", "list", "create", "update", "delete", "search", "send", "archive", "export", "sync",
         "validate", "summarize", "translate", "schedule", "cancel", "approve", "merge", "upload"]  # fmt: skip
OBJECTS = ["email", "calendar event", "invoice", "customer record", "file", "pull request", "ticket",
           "payment", "weather forecast", "stock quote", "database row", "slack message", "document",
           "meeting", "order", "shipment", "user account", "report", "image", "playlist"]  # fmt: skip
DOMAINS = ["billing", "support", "crm", "github", "jira", "drive", "gmail", "outlook", "stripe",
           "shopify", "spotify", "salesforce", "notion", "postgres", "s3", "zendesk"]  # fmt: skip
QUALIFIERS = ["by id", "for a date range", "with attachments", "in bulk", "for the current user",
              "matching a filter", "as CSV", "with pagination", "from the archive", "by owner"]  # fmt: skip
PARAMS = ["id", "query", "limit", "cursor", "start_date", "end_date", "owner", "status", "format",
          "recipient", "subject", "body", "tags", "priority", "amount", "currency"]  # fmt: skip


def synthetic_corpus(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """``n`` tool ids and projection-like texts."""
    rng = random.Random(seed)
    ids, texts = [], []
    for i in range(n):
        verb, obj, domain = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(DOMAINS)
        name = f"{domain}_{verb}_{obj.replace(' ', '_')}_{i}"
        params = rng.sample(PARAMS, 3)
        text = (
            f"{name} {domain} {verb} {obj} {i} {verb.capitalize()} a {obj} in {domain} "
            f"{rng.choice(QUALIFIERS)}. "
            + " ".join(f"{p} The {p.replace('_', ' ')} of the {obj}." for p in params)
        )
        ids.append(f"{domain}__{name}")
        texts.append(text)
    return ids, texts


def synthetic_queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(QUALIFIERS)} #{i}"
        for i in range(count)
    ]


def warm_reopen(model: str, cache_dir: str, n: int) -> dict[str, float | bool]:
    """What a new process pays to get every vector back from a warm cache."""
    started = time.perf_counter()
    embedder = make_embedder(model)
    _ = embedder.fingerprint, embedder.dimension
    resolved = time.perf_counter()
    cache = EmbeddingCache.for_embedder(embedder, cache_dir=cache_dir)
    opened = time.perf_counter()
    _, texts = synthetic_corpus(n)
    embedded = [0]
    vectors = embed_with_cache(
        embedder, texts, cache, progress=lambda done, total: embedded.__setitem__(0, total)
    )
    finished = time.perf_counter()
    return {
        "resolve_model_s": resolved - started,
        "open_cache_s": opened - resolved,
        "lookup_s": finished - opened,
        "total_s": finished - started,
        "rows": int(vectors.shape[0]),
        "embedded": embedded[0],
        "torch_imported": "torch" in sys.modules,
    }


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--n", type=int, default=10_000, help="number of synthetic tools (default 10000)"
    )
    parser.add_argument(
        "--queries", type=int, default=200, help="number of timed queries (default 200)"
    )
    parser.add_argument(
        "--model", default="package", help="model: package | /folder | hub:org/name | hashing"
    )
    parser.add_argument(
        "--cache-dir", help="cache folder (default: a temporary one, removed afterwards)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--_warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._warm:
        print(json.dumps(warm_reopen(args.model, args.cache_dir, args.n)))
        return 0

    temporary = args.cache_dir is None
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="ranklens-bench-")
    try:
        ids, texts = synthetic_corpus(args.n)
        queries = synthetic_queries(args.queries)
        results: dict[str, object] = {"tools": args.n, "queries": len(queries), "model": args.model}

        # -- cold embed -----------------------------------------------------
        started = time.perf_counter()
        embedder = make_embedder(args.model)
        cache = EmbeddingCache.for_embedder(embedder, cache_dir=cache_dir)
        cache.clear()  # a truly cold start even with --cache-dir

        def progress(done: int, total: int) -> None:
            if not args.json:
                print(f"\r  embedding {done}/{total}", end="", file=sys.stderr, flush=True)

        matrix = embed_with_cache(embedder, texts, cache, progress=progress)
        cold = time.perf_counter() - started
        if not args.json:
            print(file=sys.stderr)
        results["model_id"] = embedder.spec.model_id
        results["dimension"] = embedder.dimension
        results["cold_total_s"] = cold
        results["cold_model_load_s"] = getattr(embedder, "load_seconds", None)
        results["cold_texts_per_s"] = args.n / cold if cold else None

        # -- warm reopen in a fresh process ---------------------------------
        command = [sys.executable, __file__, "--_warm", "--model", args.model,
                   "--cache-dir", cache_dir, "--n", str(args.n)]  # fmt: skip
        started = time.perf_counter()
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results["warm_process_wall_s"] = time.perf_counter() - started
        warm = json.loads(output.strip().splitlines()[-1])
        results["warm_reopen"] = warm

        # -- query latency --------------------------------------------------
        embed_times, cosine_times, totals = [], [], []
        runs = []
        for query in queries:
            t0 = time.perf_counter()
            vector = embedder.embed_query(query)
            t1 = time.perf_counter()
            run = rank_by_cosine(vector, matrix, ids, 100)
            t2 = time.perf_counter()
            embed_times.append(t1 - t0)
            cosine_times.append(t2 - t1)
            totals.append(t2 - t0)
            runs.append(run)
        lru = QueryCache()
        for query in queries:
            lru.get_or_embed(embedder, query)
        cached = []
        for query in queries:
            t0 = time.perf_counter()
            rank_by_cosine(lru.get_or_embed(embedder, query), matrix, ids, 10)
            cached.append(time.perf_counter() - t0)
        fusion = []
        for run in runs:
            other = list(reversed(run))  # a stand-in second arm of the same depth
            t0 = time.perf_counter()
            reciprocal_rank_fusion([run, other], depth=100, k=10)
            fusion.append(time.perf_counter() - t0)
        results["query_embed_ms_median"] = _ms(embed_times)
        results["cosine_top100_ms_median"] = _ms(cosine_times)
        results["semantic_query_ms_median"] = _ms(totals)
        results["semantic_query_cached_ms_median"] = _ms(cached)
        results["rrf_fuse_2x100_ms_median"] = _ms(fusion)
    finally:
        if temporary:
            shutil.rmtree(cache_dir, ignore_errors=True)

    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return 0
    rows = [
        ("tools", f"{args.n:,}"),
        ("model", f"{results['model_id']} ({results['dimension']}-d)"),
        ("cold embed, total", f"{results['cold_total_s']:.1f} s"),
        ("  of which model load", f"{results['cold_model_load_s'] or 0:.1f} s"),
        ("  throughput", f"{results['cold_texts_per_s']:.0f} texts/s"),
        ("warm reopen (fresh process)", f"{warm['total_s']:.2f} s  (target < 2 s)"),
        ("  resolve model + fingerprint", f"{warm['resolve_model_s']:.2f} s"),
        ("  open cache file", f"{warm['open_cache_s']:.2f} s"),
        ("  look up all texts", f"{warm['lookup_s']:.2f} s"),
        ("  texts embedded", f"{warm['embedded']}"),
        ("  torch imported", f"{warm['torch_imported']}"),
        ("query embed, median", f"{results['query_embed_ms_median']:.2f} ms"),
        ("cosine top-100, median", f"{results['cosine_top100_ms_median']:.2f} ms"),
        ("semantic query, median", f"{results['semantic_query_ms_median']:.2f} ms"),
        ("semantic query (LRU hit)", f"{results['semantic_query_cached_ms_median']:.2f} ms"),
        ("RRF fuse 2x100, median", f"{results['rrf_fuse_2x100_ms_median']:.3f} ms"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
