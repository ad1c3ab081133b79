"""Retrieval quality on the StableToolBench judged set, next to the reference figures.

Runs each method through `core.search.ToolCatalog` over
``../shared/eval/stabletoolbench`` (965 tools, 342 queries, top 10, binary
relevance) and prints hit@1, hit@5, recall@5, mrr@10 and ndcg@10 with the
reference row from that folder's README for comparison.

    python bench/quality.py                          # bm25, semantic and hybrid
    python bench/quality.py --methods bm25           # BM25 only (loads no model)
    python bench/quality.py --json

BM25 is searched with ``catalog.search``; semantic and hybrid through
``catalog.search_async(q, k, method=m)`` on a ``ToolCatalog(tools,
method="hybrid")`` (one embedding index serves both).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from core.errors import RanklensError  # noqa: E402
from core.evaluation import evaluate, load_queries, run_queries  # noqa: E402
from core.search import METHODS  # noqa: E402

DATA = ROOT.parent / "shared" / "eval" / "stabletoolbench"
KEYS = ("hit@1", "hit@5", "recall@5", "mrr@10", "ndcg@10")
TOP_K = 10
DEFAULT_METHODS = ("bm25", "semantic", "hybrid")
"""What `--methods` runs by default: all three, as issue 3 asks."""
# The README's rows (top 10, binary relevance), keyed by the method they correspond to.
REFERENCE = {
    "bm25": ("reference engine BM25 (ratel-ai 0.12.0)",
             {"hit@1": 0.620, "hit@5": 0.924, "recall@5": 0.662, "mrr@10": 0.749, "ndcg@10": 0.670}),
    "semantic": ("all-MiniLM-L6-v2 cosine on the same projection",
                 {"hit@1": 0.611, "hit@5": 0.807, "recall@5": 0.579, "mrr@10": 0.700,
                  "ndcg@10": 0.599}),
    "hybrid": ("RRF (k=60, depth 100) of the two above",
               {"hit@1": 0.646, "hit@5": 0.901, "recall@5": 0.656, "mrr@10": 0.757,
                "ndcg@10": 0.671}),
}


def load_tools(data: Path = DATA) -> list:
    """The benchmark's tools as core `Tool`s (id = name)."""
    from core.catalog import load_catalog

    return load_catalog(data / "catalog.json").tools


def measure(methods: list[str], data: Path = DATA, model: str | None = None) -> list[dict]:
    """One row per method: metrics, seconds to build the catalog and to run the queries."""
    from core.search import ToolCatalog

    tools = load_tools(data)
    judgments = load_queries(data / "queries.jsonl")
    rows = []
    dense = None
    for method in methods:
        start = time.perf_counter()
        if method == "bm25":
            catalog = ToolCatalog(tools)
        else:
            if dense is None:
                options = {"model": model} if model else {}
                dense = ToolCatalog(tools, method="hybrid", **options)
            catalog = dense
        built = time.perf_counter() - start
        start = time.perf_counter()
        run = run_queries(catalog, judgments, TOP_K, method)
        searched = time.perf_counter() - start
        report = evaluate(run, judgments)
        rows.append({
            "method": method,
            "metrics": {k: report.metrics[k] for k in KEYS},
            "build_s": built,
            "search_s": searched,
            "queries": report.n_queries,
        })
    return rows


def format_rows(rows: list[dict]) -> str:
    header = f"{'ranker':<50}" + "".join(f"{k:>10}" for k in KEYS)
    lines = [f"StableToolBench: {rows[0]['queries'] if rows else 0} queries, top {TOP_K}", "",
             header, "-" * len(header)]
    for row in rows:
        m = row["metrics"]
        lines.append(f"{'ranklens ' + row['method']:<50}" + "".join(f"{m[k]:>10.4f}" for k in KEYS))
        if row["method"] in REFERENCE:
            label, ref = REFERENCE[row["method"]]
            lines.append(f"{'  README: ' + label:<50}" + "".join(f"{ref[k]:>10.3f}" for k in KEYS))
            lines.append(f"{'  delta':<50}" + "".join(f"{m[k] - ref[k]:>+10.4f}" for k in KEYS))
    lines.append("")
    lines.append("README figures are rounded to 3 decimals (mrr@10 0.749 comes from 0.7485).")
    for row in rows:
        lines.append(f"{row['method']}: build {row['build_s']:.2f} s, "
                     f"{row['queries']} queries {row['search_s']:.2f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated, from {', '.join(METHODS)} (default all three)")
    parser.add_argument("--model", default=None, help="embedding model for semantic/hybrid")
    parser.add_argument("--data", type=Path, default=DATA, help="the stabletoolbench folder")
    parser.add_argument("--json", action="store_true", help="print JSON rows")
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        parser.error(f"unknown method(s) {', '.join(bad) or '(none)'}; valid: {', '.join(METHODS)}")
    if not (args.data / "catalog.json").is_file():
        print(f"bench/quality.py: {args.data} not found (the data lives in ../shared/eval/)",
              file=sys.stderr)
        return 2
    try:
        rows = measure(methods, args.data, args.model)
    except RanklensError as exc:
        print(f"bench/quality.py: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(rows, indent=1) if args.json else format_rows(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
