"""What-if editing: change a definition in a working copy and see what it does to the ranking.

A `WhatIfSession` holds

- the *original* catalog, never changed;
- a *working copy* (a `Catalog`) with the edits applied;
- a searchable index of the working copy, updated in place: an edit
  re-registers only the edited item (`ToolCatalog.register` is incremental),
  so only that item is re-analysed, never the whole catalog;
- the history of edits, for undo and redo;
- a judged query set, ranked once for the original and again after every
  edit, giving per query the rank of the first relevant item before and
  after, the queries won and lost, and the metric deltas (`core.evaluation`).

Every change is autosaved (optional) to a JSON file named after the original
catalog's content hash, so a crashed browser tab loses nothing: open the same
catalog again and `Autosave.load` gives the edits back.

Also here, because they answer "what would change if ...": `term_diff` (the
analysed terms an edit added to or removed from a projection) and the
confusability measure (`confusable_pairs`): tools whose projections share
most of their idf-weighted terms, which BM25 cannot tell apart.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.analysis import DEFAULT_ANALYZER, Analyzer
from core.catalog import Catalog, Skill, Tool, parse_tool
from core.errors import CatalogError
from core.evaluation import DEFAULT_KS, EvalReport, Judgment, evaluate, first_relevant_rank
from core.lint import term_vectors
from core.projection import skill_parts, tool_parts
from core.search import SkillCatalog, ToolCatalog, catalog_for

__all__ = [
    "AUTOSAVE_ENV",
    "AUTOSAVE_FORMAT",
    "Autosave",
    "AutosaveData",
    "ConfusablePair",
    "Edit",
    "ItemDiff",
    "MetricChange",
    "ParamField",
    "QueryOutcome",
    "TermDiff",
    "WhatIfResult",
    "WhatIfSession",
    "confusable_pairs",
    "default_autosave_dir",
    "item_data",
    "item_kind",
    "pair_ids",
    "param_fields",
    "parse_item",
    "parse_item_json",
    "projection_terms",
    "similarity_matrix",
    "skill_markdown",
    "skills_zip",
    "term_diff",
    "with_fields",
]

AUTOSAVE_FORMAT = "ranklens-autosave/1"
"""The ``format`` key of an autosave file."""
AUTOSAVE_ENV = "RANKLENS_AUTOSAVE_DIR"
"""Environment variable that overrides the autosave folder."""

Item = Tool | Skill
Run = dict[str, list[tuple[str, float]]]


# --------------------------------------------------------------------------- items


def item_kind(catalog: Catalog) -> str:
    """"skill" for a catalog of skills only, else "tool" (the same rule as `catalog_for`)."""
    return "skill" if catalog.skills and not catalog.tools else "tool"


def item_data(item: Item) -> dict[str, Any]:
    """An item as the native JSON object the loaders accept (what the JSON editor shows).

    Empty optional fields are left out; ``id`` is always written, so that
    renaming a tool in the editor keeps its identity.
    """
    if isinstance(item, Skill):
        data = {"id": item.id, "name": item.name, "description": item.description,
                "tags": list(item.tags), "tools": list(item.tools), "body": item.body}
        return {k: v for k, v in data.items() if v or k in ("id", "name", "description")}
    data = {"id": item.id, "name": item.name, "description": item.description,
            "input_schema": item.input_schema, "output_schema": item.output_schema,
            "server": item.server, "group": item.group}
    return json.loads(json.dumps(
        {k: v for k, v in data.items() if v or k in ("id", "name", "description", "input_schema")}
    ))


def parse_item(data: object, kind: str, source: str = "<edit>") -> Item:
    """Validate one native tool or skill object with the loaders' checks.

    Raises:
        CatalogError: naming ``source``, the item and the fix.
    """
    if kind == "tool":
        return parse_tool(data, source)
    if kind != "skill":
        raise CatalogError(f"unknown item kind {kind!r}; valid kinds: tool, skill")
    if not isinstance(data, dict):
        raise CatalogError(f'{source}: the skill must be a JSON object. Fix: write {{"name": ..., '
                           '"description": ..., "tags": [...]}.')
    data = {**data}
    data.setdefault("id", data.get("name"))
    try:
        return Skill.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise CatalogError(f"{source}: skill {data.get('name')!r}: {where}: {err['msg']}. "
                           "Fix: correct that field.") from None


def parse_item_json(text: str, kind: str, expected_id: str, source: str = "<edit>") -> Item:
    """Parse the JSON editor's text into a tool or skill whose id must stay ``expected_id``.

    Raises:
        CatalogError: for invalid JSON (with line and column), an invalid
            definition (the loader's message), or a changed id.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}. Fix: correct the syntax there.") from None
    item = parse_item(data, kind, source)
    if item.id != expected_id:
        raise CatalogError(
            f"{source}: the {kind}'s id changed from {expected_id!r} to {item.id!r}; judged queries "
            f'and the original refer to it by id. Fix: keep "id": {json.dumps(expected_id)} '
            "(change the name instead)."
        )
    return item


@dataclass(frozen=True)
class ParamField:
    """One property of a tool's input schema, as the edit form shows it.

    Attributes:
        path: keys leading from the input schema to the property's object,
            e.g. ``("properties", "filters", "properties", "status")``.
        label: a readable path, ``filters.status`` (``[]`` marks array items).
        description: the property's description (None when it has none).
        enum: its enum values when they are all strings (the projection
            indexes string values only), else None.
        other_enum: True when it has an enum with non-string values (edit
            those in the JSON editor).
    """

    path: tuple[str, ...]
    label: str
    description: str | None
    enum: tuple[str, ...] | None
    other_enum: bool = False


def param_fields(tool: Tool) -> list[ParamField]:
    """Every property of the input schema, in projection order (nested ones too)."""
    out: list[ParamField] = []

    def walk(schema: Mapping[str, Any], path: tuple[str, ...], label: str, depth: int) -> None:
        if depth > 32:
            return
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, prop in props.items():
                ppath = (*path, "properties", str(key))
                plabel = f"{label}.{key}" if label else str(key)
                if not isinstance(prop, Mapping):
                    continue
                desc = prop.get("description")
                enum = prop.get("enum")
                strings = isinstance(enum, list) and all(isinstance(v, str) for v in enum)
                out.append(ParamField(
                    ppath, plabel, desc if isinstance(desc, str) else None,
                    tuple(enum) if strings else None,  # type: ignore[arg-type]
                    isinstance(enum, list) and not strings,
                ))
                walk(prop, ppath, plabel, depth + 1)
        items = schema.get("items")
        if isinstance(items, Mapping):
            walk(items, (*path, "items"), f"{label}[]", depth + 1)

    walk(tool.input_schema, (), "", 0)
    return out


def with_fields(
    item: Item,
    *,
    name: str | None = None,
    description: str | None = None,
    param_descriptions: Mapping[tuple[str, ...], str] | None = None,
    param_enums: Mapping[tuple[str, ...], Sequence[str]] | None = None,
    tags: Sequence[str] | None = None,
    source: str = "<edit>",
) -> Item:
    """A copy of ``item`` with the form's fields changed, validated like a loaded definition.

    ``param_descriptions`` and ``param_enums`` are keyed by `ParamField.path`;
    an empty description or an empty enum removes the key. ``tags`` is for
    skills only.

    Raises:
        CatalogError: when the result is not a valid definition, or a path
            names no property.
    """
    data = item_data(item)
    kind = "skill" if isinstance(item, Skill) else "tool"
    if name is not None:
        data["name"] = name
    if description is not None:
        data["description"] = description
    if tags is not None:
        if kind != "skill":
            raise CatalogError(f"{source}: tools have no tags. Fix: edit a skill's tags only.")
        data["tags"] = [t for t in tags if t]
    for changes, key in ((param_descriptions, "description"), (param_enums, "enum")):
        for path, value in (changes or {}).items():
            if kind != "tool":
                raise CatalogError(f"{source}: skills have no parameters. Fix: edit a tool's.")
            node: Any = data.setdefault("input_schema", {})
            for step in path:
                node = node.get(step) if isinstance(node, dict) else None
                if node is None:
                    raise CatalogError(f"{source}: tool {item.id!r} has no property at "
                                       f"{'.'.join(path)}. Fix: pick one of its parameters.")
            if not isinstance(node, dict):
                raise CatalogError(f"{source}: {'.'.join(path)} of tool {item.id!r} is not an object.")
            value = value if key == "description" else [v for v in value if v]
            if value:
                node[key] = value if key == "description" else list(value)
            else:
                node.pop(key, None)
    return parse_item(data, kind, source)


# --------------------------------------------------------------------------- term diff


def projection_terms(item: Item, analyzer: Analyzer | None = None) -> list[str]:
    """The analysed terms the index holds for ``item``, in projection order, repeats kept."""
    analyzer = analyzer or DEFAULT_ANALYZER
    if isinstance(item, Skill):
        parts = skill_parts(item.name, item.description, item.tags)
    else:
        parts = tool_parts(item.name, item.description, item.input_schema, item.output_schema)
    return analyzer.analyze(" ".join(p.text for p in parts))


@dataclass(frozen=True)
class TermDiff:
    """How an edit changed the analysed terms of one projection.

    Attributes:
        added: terms the projection did not have before, sorted.
        removed: terms it no longer has, sorted.
        counts: (term, count before, count after) for every term whose count
            changed, sorted by term; includes added and removed terms.
        length_before, length_after: the projection's length in terms (BM25's
            document length).
    """

    added: tuple[str, ...]
    removed: tuple[str, ...]
    counts: tuple[tuple[str, int, int], ...]
    length_before: int
    length_after: int

    @property
    def unchanged(self) -> bool:
        """True when the edit changed no indexed term (only non-indexed fields)."""
        return not self.counts


def term_diff(before: Item | Sequence[str], after: Item | Sequence[str]) -> TermDiff:
    """The terms added to and removed from a projection (items or analysed term lists)."""
    b = Counter(before if not isinstance(before, Tool | Skill) else projection_terms(before))
    a = Counter(after if not isinstance(after, Tool | Skill) else projection_terms(after))
    counts = tuple((t, b[t], a[t]) for t in sorted(set(a) | set(b)) if a[t] != b[t])
    return TermDiff(
        added=tuple(sorted(set(a) - set(b))),
        removed=tuple(sorted(set(b) - set(a))),
        counts=counts,
        length_before=sum(b.values()),
        length_after=sum(a.values()),
    )


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Edit:
    """One applied change: the item before and after (same kind, same id)."""

    kind: str
    item_id: str
    before: Item
    after: Item

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.item_id,
                "before": item_data(self.before), "after": item_data(self.after)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<autosave>") -> Edit:
        if not isinstance(data, Mapping) or data.get("kind") not in ("tool", "skill"):
            raise CatalogError(f"{source}: an edit must be an object with kind tool or skill. "
                               "Fix: discard the autosave.")
        kind = str(data["kind"])
        before = parse_item(data.get("before"), kind, source)
        after = parse_item(data.get("after"), kind, source)
        if before.id != after.id or before.id != data.get("id"):
            raise CatalogError(f"{source}: an edit changes the id {data.get('id')!r}. "
                               "Fix: discard the autosave.")
        return cls(kind, before.id, before, after)


@dataclass(frozen=True)
class QueryOutcome:
    """One judged query before and after the edits.

    Ranks are 1-based ranks of the first relevant item in the *full* ranking
    (not only the top k); None when no relevant item matches the query at all.

    Attributes:
        rank_before: in the original catalog.
        rank_after: in the working copy.
        rank_previous: before the most recent change (edit, undo or redo).
        top_before, top_after: the rank-1 item, None when nothing matched.
        no_tool: a query whose right answer is no tool (ranks are None).
    """

    query: str
    relevant: tuple[str, ...]
    rank_before: int | None
    rank_after: int | None
    rank_previous: int | None
    top_before: str | None
    top_after: str | None
    no_tool: bool = False

    @property
    def change(self) -> str:
        """"won" (the relevant item moved up), "lost" (down), or "same"."""
        before, after = _rank_value(self.rank_before), _rank_value(self.rank_after)
        if self.no_tool or before == after:
            return "same"
        return "won" if after < before else "lost"

    @property
    def moved_by_last_change(self) -> bool:
        """True when the most recent change moved this query's relevant item."""
        return not self.no_tool and self.rank_previous != self.rank_after


def _rank_value(rank: int | None) -> float:
    return math.inf if rank is None else float(rank)


@dataclass(frozen=True)
class MetricChange:
    """One metric of the judged query set, original vs working copy."""

    metric: str
    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class WhatIfResult:
    """The judged query set ranked against the original and the working copy.

    Attributes:
        outcomes: one per judged query, in the query set's order.
        before, after: the `EvalReport`s (top-k runs) of original and working copy.
        metrics: per metric key, before, after and delta.
        seconds: wall time of the re-ranking that produced ``after``.
    """

    outcomes: tuple[QueryOutcome, ...]
    before: EvalReport
    after: EvalReport
    metrics: tuple[MetricChange, ...]
    seconds: float

    @property
    def won(self) -> tuple[QueryOutcome, ...]:
        """Queries whose relevant item moved up, biggest gain first."""
        rows = [o for o in self.outcomes if o.change == "won"]
        return tuple(sorted(rows, key=lambda o: (_rank_value(o.rank_after) - _rank_value(o.rank_before), o.query)))

    @property
    def lost(self) -> tuple[QueryOutcome, ...]:
        """Queries whose relevant item moved down, biggest loss first."""
        rows = [o for o in self.outcomes if o.change == "lost"]
        return tuple(sorted(rows, key=lambda o: (_rank_value(o.rank_before) - _rank_value(o.rank_after), o.query)))

    def metric(self, key: str) -> MetricChange:
        for m in self.metrics:
            if m.metric == key:
                return m
        raise KeyError(key)


@dataclass(frozen=True)
class ItemDiff:
    """How one item of the working copy differs from the original."""

    kind: str
    item_id: str
    original: Item
    working: Item
    unified: str
    """A unified diff of the two JSON definitions."""
    terms: TermDiff


# --------------------------------------------------------------------------- autosave


def default_autosave_dir() -> Path:
    """``$RANKLENS_AUTOSAVE_DIR``, else ``<user data dir>/ranklens/autosave`` (platformdirs)."""
    env = os.environ.get(AUTOSAVE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("ranklens")) / "autosave"


@dataclass(frozen=True)
class AutosaveData:
    """What an autosave file holds: the edits made to one original catalog."""

    path: Path
    original_hash: str
    saved_at: str
    applied: tuple[Edit, ...]
    undone: tuple[Edit, ...]
    label: str = ""

    @property
    def n_edits(self) -> int:
        return len(self.applied)


class Autosave:
    """Autosave files in one folder, one per original catalog (named by its content hash).

    Writes are atomic (a temporary file renamed over the old one), so a crash
    mid-write leaves the previous save intact.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_autosave_dir()

    def path_for(self, original_hash: str) -> Path:
        return self.directory / f"{original_hash}.json"

    def save(self, session: WhatIfSession) -> Path | None:
        """Write the session's edits. Returns the path written.

        When the working copy equals the original (no edit, or every edit
        undone or reverted) there is nothing to lose: the file is removed and
        None returned.
        """
        path = self.path_for(session.original.content_hash)
        if not session.changed_ids():
            path.unlink(missing_ok=True)
            return None
        data = {
            "format": AUTOSAVE_FORMAT,
            "original_hash": session.original.content_hash,
            "source": session.original.source,
            "label": session.label,
            "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "applied": [e.to_dict() for e in session.history],
            "undone": [e.to_dict() for e in session.redo_stack],
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False, indent=1)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def load(self, original_hash: str) -> AutosaveData | None:
        """The autosave of the catalog with this content hash, or None when there is none.

        Raises:
            CatalogError: when the file exists but cannot be read back.
        """
        path = self.path_for(original_hash)
        if not path.exists():
            return None
        source = str(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CatalogError(f"{source}: cannot read the autosave ({exc}). Fix: discard it.") from None
        if not isinstance(data, dict) or data.get("format") != AUTOSAVE_FORMAT:
            raise CatalogError(f"{source}: not a {AUTOSAVE_FORMAT} file. Fix: discard it.")
        if data.get("original_hash") != original_hash:
            raise CatalogError(f"{source}: saved for another catalog. Fix: discard it.")
        return AutosaveData(
            path=path,
            original_hash=original_hash,
            saved_at=str(data.get("saved_at", "")),
            applied=tuple(Edit.from_dict(e, source) for e in data.get("applied", [])),
            undone=tuple(Edit.from_dict(e, source) for e in data.get("undone", [])),
            label=str(data.get("label", "")),
        )

    def discard(self, original_hash: str) -> None:
        """Delete the autosave of this catalog, if any."""
        self.path_for(original_hash).unlink(missing_ok=True)


# --------------------------------------------------------------------------- the session


class WhatIfSession:
    """An original catalog, its edited working copy, and the judged queries ranked on both.

    Args:
        original: the loaded catalog; never modified.
        judgments: the judged query set (may be empty; see `set_judgments`).
        method: ranking method of the re-ranking ("bm25" by default).
        top_k: depth of the runs the metrics are computed on.
        ks: metric cut-offs.
        autosave: where to save every change (None: no autosave).
        label: a display name saved with the autosave.
        options: passed to `catalog_for` (e.g. ``model=`` for semantic).

    The working index is built once; edits, undo and redo re-register only the
    items they change.
    """

    def __init__(
        self,
        original: Catalog,
        judgments: Sequence[Judgment] = (),
        *,
        method: str = "bm25",
        top_k: int = 10,
        ks: Sequence[int] = DEFAULT_KS,
        autosave: Autosave | None = None,
        label: str = "",
        **options: Any,
    ) -> None:
        self.original = original
        self.kind = item_kind(original)
        self.method = method
        self.top_k = top_k
        self.ks = tuple(ks)
        self.autosave = autosave
        self.autosave_error: str | None = None
        self.label = label
        self._options = options
        self.working = original
        self.index: ToolCatalog | SkillCatalog = catalog_for(original, method=method, **options)
        self.reanalysed: list[str] = []
        """Ids re-registered by edits, undo and redo, in order (each re-analysed once)."""
        self.revision = 0
        """Counts changes of the working copy (edit, undo, redo, revert, restore)."""
        self.touched: tuple[str, ...] = ()
        """Ids of the items the most recent change (edit, undo, redo, revert, restore)
        put back into the working copy, the item of the most recent edit first; ``()``
        before any change. An editor selects ``touched[0]`` after an undo or redo."""
        self._history: list[Edit] = []
        self._redo: list[Edit] = []
        self.judgments: tuple[Judgment, ...] = ()
        self._before_run: Run = {}
        self._before_ranks: dict[str, int | None] = {}
        self._before_report: EvalReport | None = None
        self._result: WhatIfResult | None = None
        self._previous_ranks: dict[str, int | None] = {}
        self.set_judgments(judgments)

    # -- items -----------------------------------------------------------------

    def _items_of(self, catalog: Catalog) -> dict[str, Item]:
        return catalog.skill_index if self.kind == "skill" else catalog.tool_index  # type: ignore[return-value]

    @property
    def items(self) -> list[Item]:
        """The working copy's items (tools, or skills for a skills-only catalog)."""
        return list(self._items_of(self.working).values())

    def item(self, item_id: str) -> Item:
        """The working version of an item; CatalogError naming close ids when unknown."""
        return self.working.skill(item_id) if self.kind == "skill" else self.working.tool(item_id)

    def original_item(self, item_id: str) -> Item:
        return self.original.skill(item_id) if self.kind == "skill" else self.original.tool(item_id)

    # -- judged queries --------------------------------------------------------

    def set_judgments(self, judgments: Sequence[Judgment]) -> None:
        """Use this judged query set; ranks it on the original catalog once."""
        self.judgments = tuple(judgments)
        index = self.index if not self._history else catalog_for(
            self.original, method=self.method, **self._options)
        self._before_run, self._before_ranks = self._rank_all(index)
        self._before_report = evaluate(self._before_run, self.judgments, self.ks) \
            if self.judgments else None
        self._result = None
        self._previous_ranks = {}
        if self.judgments:
            self._result = self._rerank()

    def _rank_all(self, index: ToolCatalog | SkillCatalog) -> tuple[Run, dict[str, int | None]]:
        """Every judged query's top-k run on ``index``, and the 1-based rank of its first
        relevant item in the *full* ranking (None when no relevant item matches).

        BM25 asks the index for the top k and for the full-ranking position of each
        relevant item (`BM25Index.rank_of`, same order: score, then id), so no query
        sorts the whole catalog. Other methods rank everything once.
        """
        run: Run = {}
        ranks: dict[str, int | None] = {}
        if self.method == "bm25":
            bm25, analyze = index.index, index.analyzer.analyze
            for j in self.judgments:
                run[j.query] = [(h.id, h.score) for h in index.search(j.query, self.top_k)]
                terms = analyze(j.query)
                found = [r for r in (bm25.rank_of(terms, i) for i in j.relevant_ids if i in index)
                         if r is not None]
                ranks[j.query] = min(found) + 1 if found else None
            return run, ranks

        depth = max(len(index), 1)
        for j in self.judgments:
            hits = [(h.id, h.score) for h in index.search_with(j.query, depth, self.method)]
            run[j.query] = hits[: self.top_k]
            ranks[j.query] = first_relevant_rank([i for i, _ in hits], j.relevant_ids)
        return run, ranks

    def _rerank(self) -> WhatIfResult:
        started = time.perf_counter()
        after_run, after_ranks = self._rank_all(self.index)
        after = evaluate(after_run, self.judgments, self.ks)
        seconds = time.perf_counter() - started
        before = self._before_report or evaluate(self._before_run, self.judgments, self.ks)
        outcomes = []
        previous = self._previous_ranks
        for j in self.judgments:
            b_hits, a_hits = self._before_run.get(j.query, []), after_run.get(j.query, [])
            a_rank = None if j.is_no_tool else after_ranks.get(j.query)
            outcomes.append(QueryOutcome(
                query=j.query,
                relevant=tuple(sorted(j.relevant_ids)),
                rank_before=None if j.is_no_tool else self._before_ranks.get(j.query),
                rank_after=a_rank,
                rank_previous=previous.get(j.query, a_rank),
                top_before=b_hits[0][0] if b_hits else None,
                top_after=a_hits[0][0] if a_hits else None,
                no_tool=j.is_no_tool,
            ))
        self._previous_ranks = {o.query: o.rank_after for o in outcomes}
        metrics = tuple(
            MetricChange(k, before.metrics[k], after.metrics.get(k, 0.0)) for k in before.metrics
        )
        return WhatIfResult(tuple(outcomes), before, after, metrics, seconds)

    @property
    def result(self) -> WhatIfResult | None:
        """The current comparison (None without judged queries)."""
        return self._result

    # -- edits -----------------------------------------------------------------

    @property
    def history(self) -> tuple[Edit, ...]:
        """Applied edits, oldest first (what `undo` walks back)."""
        return tuple(self._history)

    @property
    def redo_stack(self) -> tuple[Edit, ...]:
        """Undone edits, most recently undone last (what `redo` re-applies)."""
        return tuple(self._redo)

    @property
    def can_undo(self) -> bool:
        return bool(self._history)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def _set(self, item: Item) -> None:
        """Put ``item`` into the working copy and re-register it (incrementally)."""
        if self.kind == "skill":
            self.working = self.working.with_skill(item)  # type: ignore[arg-type]
        else:
            self.working = self.working.with_tool(item)  # type: ignore[arg-type]
        self.reanalysed.extend(self.index.register(item))  # type: ignore[arg-type]

    def _changed(self) -> WhatIfResult | None:
        self.revision += 1
        if self.judgments:
            self._result = self._rerank()
        self._save()
        return self._result

    def _save(self) -> None:
        if self.autosave is None:
            return
        try:
            self.autosave.save(self)
            self.autosave_error = None
        except OSError as exc:  # a full disk must not break editing
            self.autosave_error = f"autosave to {self.autosave.directory} failed: {exc}"

    def edit(self, item: Item) -> WhatIfResult | None:
        """Replace the item of the same id in the working copy; re-rank; autosave.

        An item equal to the current one is not an edit (no history entry).

        Raises:
            CatalogError: when the catalog has no item with that id (close ids
                are named), or the item is of the wrong kind.
        """
        kind = "skill" if isinstance(item, Skill) else "tool"
        if kind != self.kind:
            raise CatalogError(f"this catalog's {self.kind}s are edited here, not a {kind}. "
                               f"Fix: pass a {self.kind.title()}.")
        current = self.item(item.id)
        if current == item:
            return self._result
        self._history.append(Edit(kind, item.id, current, item))
        self._redo.clear()
        self._set(item)
        self.touched = (item.id,)
        return self._changed()

    def undo(self) -> WhatIfResult | None:
        """Take back the last edit (no-op without one)."""
        if not self._history:
            return self._result
        edit = self._history.pop()
        self._redo.append(edit)
        self._set(edit.before)
        self.touched = (edit.item_id,)
        return self._changed()

    def redo(self) -> WhatIfResult | None:
        """Re-apply the last undone edit (no-op without one)."""
        if not self._redo:
            return self._result
        edit = self._redo.pop()
        self._history.append(edit)
        self._set(edit.after)
        self.touched = (edit.item_id,)
        return self._changed()

    def revert_all(self) -> WhatIfResult | None:
        """Back to the original in one step; the reverted edits can be redone one by one."""
        if not self._history:
            return self._result
        touched: list[str] = []
        while self._history:
            edit = self._history.pop()
            self._redo.append(edit)
            self._set(edit.before)
            touched.append(edit.item_id)
        self.touched = tuple(dict.fromkeys(touched))
        return self._changed()

    def restore(self, saved: AutosaveData) -> WhatIfResult | None:
        """Apply an autosave's edits to a session that has none yet.

        Raises:
            CatalogError: when the session already has edits, the autosave is
                for another catalog, or an edit does not fit the original.
        """
        if self._history or self._redo:
            raise CatalogError("this session already has edits. Fix: restore into a fresh session.")
        if saved.original_hash != self.original.content_hash:
            raise CatalogError(f"{saved.path}: saved for another catalog. Fix: discard it.")
        for edit in saved.applied:
            try:
                current = self.item(edit.item_id)
            except CatalogError:
                current = None
            if edit.kind != self.kind or current != edit.before:
                while self._history:  # roll back quietly: the autosave file stays as it was
                    self._set(self._history.pop().before)
                raise CatalogError(f"{saved.path}: the saved edit of {edit.item_id!r} does not fit "
                                   "this catalog. Fix: discard the autosave.")
            self._history.append(edit)
            self._set(edit.after)
        self._redo = list(saved.undone)
        self.touched = tuple(dict.fromkeys(e.item_id for e in reversed(saved.applied)))
        return self._changed()

    # -- diff and export -------------------------------------------------------

    def changed_ids(self) -> list[str]:
        """Ids of items that differ from the original, in catalog order."""
        before = self._items_of(self.original)
        return [i for i, item in self._items_of(self.working).items() if before.get(i) != item]

    def diff(self) -> list[ItemDiff]:
        """Each changed item: its unified JSON diff and term diff against the original."""
        out = []
        for item_id in self.changed_ids():
            old, new = self.original_item(item_id), self.item(item_id)
            a = json.dumps(item_data(old), indent=2, ensure_ascii=False).splitlines()
            b = json.dumps(item_data(new), indent=2, ensure_ascii=False).splitlines()
            unified = "\n".join(difflib.unified_diff(
                a, b, f"original/{item_id}", f"working/{item_id}", lineterm=""))
            out.append(ItemDiff(self.kind, item_id, old, new, unified, term_diff(old, new)))
        return out

    def term_diff(self, item_id: str) -> TermDiff:
        """The terms the working version of an item adds to / removes from the original's projection."""
        return term_diff(self.original_item(item_id), self.item(item_id))

    def export_file(self) -> tuple[str | bytes, str, str]:
        """The working copy as a file in the format it was loaded in: (content, file name, mime).

        A skills folder (or zip of SKILL.md folders) becomes a zip of
        ``<skill>/SKILL.md`` folders (`skills_zip`), which the loaders read
        back to an equal catalog; everything else is text (`export_text`).

        Raises:
            CatalogError: when that format cannot hold an edit.
        """
        if self.original.format == "skills-folder" and not self.working.tools:
            source = Path(self.original.source or "skills")
            stem = source.stem if source.suffix else source.name
            return skills_zip(self.working.skills), f"{stem}.edited.zip", "application/zip"
        return self.export_text()

    def export_text(self) -> tuple[str, str, str]:
        """The working copy in the format it was loaded in: (text, file name, mime type).

        YAML when the original came from a .yaml/.yml file, else JSON (a skills
        folder as native JSON: use `export_file` for a zip of SKILL.md folders).

        Raises:
            CatalogError: when that format cannot hold an edit (e.g. a renamed
                MCP tool whose id no longer is server + name).
        """
        data = self.working.to_data(self.original.format)
        source = Path(self.original.source or "catalog.json")
        stem = source.stem if source.suffix else source.name
        if source.suffix.lower() in (".yaml", ".yml"):
            import yaml

            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
            return text, f"{stem}.edited{source.suffix}", "application/yaml"
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        return text, f"{stem}.edited.json", "application/json"


# --------------------------------------------------------------------------- SKILL.md export


def _front_matter_line(key: str, value: str | Sequence[str]) -> str:
    """One front-matter entry as YAML that `parse_skill_markdown` reads back exactly.

    A string with a line break is written as a JSON string (valid YAML) on one
    line, so no line of it can be taken for the closing ``---`` fence.
    """
    import yaml

    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return f"{key}: {json.dumps(value)}\n"
    if not isinstance(value, str) and any("\n" in v or "\r" in v for v in value):
        return f"{key}:\n" + "".join(f"- {json.dumps(v)}\n" for v in value)
    data = {key: value if isinstance(value, str) else list(value)}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=2**31 - 1,
                          default_flow_style=False)


