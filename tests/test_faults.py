"""Injected faults (issue 8) through the catalog facade and the command line.

tests/test_embedding.py injects each fault into the embedding layer itself
(`EmbeddingCache`, `embed_with_cache`, `SentenceTransformerEmbedder`). This
file checks what a user of `ToolCatalog` (the app, the CLI) sees for the same
faults and a few more: a typed `EmbedderError` naming the cause and the fix,
or a clean fallback (a memory-only or rebuilt cache) announced by an
`EmbeddingCacheWarning` and left on the cache as ``degraded_reason`` /
``rebuilt_reason``, with search still working and never a vector of another
model. Falling back from semantic to BM25 is the app's policy; here we check
that the BM25 side of a catalog whose model failed is untouched and usable.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

import core.embedding as emb
from core.catalog import Tool, load_catalog
from core.cli import main
from core.embedding import EmbeddingCache, EmbeddingCacheWarning, HashingEmbedder
from core.errors import EmbedderError
from core.search import ToolCatalog

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "sample_catalogs" / "support_billing.json"
TOOLS = load_catalog(CATALOG).tools[:30]
QUERY = "I was charged twice for my subscription"


@pytest.fixture(autouse=True)
def _isolated_cache_dir(tmp_path, monkeypatch):
    """Never touch the real user cache."""
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "default-cache"))


def fresh_ranking(tools, query: str = QUERY, method: str = "semantic", dimension: int = 32):
    """The ranking of a memory-only catalog that never saw a cache file: the reference."""
    catalog = ToolCatalog(tools, method="hybrid", model=HashingEmbedder(dimension), persistent_cache=False)
    return catalog.search_with(query, 10, method)


def assert_vectors_are_fresh(catalog: ToolCatalog) -> None:
    """Every cached vector is exactly what the model gives for the tool's text today."""
    embedder = catalog.embedder
    texts = [catalog.projection_text(t) for t in catalog.tools]
    vectors, misses = catalog.embedding_cache.get_many(texts)
    assert misses == []
    expected = np.stack([embedder.vector(embedder.spec.doc_prefix + t) for t in texts])
    assert np.array_equal(vectors, expected)


def chmod_blocks_reads(path: Path) -> bool:
    """Whether mode 000 actually stops this process (it does not for root)."""
    mode = path.stat().st_mode
    path.chmod(0)
    try:
        os.listdir(path) if path.is_dir() else path.read_bytes()
    except PermissionError:
        return True
    finally:
        path.chmod(mode)
    return False


# --------------------------------------------------------------------------- model: missing, unreadable

def st_folder(tmp_path: Path, dimension: int = 8) -> Path:
    """A folder that looks like a sentence-transformers model (configs only, no real weights)."""
    folder = tmp_path / "tiny-model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"hidden_size": dimension}))
    (folder / "model.safetensors").write_bytes(b"\x00" * 16)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": dimension, "pooling_mode_mean_tokens": True}))
    return folder


def test_missing_model_folder_is_an_embedder_error_naming_it(tmp_path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbedderError, match=rf"{missing} does not exist; point --model at"):
        ToolCatalog(TOOLS, method="semantic", model=str(missing))
    with pytest.raises(EmbedderError, match="pip install no-such-model-pkg"):
        ToolCatalog(TOOLS, method="hybrid", model="package:no_such_model_pkg")


@pytest.mark.parametrize("command", [
    ["search", str(CATALOG), QUERY, "--method", "semantic"],
    ["eval", str(CATALOG), str(CATALOG.with_suffix(".queries.jsonl")), "--method", "hybrid"],
])
def test_cli_with_a_missing_model_exits_2_with_the_fix(tmp_path, capsys, command) -> None:
    assert main([*command, "--model", str(tmp_path / "gone")]) == 2
    err = capsys.readouterr().err
    assert "gone does not exist" in err and "point --model at" in err and "Traceback" not in err


def test_unreadable_model_folder_for_real_when_chmod_blocks(tmp_path) -> None:
    folder = st_folder(tmp_path)
    if not chmod_blocks_reads(folder):
        pytest.skip("running as root: mode 000 does not block reads here; "
                    "test_unreadable_model_folder_simulated covers the same path")
    folder.chmod(0)
    try:
        with pytest.raises(EmbedderError, match=r"cannot read model folder .*check its permissions"):
            ToolCatalog(TOOLS, method="semantic", model=str(folder))
    finally:
        folder.chmod(0o755)


