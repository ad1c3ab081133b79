"""Shared test set-up: offline model hubs, paths, the reference engine oracle."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_catalogs"
SHARED_EVAL = ROOT.parent / "shared" / "eval" / "stabletoolbench"


def oracle_tools(tools):
    """A ratel-ai 0.12.0 ToolRegistry holding ``tools`` (core Tool objects)."""
    ratel = pytest.importorskip("ratel_ai", reason="ratel-ai==0.12.0 is a test dependency")
    reg = ratel.ToolRegistry()
    asyncio.run(
        reg.register(
            [
                ratel.Tool(t.id, t.name, t.description, dict(t.input_schema), dict(t.output_schema))
                for t in tools
            ]
        )
    )
    return reg


def oracle_skills(skills):
    """A ratel-ai 0.12.0 SkillRegistry holding ``skills`` (core Skill objects)."""
    ratel = pytest.importorskip("ratel_ai", reason="ratel-ai==0.12.0 is a test dependency")
    reg = ratel.SkillRegistry()
    asyncio.run(
        reg.register(
            [
                ratel.Skill(s.id, s.name, s.description, tags=list(s.tags), tools=list(s.tools), body=s.body)
                for s in skills
            ]
        )
    )
    return reg


def oracle_ranking(reg, query: str, top_k: int) -> list[tuple[str, float]]:
    """(id, score) pairs of the oracle's ranking."""
    out = []
    for h in reg.search(query, top_k):
        hid = getattr(h, "tool_id", None) or getattr(h, "skill_id", None)
        out.append((hid, h.score))
    return out
