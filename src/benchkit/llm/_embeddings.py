"""Embeddings: ``/embeddings`` requests through the LLM client, and the local model's own.

:meth:`benchkit.llm.LLMClient.embed` sends texts to an OpenAI-compatible ``/embeddings``
endpoint (``{"model": M, "input": [texts]}`` → ``data[i].embedding``,
``usage.prompt_tokens``) along the client's one path: each text's vector is cached by the
endpoint, the model and the text (embeddings are deterministic, so the cache is on unless
``cache=False``); a long list goes as requests of at most ``batch`` texts
(:data:`benchkit._limits.MAX_EMBEDDING_BATCH`); every request takes the client's rate
limits and retries (``Retry-After`` honoured); the prompt tokens are counted in its
:class:`~benchkit.llm.UsageMeter`, with a cost when the price table knows the model (else
none: "cost unknown", never 0); and the request and reply enter the cell's transcript. A
server without the route is one :class:`LLMError` saying so.

The embedded model (``local``) answers in this process instead (:class:`LlamaEmbedder`):
llama.cpp's embeddings mode over the shipped GGUF file, the mean of the last hidden layer
over the text's tokens, L2-normalised. What those vectors are worth is measured in
docs/llm.md ("Embeddings"): a chat model's mean-pooled states are a weak sentence
embedding, far from a trained one.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from benchkit import transcript
from benchkit._limits import MAX_EMBEDDING_BATCH
from benchkit.errors import ConfigError, LLMError
from benchkit.llm._config import Endpoint
from benchkit.llm._prices import Price
from benchkit.model import Usage
from benchkit.protocols import ResponseCache

__all__ = [
    "DEFAULT_BATCH",
    "EmbeddingBackend",
    "Embeddings",
    "InProcessEmbedder",
    "LlamaEmbedder",
    "cosine",
    "embed",
]

DEFAULT_BATCH = 64
"""Texts per ``/embeddings`` request unless the call says otherwise."""

LOCAL_MAX_TOKENS = 512
"""Tokens of a text the local model embeds; the rest is cut (as sentence encoders do)."""


class EmbeddingBackend(Protocol):
    """Answers embeddings requests for a client instead of its HTTP endpoint (the
    embedded model, in-process: :class:`InProcessEmbedder`). ``identity`` joins each
    text's cache key."""

    identity: Mapping[str, Any]

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], int]: ...


class _Meter(Protocol):
    def record(self, model: str, usage: Usage, *, cached: bool) -> None: ...


class LLMClient(Protocol):
    """What :func:`embed` uses of :class:`benchkit.llm.LLMClient` (which calls it: the
    client's module imports this one, not the other way round)."""

    @property
    def endpoint(self) -> Endpoint: ...
    @property
    def cache(self) -> ResponseCache | None: ...
    @property
    def cache_scope(self) -> str: ...
    @property
    def prices(self) -> Mapping[str, Price]: ...
    @property
    def usage(self) -> _Meter: ...
    @property
    def embedder(self) -> EmbeddingBackend | None: ...
    @property
    def model(self) -> str: ...

    async def _cache_get(self, key: str) -> str | None: ...

    async def _cache_put(self, key: str, value: str) -> None: ...

    async def _send(
        self, body: Mapping[str, Any], estimate: int, *, url: str | None = None
    ) -> dict[str, Any]: ...