def test_unreadable_model_folder_simulated(tmp_path, monkeypatch, capsys) -> None:
    folder = st_folder(tmp_path)
    real_scandir = os.scandir

    def denied(path=".", *args):
        if Path(path) == folder:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_scandir(path, *args)

    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(EmbedderError, match=r"cannot read model folder .*Permission denied"):
        ToolCatalog(TOOLS, method="semantic", model=str(folder))
    assert main(["search", str(CATALOG), QUERY, "--method", "hybrid", "--model", str(folder)]) == 2
    assert "Permission denied" in capsys.readouterr().err


def test_unreadable_weight_file_fails_before_anything_is_embedded(tmp_path, monkeypatch) -> None:
    folder = st_folder(tmp_path)
    real_open = Path.open

    def denied(self, *args, **kwargs):
        if self.name == "model.safetensors":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(EmbedderError, match=r"cannot read model file .*model\.safetensors"):
        ToolCatalog(TOOLS, method="semantic", model=str(folder), cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "embeddings").exists() or not any(
        (tmp_path / "cache" / "embeddings").iterdir())


# --------------------------------------------------------------------------- model failing mid-batch

class Poisoned(HashingEmbedder):
    """Embeds in chunks of 4 and fails (or returns NaN) at the first text containing 'POISON'."""

    def __init__(self, mode: str = "raise", dimension: int = 32) -> None:
        super().__init__(dimension, chunk_size=4)
        self.mode = mode
        self.armed = True

    def vector(self, text: str) -> np.ndarray:
        if self.armed and "POISON" in text:
            if self.mode == "raise":
                raise RuntimeError("model crashed (simulated)")
            return np.full(self.dimension, np.nan, dtype=np.float32)
        return super().vector(text)


def poison(i: int) -> Tool:
    return Tool(id=f"poison_{i}", name=f"poison_{i}", description="POISON refunds for charges")


def snapshot(catalog: ToolCatalog):
    return (
        [t.id for t in catalog.tools],
        [catalog.get(t.id) for t in catalog.tools],
        catalog.search_with(QUERY, 10, "bm25"),
        catalog.search_with(QUERY, 10, "semantic"),
        catalog.search_with(QUERY, 10, "hybrid"),
        catalog.explain(QUERY, TOOLS[0].id, "hybrid"),
        catalog.index.total_tokens,
        len(catalog.embedding_cache),
    )


@pytest.mark.parametrize(("mode", "message"), [("raise", "model crashed"), ("nan", "NaN")])
def test_a_model_failing_mid_batch_leaves_the_catalog_unchanged(tmp_path, mode, message) -> None:
    model = Poisoned(mode)
    catalog = ToolCatalog(TOOLS, method="hybrid", model=model, cache_dir=tmp_path)
    before = snapshot(catalog)
    file_before = catalog.embedding_cache.path.read_bytes()
    new = [Tool(id=f"new_{i}", name=f"new_{i}", description="Refund a duplicate charge") for i in range(6)]
    edited = TOOLS[1].model_copy(update={"description": TOOLS[1].description + " POISON"})
    with pytest.raises(EmbedderError, match=message):
        catalog.register([*new, poison(0), edited])
    assert model.texts_embedded > len(TOOLS)  # the first chunks of the batch were embedded ...
    assert snapshot(catalog) == before  # ... but nothing was registered, indexed or cached
    assert catalog.embedding_cache.path.read_bytes() == file_before
    model.armed = False
    assert catalog.register([*new, poison(0), edited]) == [*(t.id for t in new), "poison_0", TOOLS[1].id]
    assert catalog.search_with("duplicate charge refund", 3, "bm25").ids()[0].startswith("new_")


def test_a_model_failing_while_building_raises_and_caches_nothing(tmp_path) -> None:
    with pytest.raises(EmbedderError, match=r"failed while embedding .* nothing was cached"):
        ToolCatalog([*TOOLS, poison(1)], method="semantic", model=Poisoned(), cache_dir=tmp_path)
    assert not list((tmp_path / "embeddings").glob("*.rlemb"))


class BrokenQueries(HashingEmbedder):
    def embed_query(self, text: str) -> np.ndarray:
        raise RuntimeError("query encoder offline (simulated)")


