"""What-if re-ranking latency: one edit, incremental index update vs a full rebuild.

The what-if editor re-ranks the judged query set after every edit. This
measures, on the ~150-tool `mcp_workspace.json` sample with 40 of its judged
queries (or a synthetic catalog with ``--synthetic N``):

- ``incremental``: `WhatIfSession.edit` -- put the edited tool into the working
  copy, re-register only it (`ToolCatalog.register` re-analyses one tool), rank
  every judged query (full ranking) and evaluate; what the app does per edit;
- ``rebuild``: a new `WhatIfSession` on the edited working copy: a fresh index
  of the whole catalog, then the same ranking and evaluation (what a
  non-incremental implementation would do after every edit);
- the index update alone: `register(tool)` vs `catalog_for(working)`.

Each edit appends a different judged query's words to a different tool's
description; edits alternate with undo so the catalog stays the same size.
Target (issue 7): re-ranking 40 queries on 150 tools after one edit well under a second.

    python bench/whatif_latency.py
    python bench/whatif_latency.py --synthetic 2000 --repeat 20
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from synthetic import make_queries, make_tools  # noqa: E402

from core.catalog import Catalog, load_catalog  # noqa: E402
from core.evaluation import Judgment, load_queries  # noqa: E402
from core.search import catalog_for  # noqa: E402
from core.whatif import WhatIfSession  # noqa: E402

SAMPLES = HERE.parent / "sample_catalogs"


def workload(synthetic: int | None, n_queries: int) -> tuple[Catalog, list[Judgment], str]:
    """The catalog and judged queries to measure on."""
    if synthetic:
        tools = make_tools(synthetic)
        rng = random.Random(3)
        judgments = [Judgment(q, {rng.choice(tools).id: 1.0}) for q in make_queries(n_queries)]
        return Catalog(tools=tools), judgments, "synthetic catalog"
    catalog = load_catalog(SAMPLES / "mcp_workspace.json")
    judgments = load_queries(SAMPLES / "mcp_workspace.queries.jsonl")[:n_queries]
    return catalog, judgments, "sample_catalogs/mcp_workspace.json"


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(values) * 1000, p95 * 1000


def measure(catalog: Catalog, judgments: list[Judgment], repeat: int) -> dict[str, float]:
    session = WhatIfSession(catalog, judgments)
    tools = catalog.tools
    incremental, rebuild, register, build = [], [], [], []
    for i in range(repeat):
        tool = session.item(tools[(i * 7) % len(tools)].id)
        edited = tool.model_copy(update={"description": f"{tool.description} {judgments[i % len(judgments)].query}"})

        started = time.perf_counter()
        session.edit(edited)
        incremental.append(time.perf_counter() - started)

        # Starting over: a new session indexes the whole working copy and ranks the queries.
        started = time.perf_counter()
        fresh = WhatIfSession(session.working, judgments)
        rebuild.append(time.perf_counter() - started)
        if fresh.result.after.metrics != session.result.after.metrics:
            raise SystemExit("the incremental and rebuilt rankings disagree: a bug")
        started = time.perf_counter()
        catalog_for(session.working)
        build.append(time.perf_counter() - started)

        # The index update alone (the edit is re-applied to an index holding the original).
        session.undo()
        started = time.perf_counter()
        session.index.register(edited)
        register.append(time.perf_counter() - started)
        session.index.register(tool)
    out: dict[str, float] = {}
    for name, values in (("incremental", incremental), ("rebuild", rebuild),
                         ("register", register), ("build", build)):
        out[f"{name}_median_ms"], out[f"{name}_p95_ms"] = _ms(values)
    out["rerank_ratio"] = out["rebuild_median_ms"] / out["incremental_median_ms"]
    out["index_ratio"] = out["build_median_ms"] / out["register_median_ms"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=None, metavar="N",
                        help="use N synthetic tools instead of the mcp_workspace sample")
    parser.add_argument("--queries", type=int, default=40, help="judged queries (default 40)")
    parser.add_argument("--repeat", type=int, default=50, help="edits measured (default 50)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    catalog, judgments, label = workload(args.synthetic, args.queries)
    measure(catalog, judgments, 3)  # warm up
    r = measure(catalog, judgments, args.repeat)
    r.update({"tools": len(catalog.tools), "queries": len(judgments), "edits": args.repeat})
    if args.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"\nWhat-if re-ranking after one edit: {label} ({len(catalog.tools)} tools), "
          f"{len(judgments)} judged queries, {args.repeat} edits")
    print(f"{'':34}{'median':>10}{'p95':>10}")
    rows = (
        ("edit + re-rank, incremental", "incremental"),
        ("edit + re-rank, full rebuild", "rebuild"),
        ("index update: register(tool)", "register"),
        ("index update: rebuild catalog", "build"),
    )
    for title, key in rows:
        print(f"{title:<34}{r[f'{key}_median_ms']:>8.2f}ms{r[f'{key}_p95_ms']:>8.2f}ms")
    print(f"\nre-rank: full rebuild / incremental = {r['rerank_ratio']:.1f}x   "
          f"(target: incremental well under 1000 ms)")
    print(f"index update: rebuild / register     = {r['index_ratio']:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
