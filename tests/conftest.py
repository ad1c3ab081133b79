"""Shared test set-up: offline model hubs, paths, the reference engine oracle."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="session")
def _private_user_folders(tmp_path_factory):
    """Keep the suite away from the user's own autosaves and embedding cache.

    Tests (and the Streamlit servers they start, which inherit the environment)
    get empty folders of their own; a test may still point either elsewhere.
    """
    base = tmp_path_factory.mktemp("user")
    saved = {k: os.environ.get(k) for k in ("RANKLENS_AUTOSAVE_DIR", "RANKLENS_CACHE_DIR")}
    os.environ["RANKLENS_AUTOSAVE_DIR"] = str(base / "autosave")
    os.environ["RANKLENS_CACHE_DIR"] = str(base / "cache")
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
SAMPLES = ROOT / "sample_catalogs"
SHARED_EVAL = ROOT.parent / "shared" / "eval" / "stabletoolbench"


def keys_sorted(value) -> bool:
    """Whether every JSON object in ``value``, at any depth, has its keys in sorted order."""
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(keys_sorted(v) for v in value.values())
    if isinstance(value, list):
        return all(keys_sorted(v) for v in value)
    return True


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