def test_a_model_failing_on_the_query_is_an_embedder_error_and_bm25_still_works() -> None:
    catalog = ToolCatalog(TOOLS, method="hybrid", model=BrokenQueries(16), persistent_cache=False)
    for method in ("semantic", "hybrid"):
        with pytest.raises(EmbedderError, match="failed while embedding the query: RuntimeError: query encoder"):
            catalog.search_with(QUERY, 5, method)
    assert catalog.search_with(QUERY, 5, "bm25").ids() == ToolCatalog(TOOLS).search(QUERY, 5).ids()


class _FakeModel:
    """Stands in for a loaded SentenceTransformer; fails on a text containing 'POISON'."""

    def encode(self, texts, *, prompt, **kwargs):
        if any("POISON" in t for t in texts):
            raise RuntimeError("tokenizer exploded (simulated)")
        fake = HashingEmbedder(8)
        return np.stack([fake.vector(prompt + t) for t in texts])


def test_a_sentence_transformer_failing_mid_batch_through_the_facade(tmp_path) -> None:
    folder = st_folder(tmp_path)
    key = (str(folder.resolve()), "cpu")
    emb._MODELS[key] = _FakeModel()  # planted: no torch, no weights
    try:
        catalog = ToolCatalog(TOOLS[:5], method="semantic", model=str(folder), cache_dir=tmp_path / "c")
        before = snapshot(catalog)
        with pytest.raises(EmbedderError, match=r"tokenizer exploded.*nothing was cached"):
            catalog.register([Tool(id="x", name="x", description="fine"), poison(2)])
        assert snapshot(catalog) == before and "x" not in catalog
    finally:
        emb._MODELS.pop(key, None)


# --------------------------------------------------------------------------- cache: disk full, read-only

def fail_on_cache_files(monkeypatch, target: str, code: int) -> None:
    """Make ``target`` (os.replace, os.fsync or tempfile.mkstemp) fail with ``code`` for cache files."""
    real = {"replace": os.replace, "fsync": os.fsync, "mkstemp": tempfile.mkstemp}[target]

    def failing(*args, **kwargs):
        involved = " ".join(map(str, args)) + " " + " ".join(map(str, kwargs.values()))
        if target == "fsync" or ".rlemb" in involved or "embeddings" in involved:
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    module = tempfile if target == "mkstemp" else os
    monkeypatch.setattr(module, target, failing)


@pytest.mark.parametrize(("target", "code", "reason"), [
    ("replace", errno.ENOSPC, "disk full"),
    ("fsync", errno.ENOSPC, "disk full"),
    ("mkstemp", errno.EROFS, "read-only file system"),
    ("mkstemp", errno.EACCES, "Permission denied"),
])
def test_a_cache_that_cannot_be_written_falls_back_to_memory_and_keeps_the_old_file(
        tmp_path, monkeypatch, target, code, reason) -> None:
    old = ToolCatalog(TOOLS[:10], method="semantic", model=HashingEmbedder(32), cache_dir=tmp_path)
    path = old.embedding_cache.path
    file_before = path.read_bytes()
    fail_on_cache_files(monkeypatch, target, code)
    with pytest.warns(EmbeddingCacheWarning, match=rf"cannot write embedding cache .*{reason}.*memory only"):
        catalog = ToolCatalog(TOOLS, method="semantic", model=HashingEmbedder(32), cache_dir=tmp_path)
    cache = catalog.embedding_cache
    assert not cache.persistent and reason in cache.degraded_reason
    assert catalog.search_with(QUERY, 10, "semantic") == fresh_ranking(TOOLS)
    assert_vectors_are_fresh(catalog)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once, not at every edit
        catalog.register(Tool(id="late", name="late", description="Added after the disk filled"))
    assert "late" in catalog
    assert path.read_bytes() == file_before  # the previous file is intact ...
    assert not list(path.parent.glob("*.tmp"))  # ... and no temporary file is left behind
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and it still loads cleanly
        reopened = EmbeddingCache.for_embedder(HashingEmbedder(32), cache_dir=tmp_path)
    assert len(reopened) == 10


def test_a_read_only_cache_folder_for_real_when_chmod_blocks(tmp_path) -> None:
    folder = tmp_path / "cache" / "embeddings"
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    try:
        probe = folder / "probe"
        try:
            probe.write_bytes(b"")
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip("running as root: a mode 555 folder is still writable here; "
                        "the simulated EROFS/EACCES cases cover the same path")
        with pytest.warns(EmbeddingCacheWarning, match="memory only"):
            catalog = ToolCatalog(TOOLS, method="semantic", model=HashingEmbedder(32),
                                  cache_dir=tmp_path / "cache")
        assert catalog.search_with(QUERY, 10, "semantic") == fresh_ranking(TOOLS)
    finally:
        folder.chmod(0o755)


