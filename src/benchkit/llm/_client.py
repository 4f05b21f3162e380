"""The one LLM client: OpenAI-compatible chat completions over httpx.

Rate-limited (requests, tokens, concurrency), retried with backoff that honours
``Retry-After``, cached for temperature 0, and accounted (tokens, cost). Judges, chat
providers and every format that needs a model go through it. Log-likelihood requests
(:meth:`LLMClient.loglikelihood`: ``/completions`` with ``echo`` and ``logprobs``) take the
same path.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs
import httpx

from benchkit import _secrets, transcript
from benchkit._bounds import BodyTooLarge, read_capped
from benchkit._repeat import JUDGE_REPEAT
from benchkit.errors import ConfigError, LLMError
from benchkit.llm import _anthropic
from benchkit.llm._cache import ResponseCache, cache_key
from benchkit.llm._config import DEFAULT_BASE_URL, Endpoint, resolve_endpoint
from benchkit.llm._embeddings import EmbeddingBackend, Embeddings, embed
from benchkit.llm._limits import RateLimiter, RateLimits
from benchkit.llm._loglik import Loglikelihood, LoglikelihoodRequest, boundary, echoed_logprob
from benchkit.llm._prices import Price, builtin_prices
from benchkit.model import ToolCall, Usage

_log = logging.getLogger("benchkit.llm")

__all__ = ["ChatResult", "LLMClient", "LLMError", "Price", "UsageMeter"]

Message = Mapping[str, Any]

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_FINAL = frozenset({"bad_request", "auth_error", "response_too_large"})  # never retried
_ERROR_BODY = 65_536  # of an error reply, only an excerpt is shown: read no more than this


class LoglikelihoodBackend(Protocol):
    """Answers log-likelihood requests for a client instead of its HTTP endpoint (the
    embedded model scores in-process: :class:`benchkit.llm._scorer.InProcessScorer`).
    ``identity`` joins each request's cache key."""

    identity: Mapping[str, Any]

    async def score(
        self, requests: Sequence[LoglikelihoodRequest]
    ) -> tuple[list[Loglikelihood], int]: ...


@attrs.frozen
class ChatResult:
    """One chat completion: the text, tool calls, usage and where it came from."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    model: str
    finish_reason: str | None
    latency_ms: float
    cached: bool
    raw: Mapping[str, Any] = attrs.field(repr=False)


@attrs.define
class _ModelUsage:
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a request spent tokens at an unknown price


class UsageMeter:
    """Running totals of what a client spent, per model; cached replies count apart."""

    def __init__(self) -> None:
        self.models: dict[str, _ModelUsage] = {}

    def record(self, model: str, usage: Usage, *, cached: bool) -> None:
        entry = self.models.setdefault(model, _ModelUsage())
        if cached:
            entry.cached += 1
            return
        entry.requests += 1
        spent = Usage(entry.prompt_tokens, entry.completion_tokens, entry.cost_usd) + usage
        entry.prompt_tokens = spent.prompt_tokens
        entry.completion_tokens = spent.completion_tokens
        entry.cost_usd = spent.cost_usd

    def summary(self) -> dict[str, dict[str, float | None]]:
        """``{model: {requests, cached, prompt_tokens, completion_tokens, cost_usd}}``;
        ``cost_usd`` is None when some of the model's tokens had no known price."""
        return {model: attrs.asdict(entry) for model, entry in sorted(self.models.items())}

    def total(self) -> Usage:
        """All models' uncached tokens and cost as one :class:`Usage`."""
        total = Usage()
        for entry in self.models.values():
            total = total + Usage(entry.prompt_tokens, entry.completion_tokens, entry.cost_usd)
        return total


