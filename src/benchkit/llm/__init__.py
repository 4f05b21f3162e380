"""One LLM client for judges and chat models (OpenAI-compatible, over httpx).

* :class:`LLMClient` — chat completions with rate limits (:class:`RateLimits`, shareable
  :class:`RateLimiter`), retries that honour ``Retry-After``, a response cache
  (:class:`ResponseCache`; the embedded store by default, :class:`MemoryCache` in memory)
  and usage accounting (:class:`UsageMeter`, :class:`Price`; the built-in price table
  :func:`builtin_prices`, a dated data file).
* :meth:`LLMClient.loglikelihood` — log P(continuation | context) of
  :class:`LoglikelihoodRequest` values (``/completions`` with ``echo`` and ``logprobs``;
  the embedded model in-process), split at the boundary as published benchmarks do
  (:func:`boundary`); a task input that is a :class:`ChoiceQuestion` asks the ``chat``
  and ``local`` providers for every choice's (docs/datasets.md).
* :meth:`LLMClient.embed` — embedding vectors (``/embeddings``; the embedded model
  in-process) as :class:`Embeddings`, with the same cache, limits and usage; :func:`cosine`.
* :class:`ChatProvider` — a chat model as the system under test (provider ``chat``).
* :class:`LocalModel` / :class:`LocalClient` — the embedded model (``local``: SmolLM2 on
  llama.cpp, extra ``benchkit[local]``; ``local:PATH.gguf`` another GGUF file), as a
  provider and as a client for judges.
* :func:`resolve_endpoint` / :class:`Endpoint` — settings from arguments or environment.
* :class:`EndpointRegistry` / :class:`NamedEndpoint` — the endpoints a server may call, by
  name, with the variable holding each one's key (requests name them; docs/server.md).

See docs/llm.md.
"""

from __future__ import annotations

from benchkit.errors import LLMError
from benchkit.llm._cache import MemoryCache, ResponseCache, cache_key
from benchkit.llm._client import ChatResult, LLMClient, UsageMeter
from benchkit.llm._config import DEFAULT_BASE_URL, Endpoint, resolve_endpoint
from benchkit.llm._embeddings import Embeddings, cosine
from benchkit.llm._endpoints import EndpointRegistry, NamedEndpoint
from benchkit.llm._limits import RateLimiter, RateLimits
from benchkit.llm._local import LOCAL, LocalClient, LocalModelInfo, local_model_info
from benchkit.llm._loglik import ChoiceQuestion, Loglikelihood, LoglikelihoodRequest, boundary
from benchkit.llm._prices import Price, PriceTable, builtin_prices
from benchkit.llm._provider import ChatProvider, LocalModel, task_messages

__all__ = [
    "DEFAULT_BASE_URL",
    "ChatProvider",
    "ChatResult",
    "ChoiceQuestion",
    "Embeddings",
    "Endpoint",
    "EndpointRegistry",
    "LLMClient",
    "LLMError",
    "LOCAL",
    "LocalClient",
    "LocalModel",
    "LocalModelInfo",
    "Loglikelihood",
    "LoglikelihoodRequest",
    "MemoryCache",
    "NamedEndpoint",
    "Price",
    "PriceTable",
    "RateLimiter",
    "RateLimits",
    "ResponseCache",
    "UsageMeter",
    "boundary",
    "builtin_prices",
    "cache_key",
    "cosine",
    "local_model_info",
    "resolve_endpoint",
    "task_messages",
]