@attrs.frozen
class Embeddings:
    """The vectors of a list of texts, in order, with what they cost.

    ``usage`` counts the prompt tokens of the requests actually sent (none when every
    vector came from the cache) and their cost when the model's price is known (None:
    unknown). ``cached`` is how many vectors the cache answered.

    .. versionadded:: 0.2.0
    """

    vectors: tuple[tuple[float, ...], ...]
    model: str
    usage: Usage
    cached: int = 0

    @property
    def dimensions(self) -> int:
        return len(self.vectors[0]) if self.vectors else 0


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors, in [-1, 1]; 0 when either is all zeros.

    >>> round(cosine([1.0, 0.0], [1.0, 1.0]), 4)
    0.7071
    """
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norms == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / norms))


async def embed(
    client: LLMClient,
    inputs: str | Sequence[str],
    *,
    model: str | None = None,
    cache: bool | None = None,
    batch: int = DEFAULT_BATCH,
) -> Embeddings:
    """The vectors of ``inputs`` from ``client``'s ``/embeddings`` endpoint (or its
    :attr:`~benchkit.llm.LLMClient.embedder`): see the module and
    :meth:`benchkit.llm.LLMClient.embed`."""
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    if not all(isinstance(text, str) for text in texts):
        raise ConfigError(
            "embeddings inputs must be strings", fix="pass a string or a list of strings."
        )
    if (
        isinstance(batch, bool)
        or not isinstance(batch, int)
        or not 1 <= batch <= MAX_EMBEDDING_BATCH
    ):
        raise ConfigError(
            f"batch={batch!r} must be a whole number from 1 to {MAX_EMBEDDING_BATCH:,}",
            fix=f"e.g. batch={DEFAULT_BATCH}.",
        )
    chosen = model or client.model
    backend = client.embedder
    identity = dict(backend.identity) if backend is not None else {}
    use_cache = client.cache is not None and cache is not False
    keys: list[str | None] = [
        _key(client, chosen, text, identity) if use_cache else None for text in texts
    ]
    found: list[tuple[float, ...] | None] = [None] * len(texts)
    for i, key in enumerate(keys):
        if key is not None:
            hit = await client._cache_get(key)
            if hit is not None:
                found[i] = tuple(float(x) for x in json.loads(hit))
    missing = [i for i, vector in enumerate(found) if vector is None]
    judge = transcript.judge()
    if transcript.active():
        transcript.record(
            "request" if judge is None else "judge_prompt",
            f"{'' if judge is None else judge + ': '}embeddings {chosen}",
            {"model": chosen, "input": texts, "cached": len(texts) - len(missing)},
        )
    started = time.perf_counter()
    tokens = 0
    replied = chosen
    for start in range(0, len(missing), batch):
        part = missing[start : start + batch]
        chunk = [texts[i] for i in part]
        if backend is not None:
            vectors, spent = await backend.embed(chunk)
        else:
            vectors, spent, replied = await _request(client, chosen, chunk)
        tokens += spent
        for i, vector in zip(part, vectors, strict=True):
            found[i] = tuple(vector)
            key = keys[i]
            if key is not None:
                await client._cache_put(key, json.dumps(vector))
    usage = Usage(tokens, 0)
    if missing:
        price = client.prices.get(replied) or client.prices.get(chosen) or _builtin(replied)
        if price is not None:
            usage = Usage(tokens, 0, price.cost(usage))
    client.usage.record(chosen, usage, cached=not missing)
    result = Embeddings(
        tuple(v for v in found if v is not None), replied, usage, len(texts) - len(missing)
    )
    if transcript.active():
        transcript.record(
            "response" if judge is None else "judge_reply",
            f"{'' if judge is None else judge + ': '}{replied}: {len(texts)} embedding(s)"
            + (" (cached)" if not missing else ""),
            {"dimensions": result.dimensions, "usage": {"prompt": tokens}, "cached": result.cached},
            duration=(time.perf_counter() - started) if missing else None,
        )
    return result


def _builtin(model: str) -> Price | None:
    from benchkit.llm._prices import builtin_prices

    return builtin_prices().find(model)


def _key(client: LLMClient, model: str, text: str, identity: Mapping[str, Any]) -> str:
    from benchkit.llm._cache import cache_key

    return cache_key(client.cache_scope, model, {"embeddings": text, **identity})


async def _request(
    client: LLMClient, model: str, texts: Sequence[str]
) -> tuple[list[list[float]], int, str]:
    """One ``/embeddings`` request: the vectors in input order, the prompt tokens counted
    and the model that answered."""
    url = client.endpoint.base_url.rstrip("/") + "/embeddings"
    body = {"model": model, "input": list(texts)}
    estimate = sum(len(text) for text in texts) // 4 + 1
    try:
        payload = await client._send(body, estimate, url=url)
    except LLMError as exc:
        if exc.status in (404, 405, 501):
            raise LLMError(
                f"{url} answered HTTP {exc.status}: the endpoint has no /embeddings route, "
                "which embeddings need (an OpenAI-compatible POST /embeddings; or use the "
                "local model, `local`, which embeds offline)",
                kind=exc.kind,
                status=exc.status,
                attempts=exc.attempts,
            ) from exc
        raise
    return (*_vectors(payload, len(texts), url), str(payload.get("model") or model))


def _vectors(payload: Mapping[str, Any], count: int, url: str) -> tuple[list[list[float]], int]:
    """``data[i].embedding`` in input order (by ``index`` when given) and
    ``usage.prompt_tokens``; an ``invalid_response`` error for any other shape."""
    data = payload.get("data")

    def wrong(problem: str) -> LLMError:
        excerpt = json.dumps(payload, default=str)[:200]
        return LLMError(
            f"embeddings reply from {url} {problem}: {excerpt}", kind="invalid_response"
        )

    if not isinstance(data, list) or len(data) != count:
        raise wrong(f"does not hold {count} item(s) under data")
    vectors: list[list[float] | None] = [None] * count
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, Mapping) else None
        vector = item.get("embedding") if isinstance(item, Mapping) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise wrong(f"has a bad index at data[{position}]")
        if (
            not isinstance(vector, list)
            or not vector
            or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in vector
            )
        ):
            raise wrong(f"has no list of finite numbers at data[{position}].embedding")
        vectors[index] = [float(x) for x in vector]
    if any(v is None for v in vectors) or len({len(v or ()) for v in vectors}) > 1:
        raise wrong("does not give one vector of one length per input")
    usage = payload.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    counted = (
        int(tokens)
        if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and tokens >= 0
        else 0
    )
    return [v for v in vectors if v is not None], counted


class LlamaEmbedder:
    """A GGUF model loaded in this process for embeddings: llama.cpp's embeddings mode,
    mean pooling over the text's tokens, L2-normalised. A text longer than ``max_tokens``
    is cut there. Thread-safe: calls take turns on the one llama.cpp context."""

    def __init__(self, path: Path, *, max_tokens: int = LOCAL_MAX_TOKENS) -> None:
        from benchkit.llm._scorer import _native, default_threads

        native = _native()
        self.path = path
        self.max_tokens = max_tokens
        self._native = native
        self._lock = threading.Lock()
        params = native.llama_model_default_params()
        params.n_gpu_layers = 0
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        self._model = native.llama_model_load_from_file(str(path).encode(), params)
        if not self._model:
            raise LLMError(f"llama.cpp could not load the model file {path}", kind="bad_request")
        self._vocab = native.llama_model_get_vocab(self._model)
        self.dimensions = int(native.llama_model_n_embd(self._model))
        # One thread unless $BENCHKIT_LOCAL_THREADS says otherwise: a sentence is a dozen
        # tokens, too little work to share; on the 2-core VM under load (20), 1 thread
        # embedded 1.3 texts/s and 2 threads 0.2 (perf/RESULTS.md).
        threads = default_threads() if os.environ.get("BENCHKIT_LOCAL_THREADS") else 1
        cparams = native.llama_context_default_params()
        cparams.n_ctx = max_tokens + 8
        cparams.n_batch = max_tokens + 8
        cparams.n_ubatch = max_tokens + 8
        cparams.n_seq_max = 1
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.embeddings = True
        cparams.pooling_type = native.LLAMA_POOLING_TYPE_MEAN
        cparams.no_perf = True
        # llama.cpp complains, at its error level, that a chat model's file names no
        # pooling: choosing one is the point here, so that line is not shown.
        quiet = logging.getLogger("llama-cpp-python")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        try:
            self._ctx = native.llama_init_from_model(self._model, cparams)
        finally:
            quiet.setLevel(level)
        if not self._ctx:
            native.llama_model_free(self._model)
            raise LLMError(f"llama.cpp could not make a context for {path}", kind="bad_request")
        self._memory = native.llama_get_memory(self._ctx)
        self._batch = native.llama_batch_init(max_tokens + 8, 0, 1)

    def __repr__(self) -> str:
        return f"LlamaEmbedder({self.path.name!r}, dimensions={self.dimensions})"

    def tokenize(self, text: str) -> list[int]:
        """``text``'s tokens, the model's beginning-of-text token first when it wants one."""
        import ctypes

        raw = text.encode("utf-8")
        buffer = (ctypes.c_int32 * (len(raw) + 8))()
        count = self._native.llama_tokenize(
            self._vocab, raw, len(raw), buffer, len(buffer), True, False
        )
        if count < 0:
            raise LLMError(
                f"llama.cpp could not tokenise a text of {len(raw)} bytes", kind="bad_request"
            )
        return list(buffer[:count])

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        """Each text's unit vector, in order, and the tokens evaluated."""
        native = self._native
        vectors: list[list[float]] = []
        evaluated = 0
        with self._lock:
            for text in texts:
                tokens = self.tokenize(text)[: self.max_tokens]
                if not tokens:
                    vectors.append([0.0] * self.dimensions)
                    continue
                native.llama_memory_clear(self._memory, True)
                batch = self._batch
                for i, token in enumerate(tokens):
                    batch.token[i] = token
                    batch.pos[i] = i
                    batch.n_seq_id[i] = 1
                    batch.seq_id[i][0] = 0
                    batch.logits[i] = 1
                batch.n_tokens = len(tokens)
                status = native.llama_decode(self._ctx, batch)
                if status != 0:
                    raise LLMError(
                        f"llama.cpp could not embed a text (status {status})", kind="server_error"
                    )
                pointer = native.llama_get_embeddings_seq(self._ctx, 0)
                if not pointer:
                    raise LLMError("llama.cpp returned no pooled embedding", kind="server_error")
                vector = [float(x) for x in pointer[: self.dimensions]]
                norm = math.sqrt(math.fsum(x * x for x in vector))
                vectors.append([x / norm for x in vector] if norm > 0 else vector)
                evaluated += len(tokens)
        return vectors, evaluated


_embedders_lock = threading.Lock()
_embedders: dict[tuple[str, int], LlamaEmbedder] = {}


class InProcessEmbedder:
    """An :class:`~benchkit.llm.LLMClient`'s embeddings backend for a GGUF file: the
    process's :class:`LlamaEmbedder` for it, loaded on the first request the cache does
    not answer, called in a worker thread."""

    #: What the cache key names besides the model file (its hash) and the text.
    identity: Mapping[str, Any] = {"embedder": "llama.cpp mean-pooled, L2-normalised"}

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"InProcessEmbedder({self.path.name!r})"

    def load(self) -> LlamaEmbedder:
        key = (str(self.path), os.getpid())
        with _embedders_lock:
            embedder = _embedders.get(key)
            if embedder is None:
                embedder = _embedders[key] = LlamaEmbedder(self.path)
            return embedder

    async def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        import anyio.to_thread

        def work() -> tuple[list[list[float]], int]:
            return self.load().embed(texts)

        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