def skill_markdown(skill: Skill) -> str:
    """A skill as a SKILL.md file: YAML front matter (name, id when it differs, description,
    tags, tools), then the body. `core.catalog.parse_skill_markdown` reads it back equal."""
    lines = [_front_matter_line("name", skill.name)]
    if skill.id != skill.name:
        lines.append(_front_matter_line("id", skill.id))
    lines.append(_front_matter_line("description", skill.description))
    if skill.tags:
        lines.append(_front_matter_line("tags", skill.tags))
    if skill.tools:
        lines.append(_front_matter_line("tools", skill.tools))
    body = f"\n{skill.body}\n" if skill.body else ""
    return "---\n" + "".join(lines) + "---\n" + body


def _folder_name(skill_id: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", skill_id).strip("._") or "skill"
    name, n = base, 1
    while name.lower() in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name.lower())
    return name


def skills_zip(skills: Sequence[Skill]) -> bytes:
    """A zip of ``<skill>/SKILL.md`` folders (one per skill, named after its id), as the
    loaders read it (`core.catalog.parse_catalog_bytes`). The bytes depend only on the skills."""
    import io
    import zipfile

    buffer = io.BytesIO()
    taken: set[str] = set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for skill in skills:
            info = zipfile.ZipInfo(f"{_folder_name(skill.id, taken)}/SKILL.md", (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, skill_markdown(skill).encode("utf-8"))
    return buffer.getvalue()


# --------------------------------------------------------------------------- confusability


@dataclass(frozen=True)
class ConfusablePair:
    """Two items whose projections share most of their idf-weighted terms.

    ``similarity`` is the cosine of their idf-weighted term-count vectors;
    ``shared`` the terms both have, rarest (most discriminating) first.
    """

    a: str
    b: str
    similarity: float
    shared: tuple[str, ...]


def _similarity_text(item: Item) -> str:
    # Name, description and input schema (not the output schema), as the
    # linter's near-duplicate rule measures it, so the two agree.
    if isinstance(item, Skill):
        parts = skill_parts(item.name, item.description, item.tags)
    else:
        parts = tool_parts(item.name, item.description, item.input_schema, {})
    return " ".join(p.text for p in parts)


def similarity_matrix(
    items: Sequence[Item], ids: Sequence[str] | None = None, analyzer: Analyzer | None = None
) -> tuple[list[str], Any]:
    """(ids, dense cosine matrix) of idf-weighted projection terms between the items ``ids``
    (default: all; keep it small). The idf is always computed over all ``items``."""
    unit = term_vectors([_similarity_text(it) for it in items], analyzer).unit
    position = {it.id: n for n, it in enumerate(items)}
    chosen = list(ids) if ids is not None else list(position)
    unknown = [i for i in chosen if i not in position]
    if unknown:
        raise CatalogError(f"no item with id {unknown[0]!r} among the {len(items)} given")
    sub = unit[[position[i] for i in chosen]]
    return chosen, (sub @ sub.T).toarray()


def confusable_pairs(
    items: Sequence[Item], top_n: int = 20, min_similarity: float = 0.0,
    analyzer: Analyzer | None = None,
) -> list[ConfusablePair]:
    """The ``top_n`` most similar item pairs (cosine of idf-weighted term counts), most similar first.

    The idf is ln(1 + (N - df + 0.5) / (df + 0.5)) over the items given, so a
    term every item has weighs little. Ties are broken by ids.
    """
    if len(items) < 2 or top_n <= 0:
        return []
    from scipy import sparse

    vectors = term_vectors([_similarity_text(it) for it in items], analyzer)
    sims = sparse.triu(vectors.unit @ vectors.unit.T, k=1).tocoo()
    ranked = sorted(
        ((float(s), int(a), int(b)) for a, b, s in zip(sims.row, sims.col, sims.data, strict=True)
         if s >= min_similarity and s > 0),
        key=lambda x: (-round(x[0], 12), items[x[1]].id, items[x[2]].id),
    )[:top_n]
    out = []
    for sim, a, b in ranked:
        if items[b].id < items[a].id:
            a, b = b, a
        shared = vectors.shared_terms(a, b)
        out.append(ConfusablePair(items[a].id, items[b].id, min(sim, 1.0), tuple(shared)))
    return out


def pair_ids(pairs: Iterable[ConfusablePair]) -> list[str]:
    """The ids the pairs involve, in order of first appearance (heatmap axes)."""
    return list(dict.fromkeys(i for p in pairs for i in (p.a, p.b)))