def test_a_cache_folder_that_cannot_be_created_falls_back_to_memory(tmp_path) -> None:
    (tmp_path / "file").write_text("a file where a folder should be")
    with pytest.warns(EmbeddingCacheWarning, match="cannot create embedding cache folder"):
        catalog = ToolCatalog(TOOLS, method="hybrid", model=HashingEmbedder(32),
                              cache_dir=tmp_path / "file" / "cache")
    assert catalog.embedding_cache.degraded_reason
    assert catalog.search_with(QUERY, 10, "hybrid") == fresh_ranking(TOOLS, method="hybrid")


def test_a_cache_folder_deleted_while_running_is_recreated(tmp_path) -> None:
    catalog = ToolCatalog(TOOLS[:10], method="semantic", model=HashingEmbedder(32), cache_dir=tmp_path)
    shutil.rmtree(tmp_path / "embeddings")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        catalog.register(TOOLS[10:])
    assert catalog.embedding_cache.persistent
    assert len(EmbeddingCache.for_embedder(HashingEmbedder(32), cache_dir=tmp_path)) == len(TOOLS)


# --------------------------------------------------------------------------- cache: damaged, other model

def warm(tmp_path: Path, embedder: HashingEmbedder, tools=TOOLS) -> Path:
    catalog = ToolCatalog(tools, method="semantic", model=embedder, cache_dir=tmp_path)
    return catalog.embedding_cache.path


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_vector_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-7] ^= 0x40
    path.write_bytes(bytes(data))


def other_model(path: Path) -> None:
    other = warm(path.parent.parent / "other", HashingEmbedder(32, doc_prefix="passage: "))
    shutil.copyfile(other, path)  # same name, same dimension, another model's vectors


def other_dimension(path: Path) -> None:
    other = warm(path.parent.parent / "other", HashingEmbedder(16))
    shutil.copyfile(other, path)


def a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize(("damage", "reason"), [
    (truncate, "truncated"),
    (flip_a_vector_byte, "checksum mismatch"),
    (other_model, "from another model"),
    (other_dimension, "from another model"),  # the fingerprint differs before the dimension does
    (a_folder, "unreadable"),
])
def test_a_damaged_or_foreign_cache_file_is_rebuilt_never_used(tmp_path, damage, reason) -> None:
    path = warm(tmp_path, HashingEmbedder(32))
    damage(path)
    model = HashingEmbedder(32)
    with pytest.warns(EmbeddingCacheWarning) as record:
        catalog = ToolCatalog(TOOLS, method="hybrid", model=model, cache_dir=tmp_path)
    messages = [str(w.message) for w in record]
    assert messages[0].startswith(f"embedding cache file {path} is ") and "rebuilding" in messages[0]
    assert reason in catalog.embedding_cache.rebuilt_reason
    assert model.texts_embedded == len(TOOLS)  # everything embedded afresh ...
    assert_vectors_are_fresh(catalog)  # ... so every vector is this model's
    for method in ("semantic", "hybrid"):
        assert catalog.search_with(QUERY, 10, method) == fresh_ranking(TOOLS, method=method)
    if path.is_file():  # rebuilt on disk: the next open is clean and embeds nothing
        again = HashingEmbedder(32)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ToolCatalog(TOOLS, method="semantic", model=again, cache_dir=tmp_path)
        assert again.texts_embedded == 0
    else:  # a folder in the way cannot be replaced: memory only, said once
        assert "Is a directory" in catalog.embedding_cache.degraded_reason
        assert len(messages) == 2 and "memory only" in messages[1]


def test_an_unreadable_cache_file_is_rebuilt(tmp_path, monkeypatch) -> None:
    path = warm(tmp_path, HashingEmbedder(32))
    real_open = Path.open

    def denied(self, *args, **kwargs):
        if self == path and args[:1] == ("rb",):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    with pytest.warns(EmbeddingCacheWarning, match=r"unreadable \(Permission denied\)"):
        catalog = ToolCatalog(TOOLS, method="semantic", model=HashingEmbedder(32), cache_dir=tmp_path)
    assert_vectors_are_fresh(catalog)
    assert catalog.search_with(QUERY, 10, "semantic") == fresh_ranking(TOOLS)