class LLMClient:
    """Chat completions against an OpenAI-compatible endpoint.

    Settings come from the arguments, else the environment (``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``, or the variable names given in ``base_url_env`` / ``api_key_env``
    / ``model_env``). ``cache`` is a :class:`ResponseCache` (a benchkit ``Store`` is one)
    or None for no cache (the default); it is used for temperature-0 requests unless a
    call says otherwise. The client never opens a store itself: whoever owns the store
    hands it in (the Runner passes its ``response_cache`` to the plug-ins it builds).

        >>> client = LLMClient(base_url="http://127.0.0.1:8000/v1", model="local", cache=None)
        >>> client
        LLMClient(base_url='http://127.0.0.1:8000/v1', model='local')

    Usage: ``result = await client.chat([{"role": "user", "content": "Hi"}])``.

    **Bounds.** ``timeout`` is a deadline on each attempt as a whole — connecting, sending,
    and reading the reply to its last byte — so a server that drips its answer cannot make
    a call last longer (a retry gets a deadline of its own). A reply body larger than
    ``max_response_bytes`` (default 10 MB) is refused as soon as its ``Content-Length`` or
    the bytes read so far say so, with an :class:`LLMError` of kind
    ``response_too_large`` that is not retried; the body is streamed, never buffered whole.

    **Protocols.** ``protocol="anthropic"``, or a model named ``anthropic:NAME``, speaks
    Anthropic's Messages API instead (``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` unless
    other variables are named; docs/llm.md, "Protocols"); requests and replies keep the
    shapes above.

    .. versionchanged:: 0.2.0
       ``protocol``.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        base_url_env: Sequence[str] = ("OPENAI_BASE_URL",),
        api_key_env: Sequence[str] = ("OPENAI_API_KEY",),
        model_env: Sequence[str] = (),
        default_model: str | None = None,
        timeout: float = 60.0,
        max_response_bytes: int = 10_000_000,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_after: float = 120.0,
        limits: RateLimits | RateLimiter | None = None,
        cache: ResponseCache | None = None,
        prices: Mapping[str, Price] | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        protocol: str | None = None,
    ) -> None:
        spoken = _anthropic.resolve(protocol, model, base_url_env, api_key_env)
        #: ``openai`` (chat completions) or ``anthropic`` (the Messages API).
        self.protocol = spoken.protocol
        self.endpoint: Endpoint = resolve_endpoint(
            base_url=base_url,
            api_key=api_key,
            model=spoken.model,
            base_url_env=spoken.base_url_env,
            api_key_env=spoken.api_key_env,
            model_env=model_env,
            default_model=default_model,
            default_base_url=spoken.default_base_url or DEFAULT_BASE_URL,
        )
        if max_retries < 0 or timeout <= 0 or not max_retry_after >= 0:
            raise ConfigError(
                "max_retries and max_retry_after must be >= 0 and timeout > 0",
                fix="e.g. max_retries=4, timeout=60, max_retry_after=120.",
            )
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes <= 0
        ):
            raise ConfigError(
                f"max_response_bytes must be a positive integer, got {max_response_bytes!r}",
                fix="e.g. max_response_bytes=10_000_000 (10 MB).",
            )
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.limiter = limits if isinstance(limits, RateLimiter) else RateLimiter(limits)
        if cache is not None and not isinstance(cache, ResponseCache):
            raise ConfigError(
                f"cache={cache!r} is not a cache",
                fix="pass a Store, a MemoryCache (anything with cache_get / cache_put) or None.",
            )
        self.cache = cache
        # What the cache key names as the endpoint: its URL, or something steadier (the
        # local model's file hash: its server's port changes from process to process).
        self.cache_scope = self.endpoint.base_url
        self.prices = dict(prices or {})
        #: Whether judges send ``json_schema`` response formats: False once the endpoint
        #: refused one (benchkit.evaluators._verdict), so later requests go without.
        self.json_schema = True
        self.usage = UsageMeter()
        self._headers = dict(headers or {})
        # Its key and credential headers are redacted wherever benchkit stores or shows text.
        _secrets.add(self.endpoint.api_key)
        for name, value in self._headers.items():
            _secrets.add_header(name, value)
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._http_token: object | None = None
        self._rng = random.Random()
        #: Answers :meth:`loglikelihood` instead of the endpoint when set.
        self.scorer: LoglikelihoodBackend | None = None
        #: Answers :meth:`embed` instead of the endpoint when set (the local model's).
        self.embedder: EmbeddingBackend | None = None

    def __repr__(self) -> str:
        spoken = "" if self.protocol == _anthropic.OPENAI else f", protocol={self.protocol!r}"
        return (
            f"LLMClient(base_url={self.endpoint.base_url!r}, model={self.endpoint.model!r}{spoken})"
        )

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def _chat_url(self) -> str:
        if self.protocol == _anthropic.ANTHROPIC:
            return _anthropic.url(self.endpoint.base_url)
        return self.endpoint.chat_url

    def _client(self) -> httpx.AsyncClient:
        token = anyio.lowlevel.current_token()
        if self._http is None or self._http_token != token:
            headers = {"Content-Type": "application/json", **self._headers}
            if self.protocol == _anthropic.ANTHROPIC:
                headers.update(_anthropic.headers(self.endpoint.api_key))
            elif self.endpoint.api_key:
                headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
            slots = self.limiter.limits.max_concurrency or 100
            self._http = httpx.AsyncClient(
                headers=headers,
                timeout=self.timeout,
                transport=self._transport,
                limits=httpx.Limits(max_connections=slots, max_keepalive_connections=slots),
            )
            self._http_token = token
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP connections of the current event loop's client."""
        if self._http is not None and self._http_token == anyio.lowlevel.current_token():
            await self._http.aclose()
        self._http = None
        self._http_token = None

    async def chat(
        self,
        messages: Sequence[Message] | str,
        *,
        model: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        cache: bool | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """Send one chat completion request and return its first choice.

        A plain string is sent as one user message. ``cache=None`` caches temperature-0
        requests only; True or False forces it. Raises :class:`LLMError` after the last
        retry.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        chosen = model or self.endpoint.model
        if seed is None:  # a judge's repeat (RunOptions.judge_repeats): its own request
            seed = JUDGE_REPEAT.get() or None
        body: dict[str, Any] = {"model": chosen, "messages": list(messages)}
        body["temperature"] = temperature
        optional = {
            "max_tokens": max_tokens,
            "seed": seed,
            "tools": list(tools) if tools else None,
            "tool_choice": tool_choice,
            "response_format": response_format,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        body.update(extra or {})
        use_cache = self.cache is not None and (temperature == 0 if cache is None else cache)
        key = cache_key(self.cache_scope, chosen, body) if use_cache else None
        sent = body if self.protocol == _anthropic.OPENAI else _anthropic.request(body)
        judge = transcript.judge()
        if judge is None:
            transcript.record("request", f"chat {chosen}", sent)
        else:
            transcript.record("judge_prompt", f"{judge}: {chosen}", sent)
        if key is not None:
            hit = await self._cache_get(key)
            if hit is not None:
                result = self._parse(json.loads(hit), chosen, 0.0, cached=True, sent=body)
                self.usage.record(chosen, result.usage, cached=True)
                _record_reply(result, cached=True)
                return result
        estimate = _estimate_tokens(sent)
        started = time.perf_counter()
        payload = await self._send(sent, estimate)
        latency = (time.perf_counter() - started) * 1000.0
        result = self._parse(payload, chosen, latency, cached=False, sent=body)
        self.usage.record(chosen, result.usage, cached=False)
        _record_reply(result, cached=False)
        if key is not None:
            await self._cache_put(key, json.dumps(payload, ensure_ascii=False))
        return result

    async def embed(
        self,
        inputs: str | Sequence[str],
        *,
        model: str | None = None,
        cache: bool | None = None,
        batch: int = 64,
    ) -> Embeddings:
        """The embedding vectors of ``inputs`` (a text or a list), in order, from the
        endpoint's ``/embeddings`` (OpenAI's shape), at most ``batch`` texts a request;
        cached per text unless ``cache=False``, rate-limited, retried, counted in
        :attr:`usage` and recorded in the cell's transcript as chat replies are
        (:mod:`benchkit.llm._embeddings`). A server without the route is an
        :class:`LLMError` saying so; the local model embeds in-process.

        .. versionadded:: 0.2.0
        """
        if self.protocol == _anthropic.ANTHROPIC:
            raise LLMError(
                "the anthropic protocol has no embeddings (the Messages API has no embeddings "
                "route): name an OpenAI-compatible endpoint or local for embeddings",
                kind="bad_request",
            )
        return await embed(self, inputs, model=model, cache=cache, batch=batch)

    async def loglikelihood(
        self,
        requests: Sequence[LoglikelihoodRequest],
        *,
        model: str | None = None,
        cache: bool | None = None,
    ) -> list[Loglikelihood]:
        """log P(continuation | context) of each request, in order.

        Each pair is split at the boundary as published benchmarks do (trailing whitespace
        of the context moves to the continuation: :func:`benchkit.llm.boundary`) and sent
        as one ``/completions`` request with ``echo`` and ``logprobs``; the answer is the
        sum over the echoed tokens of the continuation. A server that cannot answer (no
        ``/completions``, no echo, no log-probabilities) is an :class:`LLMError` saying
        what it lacks. Answers are cached (unless ``cache=False``), rate-limited, retried,
        counted in :attr:`usage` (the prompt's tokens) and recorded in the cell's
        transcript, as chat replies are. The embedded model answers in-process instead
        (:class:`benchkit.llm.LocalClient`).

        .. versionadded:: 0.2.0
        """
        answers, _, _ = await self.loglikelihood_usage(requests, model=model, cache=cache)
        return answers

    async def loglikelihood_usage(
        self,
        requests: Sequence[LoglikelihoodRequest],
        *,
        model: str | None = None,
        cache: bool | None = None,
    ) -> tuple[list[Loglikelihood], Usage, bool]:
        """:meth:`loglikelihood`, with the call's usage (the tokens evaluated) and whether
        the cache answered every request."""
        chosen = model or self.endpoint.model
        pending = list(requests)
        bodies = [self._loglikelihood_body(chosen, r) for r in pending]
        if transcript.active():
            transcript.record(
                "request",
                f"loglikelihood {chosen} ({len(pending)} continuation{'s' if len(pending) != 1 else ''})",
                {
                    "contexts": sorted({r.context for r in pending}),
                    "continuations": [r.continuation for r in pending],
                },
            )
        use_cache = self.cache is not None and cache is not False
        keys = [cache_key(self.cache_scope, chosen, body) if use_cache else None for body in bodies]
        found: list[Loglikelihood | None] = [None] * len(pending)
        for i, key in enumerate(keys):
            if key is not None:
                hit = await self._cache_get(key)
                if hit is not None:
                    try:
                        found[i] = Loglikelihood.from_json(json.loads(hit))
                    except ValueError:
                        found[i] = None  # an entry of another shape: ask again
        missing = [i for i, answer in enumerate(found) if answer is None]
        started = time.perf_counter()
        if missing:
            scored, prompt_tokens = await self._loglikelihoods(
                [pending[i] for i in missing], [bodies[i] for i in missing], chosen
            )
            for i, answer in zip(missing, scored, strict=True):
                found[i] = answer
                if keys[i] is not None:
                    await self._cache_put(keys[i] or "", json.dumps(answer.to_json()))
            spent = Usage(prompt_tokens, 0)
            self.usage.record(chosen, spent, cached=False)
        else:
            spent = Usage()
            self.usage.record(chosen, spent, cached=True)
        answers = [a for a in found if a is not None]
        if transcript.active():
            transcript.record(
                "response",
                f"{chosen}: log-likelihoods{' (cached)' if not missing else ''}",
                {"logprobs": [a.logprob for a in answers], "tokens": [a.tokens for a in answers]},
                duration=(time.perf_counter() - started) if missing else None,
            )
        return answers, spent, not missing

    def _loglikelihood_body(self, model: str, request: LoglikelihoodRequest) -> dict[str, Any]:
        """The ``/completions`` body asking for ``request`` (also its cache identity): the
        whole text echoed with one log-probability per token, one token generated (some
        servers refuse ``max_tokens: 0``). With a :attr:`scorer`, the request and the
        scorer's identity."""
        context, continuation = boundary(request.context, request.continuation)
        if self.scorer is not None:
            return {
                "model": model,
                "loglikelihood": [context, continuation],
                **self.scorer.identity,
            }
        return {
            "model": model,
            "prompt": context + continuation,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": True,
            "logprobs": 1,
        }

    async def _loglikelihoods(
        self,
        requests: Sequence[LoglikelihoodRequest],
        bodies: Sequence[Mapping[str, Any]],
        model: str,
    ) -> tuple[list[Loglikelihood], int]:
        """Answer ``requests`` (none cached): the :attr:`scorer`'s, else one
        ``/completions`` call each. Returns the answers and the prompt tokens counted."""
        if self.scorer is not None:
            return await self.scorer.score(requests)
        if self.protocol == _anthropic.ANTHROPIC:
            raise LLMError(
                "the anthropic protocol has no log-likelihoods (the Messages API returns no "
                "token log-probabilities): score multiple-choice tasks with a model served "
                "OpenAI-compatibly (/completions with echo and logprobs), or with local",
                kind="bad_request",
            )
        url = self.endpoint.base_url.rstrip("/") + "/completions"
        answers: list[Loglikelihood] = []
        spent = 0
        for request, body in zip(requests, bodies, strict=True):
            try:
                payload = await self._send(body, _estimate_tokens(body), url=url)
            except LLMError as exc:
                if exc.status in (404, 405, 501):
                    raise LLMError(
                        f"{url} answered HTTP {exc.status}: the endpoint has no /completions "
                        "route, which log-likelihood scoring needs (an OpenAI-compatible "
                        "/completions with echo and logprobs, as vLLM and llama.cpp's server "
                        "have)",
                        kind=exc.kind,
                        status=exc.status,
                        attempts=exc.attempts,
                    ) from exc
                raise
            context, _ = boundary(request.context, request.continuation)
            answers.append(echoed_logprob(payload, str(body["prompt"]), len(context), url))
            usage = payload.get("usage")
            counted = _count(usage, "prompt_tokens") if isinstance(usage, Mapping) else None
            spent += counted or 0
        return answers, spent

    def _parse_messages(
        self,
        payload: Mapping[str, Any],
        model: str,
        latency_ms: float,
        *,
        cached: bool,
        sent: Mapping[str, Any],
    ) -> ChatResult:
        """A Messages API reply (the ``anthropic`` protocol), priced like any other."""
        reply = _anthropic.parse(payload, sent)
        replied = reply.model or model
        usage = reply.usage
        price = self.prices.get(replied) or self.prices.get(model) or builtin_prices().find(replied)
        if price is not None:
            usage = Usage(usage.prompt_tokens, usage.completion_tokens, reply.cost(price))
        return ChatResult(
            text=reply.text,
            tool_calls=reply.tool_calls,
            usage=usage,
            model=replied,
            finish_reason=reply.finish_reason,
            latency_ms=latency_ms,
            cached=cached,
            raw=payload,
        )

    async def _cache_get(self, key: str) -> str | None:
        assert self.cache is not None
        return await anyio.to_thread.run_sync(self.cache.cache_get, key)

    async def _cache_put(self, key: str, value: str) -> None:
        assert self.cache is not None
        await anyio.to_thread.run_sync(self.cache.cache_put, key, value)

    async def _send(
        self, body: Mapping[str, Any], estimate: int, *, url: str | None = None
    ) -> dict[str, Any]:
        url = url or self._chat_url  # read now: a local server's port is known only once it runs
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            retry_header: str | None = None
            # Made before the limiter lets the request go: building a client blocks the
            # loop for ~0.1 s, which would send this request together with the next one.
            http = self._client()
            waiting = time.perf_counter()
            async with self.limiter.slot(estimate) as settle:
                waited = time.perf_counter() - waiting
                if waited >= 0.05:  # held back by this client's own request / token limits
                    transcript.record(
                        "rate_limit",
                        f"waited {waited:.2f}s for the rate limiter",
                        {"estimated_tokens": estimate},
                        duration=waited,
                    )
                try:
                    with anyio.fail_after(self.timeout):
                        status, headers, content = await self._post(http, url, body)
                except TimeoutError:
                    failure = LLMError(
                        f"request to {url} timed out after {self.timeout:g}s "
                        "(the whole request, reply included)",
                        kind="timeout",
                        attempts=attempt,
                    )
                except httpx.TimeoutException as exc:
                    failure = LLMError(
                        f"request to {url} timed out after {self.timeout:g}s ({type(exc).__name__})",
                        kind="timeout",
                        attempts=attempt,
                    )
                except BodyTooLarge as exc:
                    failure = LLMError(
                        f"reply from {url} exceeded max_response_bytes={exc.limit} ({exc.seen})",
                        kind="response_too_large",
                        attempts=attempt,
                    )
                except httpx.HTTPError as exc:
                    failure = LLMError(
                        f"cannot reach {url}: {type(exc).__name__}: {exc}",
                        kind="connection_error",
                        attempts=attempt,
                    )
                else:
                    if 200 <= status < 300:
                        try:
                            payload = _json_body(content, status, url, attempt)
                        except LLMError as exc:
                            failure = exc
                        else:
                            settle(_spent_tokens(payload.get("usage"), estimate))
                            return payload
                    else:
                        failure = _status_error(status, content, url, attempt)
                        retry_header = headers.get("retry-after")
                        retry_after = _retry_after(retry_header)
                    settle(0)
            if retry_after is not None and retry_after > self.max_retry_after:
                raise LLMError(
                    f"{failure.message} (the server asked to wait {retry_header!r} (Retry-After), "
                    f"longer than max_retry_after={self.max_retry_after:g}s; "
                    f"gave up after {attempt} attempt{'s' if attempt > 1 else ''})",
                    kind="rate_limited",
                    status=failure.status,
                    attempts=attempt,
                )
            if failure.kind in _FINAL or attempt > self.max_retries:
                if attempt == 1:
                    raise failure
                raise LLMError(
                    f"{failure.message} (gave up after {attempt} attempts)",
                    kind=failure.kind,
                    status=failure.status,
                    attempts=attempt,
                )
            delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
            delay *= 0.5 + self._rng.random()
            if retry_after is not None:
                delay = max(delay, retry_after)
            transcript.record(
                "rate_limit"
                if retry_after is not None or failure.kind == "rate_limited"
                else "retry",
                f"attempt {attempt} failed ({failure.kind}): retrying in {delay:.2f}s",
                {"error": failure.message, "status": failure.status, "retry_after": retry_header},
                duration=delay,
            )
            _log.info(
                "chat request to %s failed (%s, attempt %d): retrying in %.2fs%s",
                url,
                failure.kind,
                attempt,
                delay,
                " (Retry-After)" if retry_after is not None else "",
            )
            await anyio.sleep(delay)

    async def _post(
        self, http: httpx.AsyncClient, url: str, body: Mapping[str, Any]
    ) -> tuple[int, httpx.Headers, bytes]:
        """POST ``body`` and read the reply, streamed and capped (the caller sets the deadline).

        A success is read up to ``max_response_bytes`` (over it: :class:`BodyTooLarge`); of
        an error reply, only the start is read, for the message.
        """
        async with http.stream("POST", url, json=body) as response:
            if response.is_success:
                content = await read_capped(response, self.max_response_bytes)
            else:
                limit = min(self.max_response_bytes, _ERROR_BODY)
                content = await read_capped(response, limit, keep=True)
            return response.status_code, response.headers, content

    def _parse(
        self,
        payload: Mapping[str, Any],
        model: str,
        latency_ms: float,
        *,
        cached: bool,
        sent: Mapping[str, Any],
    ) -> ChatResult:
        if self.protocol == _anthropic.ANTHROPIC:
            return self._parse_messages(payload, model, latency_ms, cached=cached, sent=sent)
        try:
            choice = payload["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise _shape_error("has no choices[0].message", payload) from exc
        if not isinstance(choice, Mapping) or not isinstance(message, Mapping):
            raise _shape_error("choices[0].message is not an object", payload)
        raw_usage = payload.get("usage")
        if raw_usage is None:
            raw_usage = {}
        if not isinstance(raw_usage, Mapping):
            raise _shape_error("usage is not an object", payload)
        counts = {name: _count(raw_usage, name) for name in ("prompt_tokens", "completion_tokens")}
        for name, value in counts.items():
            if value is None:
                raise _shape_error(f"usage.{name} is not a non-negative integer", payload)
        usage = Usage(counts["prompt_tokens"] or 0, counts["completion_tokens"] or 0)
        replied = str(payload.get("model") or model)
        price = self.prices.get(replied) or self.prices.get(model) or builtin_prices().find(replied)
        if price is not None:
            details = raw_usage.get("prompt_tokens_details")
            cached_tokens = _count(details, "cached_tokens") if isinstance(details, Mapping) else 0
            cost = price.cost(usage, cached_tokens or 0)
            usage = Usage(usage.prompt_tokens, usage.completion_tokens, cost)
        content = message.get("content")
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list) or not all(
            isinstance(call, Mapping) and isinstance(call.get("function") or {}, Mapping)
            for call in raw_calls
        ):
            raise _shape_error("message.tool_calls is not a list of tool-call objects", payload)
        finish = choice.get("finish_reason")
        return ChatResult(
            text=content if isinstance(content, str) else None,
            tool_calls=tuple(_tool_call(call) for call in raw_calls),
            usage=usage,
            model=str(payload.get("model") or model),
            finish_reason=finish if isinstance(finish, str) else None,
            latency_ms=latency_ms,
            cached=cached,
            raw=payload,
        )


def _spent_tokens(usage: Any, estimate: int) -> int:
    """The tokens a reply's ``usage`` counts (OpenAI's ``total_tokens``, Anthropic's
    input and output counts), else the request's estimate."""
    if not isinstance(usage, Mapping):
        return estimate
    if "total_tokens" in usage:
        total = _count(usage, "total_tokens")
        return estimate if total is None else total
    counted = _anthropic.tokens(usage)
    return estimate if counted is None else counted


def _shape_error(problem: str, payload: Mapping[str, Any]) -> LLMError:
    """An ``invalid_response`` error for a JSON reply of the wrong shape, with an excerpt."""
    excerpt = json.dumps(payload, ensure_ascii=False, default=str)
    if len(excerpt) > 200:
        excerpt = excerpt[:200] + "..."
    return LLMError(f"reply {problem}: {excerpt}", kind="invalid_response")


def _count(usage: Mapping[str, Any], name: str) -> int | None:
    """A token count from ``usage``: 0 when absent, None when not a non-negative integer."""
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value < 0 or value == float("inf") or value != int(value):
        return None
    return int(value)


def _estimate_tokens(body: Mapping[str, Any]) -> int:
    """A cheap upper-ish estimate (4 characters a token) for the token bucket."""
    text = json.dumps(body.get("messages", body.get("prompt", [])), ensure_ascii=False)
    return len(text) // 4 + int(body.get("max_tokens") or 256)


def _tool_call(call: Mapping[str, Any]) -> ToolCall:
    function: Mapping[str, Any] = call.get("function") or {}
    arguments: Any = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = {"_raw": arguments}
    if not isinstance(arguments, Mapping):
        arguments = {"_value": arguments}
    call_id = call.get("id")
    return ToolCall(
        str(function.get("name", "")),
        dict(arguments),
        call_id if isinstance(call_id, str) or call_id is None else str(call_id),
    )


def _json_body(content: bytes, status: int, url: str, attempt: int) -> dict[str, Any]:
    try:
        payload = json.loads(content)
    except ValueError:
        raise LLMError(
            f"reply from {url} is not JSON: {_text(content)!r}",
            kind="invalid_response",
            status=status,
            attempts=attempt,
        ) from None
    if not isinstance(payload, dict):
        raise LLMError(
            f"reply from {url} is not a JSON object: {_text(content)!r}",
            kind="invalid_response",
            status=status,
            attempts=attempt,
        )
    return payload


def _text(content: bytes, limit: int = 200) -> str:
    """The start of a reply body as text, for a message, secrets redacted (a 401 may quote
    the request's key) before it is cut."""
    text = content[: limit * 8].decode("utf-8", errors="replace")
    return _secrets.known().scrub(text)[:limit]


def _status_error(status: int, content: bytes, url: str, attempt: int) -> LLMError:
    try:
        said = _anthropic.error_detail(json.loads(content[:_ERROR_BODY]))
    except ValueError:
        said = None
    detail = _text(content).strip() if said is None else _secrets.known().scrub(said)[:200]
    if status in (429, 529):  # 529: Anthropic's "overloaded", retried like a rate limit
        kind = "rate_limited"
    elif status in (401, 403):
        kind = "auth_error"
    elif status in _RETRY_STATUS or status >= 500:
        kind = "server_error"
    else:
        kind = "bad_request"
    return LLMError(
        f"HTTP {status} from {url}: {detail}", kind=kind, status=status, attempts=attempt
    )


def _record_reply(result: ChatResult, *, cached: bool) -> None:
    """The reply in the cell's transcript: text, tool calls, usage (nothing outside a cell)."""
    if not transcript.active():
        return
    data: dict[str, Any] = {"text": result.text, "finish_reason": result.finish_reason}
    if result.tool_calls:
        data["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in result.tool_calls]
    data["usage"] = {
        "prompt": result.usage.prompt_tokens,
        "completion": result.usage.completion_tokens,
    }
    judge = transcript.judge()
    transcript.record(
        "response" if judge is None else "judge_reply",
        f"{'' if judge is None else judge + ': '}{result.model}{' (cached)' if cached else ''}",
        data,
        duration=None if cached else result.latency_ms / 1000.0,
    )


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return None if seconds != seconds else max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
