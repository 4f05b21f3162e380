"""A chat model as the system under test: it replies to a task's input, or — when the
input asks for log-likelihoods (:class:`~benchkit.llm.ChoiceQuestion`) — scores each
choice."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit._limits import check_chat_options
from benchkit._public import public
from benchkit.errors import ConfigError, InvocationError
from benchkit.llm._client import LLMClient, Price
from benchkit.llm._limits import RateLimits
from benchkit.llm._local import (
    DEFAULT_CONTEXT,
    LOCAL,
    LocalClient,
    LocalModelInfo,
    is_local,
    local_slots,
)
from benchkit.llm._loglik import ChoiceQuestion
from benchkit.model import Request, Response
from benchkit.protocols import ResponseCache

__all__ = ["ChatProvider", "LocalModel", "local_model_path", "task_messages"]


def local_model_path(model: str | None) -> str | None:
    """The GGUF file ``local:PATH`` names (None for any other model name, ``local``
    included).

        >>> local_model_path("local:models/other.gguf")
        'models/other.gguf'
    """
    if model is None or not model.startswith(LOCAL + ":"):
        return None
    path = model[len(LOCAL) + 1 :]
    if not path:
        raise ConfigError(
            "model 'local:' names no file", fix="write local:PATH.gguf, or local alone."
        )
    return path


def task_messages(task_input: Any, system: str | None = None) -> tuple[list[dict[str, Any]], Any]:
    """The chat messages (and tools, if the input carries them) for a task's input.

    A string is one user message; a list is taken as the messages; a mapping with a
    ``messages`` key gives its messages and optional ``tools``; any other value is sent as
    its JSON text. ``system`` is prepended when the messages have no system message.
    """
    tools = None
    if isinstance(task_input, str):
        messages: list[dict[str, Any]] = [{"role": "user", "content": task_input}]
    elif isinstance(task_input, Sequence) and not isinstance(task_input, (str, bytes)):
        messages = [dict(m) for m in task_input]
    elif isinstance(task_input, Mapping) and "messages" in task_input:
        messages = [dict(m) for m in task_input["messages"]]
        tools = task_input.get("tools")
    else:
        messages = [{"role": "user", "content": json.dumps(task_input, ensure_ascii=False)}]
    if system and not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system})
    return messages, tools


class ChatProvider:
    """Sends each task's input to a chat model and returns its text and tool calls.

    Options (as written in a benchmark file): ``model``, ``base_url``, ``api_key_env``
    (the name of the variable holding the key — never the key itself in a file),
    ``temperature`` (0), ``max_tokens``, ``system``, ``tools`` (OpenAI tool schemas for
    every task), ``seed`` (an int, or ``"cell"`` for the cell's derived seed),
    ``timeout`` (each request as a whole, reply included), ``max_response_bytes`` (the
    reply's size cap, 10 MB), ``max_retries``, ``requests_per_minute``, ``tokens_per_minute``,
    ``max_concurrency``, ``cache`` (true/false: use the run's reply cache), ``price`` (``[prompt, completion]`` USD
    per million tokens, so results carry ``cost_usd``). A ready :class:`LLMClient` can be
    passed as ``client`` from code. ``model: local`` is the embedded model (see
    :class:`benchkit.llm.LocalModel`; no ``base_url`` then).

        >>> provider = ChatProvider(model="gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")
    """

    def __init__(
        self,
        *,
        client: LLMClient | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] = ("OPENAI_API_KEY",),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | str | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        max_concurrency: int | None = 16,
        cache: bool = True,
        price: Sequence[float] | None = None,
        max_response_bytes: int = 10_000_000,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        check_chat_options(
            {
                "timeout": timeout,
                "max_retries": max_retries,
                "max_concurrency": max_concurrency,
                "max_tokens": max_tokens,
                "requests_per_minute": requests_per_minute,
                "tokens_per_minute": tokens_per_minute,
                "temperature": temperature,
                "seed": seed,
            }
        )
        if price is not None and (len(price) != 2 or min(price) < 0):
            raise ConfigError(
                f"price {list(price)} must be [prompt, completion] USD per million tokens",
                fix="write e.g. price: [0.15, 0.60].",
            )
        gguf = local_model_path(model)
        if client is None and (model == LOCAL or gguf is not None):
            is_local(LOCAL, base_url)  # refuses an endpoint given with the embedded model
            paced = requests_per_minute is not None or tokens_per_minute is not None
            client = LocalClient(
                timeout=max(timeout, 300.0),
                max_retries=max_retries,
                limits=(
                    RateLimits(requests_per_minute, tokens_per_minute, local_slots() + 1)
                    if paced
                    else None
                ),
                cache=response_cache if cache else None,
                model_path=None if gguf is None else _anchored(gguf, base_dir),
            )
            model = None
        if client is None:
            client = LLMClient(
                base_url=base_url,
                model=model,
                api_key_env=(api_key_env,) if isinstance(api_key_env, str) else api_key_env,
                timeout=timeout,
                max_response_bytes=max_response_bytes,
                max_retries=max_retries,
                limits=RateLimits(requests_per_minute, tokens_per_minute, max_concurrency),
                cache=response_cache if cache else None,
                prices={model: Price(*price)} if model and price else None,
            )
        self.client = client
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.system = system
        self.tools = list(tools) if tools else None
        self.seed = seed
        versions = getattr(client, "versions", None)
        self._versions: dict[str, str] = dict(versions) if isinstance(versions, Mapping) else {}

    @property
    def versions(self) -> dict[str, str]:
        """What the run records about the model (the local model's name, file hash and
        llama.cpp version; empty for a remote model, which says only its name)."""
        return dict(self._versions)

    def __repr__(self) -> str:
        return f"ChatProvider({self.client!r})"

    async def invoke(self, request: Request) -> Response:
        try:
            question = ChoiceQuestion.of(request.task.input)
        except ValueError as exc:
            raise InvocationError(
                f"task {request.task.id!r} asks for log-likelihoods, and {exc}", retryable=False
            ) from None
        if question is not None:
            return await self._score(question)
        messages, task_tools = task_messages(request.task.input, self.system)
        seed = request.seed % 2**31 if self.seed == "cell" else self.seed
        result = await self.client.chat(
            messages,
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=seed if isinstance(seed, int) else None,
            tools=task_tools or self.tools,
        )
        return Response(
            output=result.text if result.text is not None else "",
            latency_ms=result.latency_ms,
            usage=result.usage,
            tool_calls=result.tool_calls,
            raw=result.raw,
            metadata={"model": result.model, "cached": result.cached, **self._identity()},
        )

    async def _score(self, question: ChoiceQuestion) -> Response:
        """The log-likelihood of every choice (the model scores, it does not reply)."""
        answers, usage, cached = await self.client.loglikelihood_usage(
            question.requests(), model=self.model
        )
        return Response(
            output=question.output(answers),
            usage=usage,
            metadata={
                "model": self.model or self.client.model,
                "cached": cached,
                **self._identity(),
            },
        )

    def _identity(self) -> dict[str, Any]:
        return {"versions": dict(self._versions)} if self._versions else {}

    async def aclose(self) -> None:
        await self.client.aclose()


@public("benchkit.llm")
class LocalModel(ChatProvider):
    """The embedded model as the system under test (provider ``local``), and a client
    for judges (:attr:`client`).

        >>> import benchkit
        >>> model = benchkit.LocalModel(max_tokens=64)     # doctest: +SKIP
        >>> model.info.name                                # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1'

    Options as the ``chat`` provider's (``system``, ``temperature``, ``seed``, ``tools``,
    ``cache``, ...) plus ``max_tokens`` (the cap: ``$BENCHKIT_LOCAL_MAX_TOKENS``, else
    512), ``context`` (8192 tokens) and ``max_concurrency`` (default: the queue every local
    client shares, two requests at once).
    Pass ``model.client`` to a judge (``RubricJudge(client=model.client, ...)``) to share
    it. Needs ``benchkit[local]``.
    """

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        context: int = DEFAULT_CONTEXT,
        temperature: float = 0.0,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | str | None = None,
        timeout: float = 300.0,
        max_retries: int = 2,
        max_concurrency: int | None = None,
        cache: bool = True,
        model: str | None = LOCAL,
        model_path: str | os.PathLike[str] | None = None,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        check_chat_options(
            {
                "timeout": timeout,
                "max_retries": max_retries,
                "max_concurrency": max_concurrency,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": seed,
            }
        )
        gguf = local_model_path(model)
        if model not in (None, LOCAL) and gguf is None:
            raise ConfigError(
                f"the local provider runs the embedded model, and model={model!r} was given",
                fix="drop `model` (or use the chat provider for other models); another GGUF "
                "file is model_path: PATH.",
            )
        if gguf is not None and model_path is not None:
            raise ConfigError(
                f"model={model!r} and model_path={str(model_path)!r} both name a model file",
                fix="give one of them.",
            )
        model_path = gguf if gguf is not None else model_path
        client = LocalClient(
            max_tokens=max_tokens,
            context=context,
            timeout=timeout,
            max_retries=max_retries,
            limits=None if max_concurrency is None else RateLimits(max_concurrency=max_concurrency),
            cache=response_cache if cache else None,
            model_path=None if model_path is None else _anchored(model_path, base_dir),
        )
        super().__init__(
            client=client,
            temperature=temperature,
            max_tokens=client.max_tokens,
            system=system,
            tools=tools,
            seed=seed,
            base_dir=base_dir,
        )
        self.local: LocalClient = client

    def __repr__(self) -> str:
        return f"LocalModel({self.local.info.name!r})"

    @property
    def info(self) -> LocalModelInfo:
        return self.local.info

    async def start(self) -> str:
        """Start the shared server now rather than on the first request; its base URL."""
        return await self.local.start()


def _anchored(path: str | os.PathLike[str], base_dir: Path | None) -> Path:
    """``path`` as given (absolute, or from the working directory) when no benchmark file
    anchors it, else relative to the benchmark file's directory."""
    found = Path(path).expanduser()
    return found if found.is_absolute() or base_dir is None else base_dir / found
