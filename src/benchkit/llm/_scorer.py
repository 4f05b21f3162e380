"""Log-likelihoods from a GGUF model in this process, through llama.cpp's batch API.

The embedded model (``local``) answers chat requests from a server subprocess
(:mod:`benchkit.llm._local`), but a log-likelihood request needs no generation and no
HTTP: it is one forward pass over the text. :class:`LlamaScorer` loads the GGUF file in
this process with ``llama-cpp-python``'s low-level API and answers
:class:`~benchkit.llm.LoglikelihoodRequest` lists the fast way:

* requests that share a context (a question's choices) share its evaluation: the
  context and the first continuation are one ``llama_decode`` (the straightforward
  layout of that text), and each further continuation is decoded after the context,
  reusing its KV state in the cells the first continuation took (those are dropped
  first, ``llama_memory_seq_rm``) — two decodes for a two-choice question, not three;
* each ``llama_decode`` runs on every core, and llama.cpp computes a vocabulary row of
  logits only where one is needed — the context's last token and every continuation
  token but the last — and numpy turns each row into the log-probability of the next
  token (a log-softmax over the rows, never a Python loop over the vocabulary).

**Why one sequence, and the same cells, for every continuation.** llama.cpp's CPU
attention is not invariant to where a sequence's tokens sit in the KV cache: measured on
SmolLM2-135M, the same text started 7 cells further in gives log-likelihoods up to 0.6
nats apart (32 or 64 cells further: identical), and two sequences sharing a context's
cells in one batch differ the same way. So each continuation occupies exactly the cells
it would occupy if its text were evaluated alone from an empty cache — the
straightforward computation — and predictions never depend on what else was scored or
in which order (``perf/loglikelihood.py`` checks every PIQA question against that
reference).

Tokenisation follows :func:`benchkit.llm.encode_pair` (lm-evaluation-harness's
convention). The model's beginning-of-text token opens every context when the GGUF file
says the model expects one (``tokenizer.ggml.add_bos_token``), as llama.cpp's own tools do.

Nothing here is imported by ``import benchkit``; ``llama_cpp`` and numpy are imported when
a scorer is made (extra ``benchkit[local]``).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit.errors import LLMError
from benchkit.llm._loglik import Loglikelihood, LoglikelihoodRequest, encode_pair

__all__ = ["InProcessScorer", "LlamaScorer", "default_threads", "shared_scorer"]

DEFAULT_BATCH = 512
"""The most tokens one ``llama_decode`` takes (a longer text is decoded in pieces)."""


def default_threads() -> int:
    """Threads llama.cpp computes with: ``$BENCHKIT_LOCAL_THREADS``, else every core this
    process may use."""
    text = os.environ.get("BENCHKIT_LOCAL_THREADS")
    if text:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value >= 1:
            return value
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


#: One token to decode: (token, position, targets). A target is (request index, next
#: token): the row of this token's logits predicts it.
_Entry = tuple[int, int, list[tuple[int, int]]]


@attrs.define
class _Group:
    """Requests sharing one context: its tokens, then each continuation."""

    context: list[int]
    members: list[tuple[int, list[int]]] = attrs.Factory(list)  # (request index, tokens)


class LlamaScorer:
    """A GGUF model loaded in this process to score log-likelihoods (see the module).

    ``context`` is the longest text (context and continuation) one request may be, in
    tokens; ``batch`` the most tokens of one ``llama_decode``; ``threads`` default to
    :func:`default_threads`; ``add_bos`` overrides the model file's word on the
    beginning-of-text token. Thread-safe: calls take turns on the one llama.cpp context.
    """

    def __init__(
        self,
        path: Path,
        *,
        context: int = 4096,
        batch: int = DEFAULT_BATCH,
        threads: int | None = None,
        add_bos: bool | None = None,
    ) -> None:
        import numpy  # noqa: F401 (fail here, not mid-run, when the extra is missing)

        native = _native()
        self.path = path
        self.context = context
        self.batch = min(batch, context)
        self.threads = threads or default_threads()
        self._native = native
        self._lock = threading.Lock()
        params = native.llama_model_default_params()
        params.n_gpu_layers = 0
        if hasattr(params, "use_extra_bufts"):  # no AMX repacking: see _local_server
            params.use_extra_bufts = False
        self._model = native.llama_model_load_from_file(str(path).encode(), params)
        if not self._model:
            raise LLMError(f"llama.cpp could not load the model file {path}", kind="bad_request")
        self._vocab = native.llama_model_get_vocab(self._model)
        self.vocab_size = int(native.llama_vocab_n_tokens(self._vocab))
        bos = int(native.llama_vocab_bos(self._vocab))
        self.prefix = bos if bos >= 0 else int(native.llama_vocab_eos(self._vocab))
        self.add_bos = (
            bool(native.llama_vocab_get_add_bos(self._vocab)) if add_bos is None else add_bos
        )
        cparams = native.llama_context_default_params()
        cparams.n_ctx = context
        cparams.n_batch = self.batch
        cparams.n_ubatch = self.batch
        cparams.n_seq_max = 1
        cparams.n_threads = self.threads
        cparams.n_threads_batch = self.threads
        # llama.cpp's CPU flash attention accumulates in half precision: its log-likelihoods
        # differ from the plain attention's by up to 0.6 nats on a PIQA answer.
        cparams.flash_attn_type = native.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cparams.no_perf = True
        self._ctx = native.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            native.llama_model_free(self._model)
            raise LLMError(f"llama.cpp could not make a context for {path}", kind="bad_request")
        self._memory = native.llama_get_memory(self._ctx)
        self._batch = native.llama_batch_init(self.batch, 0, 1)
        self._tokens = (ctypes.c_int32 * (context + 8))()

    def __repr__(self) -> str:
        return f"LlamaScorer({self.path.name!r}, threads={self.threads}, batch={self.batch})"

    # -- tokens -------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """``text``'s tokens (no special tokens added, none parsed from the text)."""
        raw = text.encode("utf-8")
        buffer = (
            self._tokens if len(raw) < len(self._tokens) else (ctypes.c_int32 * (len(raw) + 8))()
        )
        count = self._native.llama_tokenize(
            self._vocab, raw, len(raw), buffer, len(buffer), False, False
        )
        if count < 0:
            raise LLMError(
                f"llama.cpp could not tokenise a text of {len(raw)} bytes", kind="bad_request"
            )
        return list(buffer[:count])

    def encode(self, request: LoglikelihoodRequest) -> tuple[list[int], list[int]]:
        """The context's and continuation's tokens (:func:`benchkit.llm.encode_pair`), the
        beginning-of-text token first when the model expects one."""
        try:
            context, continuation = encode_pair(
                self.tokenize, request.context, request.continuation, self.prefix
            )
        except ValueError as exc:
            raise LLMError(str(exc), kind="bad_request") from None
        if self.add_bos and context[:1] != [self.prefix]:
            context = [self.prefix, *context]
        if len(context) + len(continuation) > self.context:
            raise LLMError(
                f"a text of {len(context) + len(continuation)} tokens is longer than the "
                f"scorer's context ({self.context} tokens)",
                kind="bad_request",
            )
        return context, continuation

    # -- scoring ------------------------------------------------------------------------

    def score(self, requests: Sequence[LoglikelihoodRequest]) -> tuple[list[Loglikelihood], int]:
        """Every request's log-likelihood, in order, and the tokens evaluated."""
        with self._lock:
            groups: dict[tuple[int, ...], _Group] = {}
            for index, request in enumerate(requests):
                context, continuation = self.encode(request)
                group = groups.setdefault(tuple(context), _Group(context))
                group.members.append((index, continuation))
            totals = [0.0] * len(requests)
            counts = [0] * len(requests)
            evaluated = 0
            for group in groups.values():
                evaluated += self._run(group, totals, counts)
            answers = [Loglikelihood(min(t, 0.0), c) for t, c in zip(totals, counts, strict=True)]
            return answers, evaluated

    def _run(self, group: _Group, totals: list[float], counts: list[int]) -> int:
        """Decode the group's context with its first continuation after it — the layout of
        that text evaluated alone — then each further continuation in the same cells as the
        first (dropped again before the next); add each continuation's log-probabilities to
        ``totals``. Returns the tokens decoded."""
        native, memory = self._native, self._memory
        context = group.context
        last = len(context) - 1
        native.llama_memory_clear(memory, True)
        firsts = [(index, tokens[0]) for index, tokens in group.members]
        entries: list[_Entry] = [(t, p, firsts if p == last else []) for p, t in enumerate(context)]
        for number, (index, tokens) in enumerate(group.members):
            counts[index] = len(tokens)
            if number:
                native.llama_memory_seq_rm(memory, 0, len(context), -1)
            entries.extend(
                (token, last + 1 + j, [(index, tokens[j + 1])] if j + 1 < len(tokens) else [])
                for j, token in enumerate(tokens)
            )
            self._decode(entries, totals)
            entries = []
        return len(context) + sum(len(tokens) for _, tokens in group.members)

    def _decode(self, entries: Sequence[_Entry], totals: list[float]) -> None:
        """One ``llama_decode`` per ``batch`` entries; each wanted row's log-softmax."""
        for start in range(0, len(entries), self.batch):
            self._decode_one(entries[start : start + self.batch], totals)

    def _decode_one(self, entries: Sequence[_Entry], totals: list[float]) -> None:
        import numpy as np

        batch = self._batch
        rows: list[int] = []
        wanted_tokens: list[int] = []
        wanted_requests: list[int] = []
        for i, (token, pos, targets) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            if targets:
                batch.logits[i] = 1
                rows.append(len(targets))
                for index, following in targets:
                    wanted_tokens.append(following)
                    wanted_requests.append(index)
            else:
                batch.logits[i] = 0
        batch.n_tokens = len(entries)
        status = self._native.llama_decode(self._ctx, batch)
        if status != 0:
            raise LLMError(
                f"llama.cpp could not evaluate a batch (status {status})", kind="server_error"
            )
        if not rows:
            return
        pointer = self._native.llama_get_logits(self._ctx)
        logits = np.ctypeslib.as_array(pointer, shape=(len(rows), self.vocab_size))
        peak = logits.max(axis=1)
        lse = peak + np.log(np.exp(logits - peak[:, None]).sum(axis=1))
        row_of = np.repeat(np.arange(len(rows)), rows)
        picked = logits[row_of, np.asarray(wanted_tokens)] - lse[row_of]
        for index, value in zip(wanted_requests, picked.astype(np.float64).tolist(), strict=True):
            totals[index] += value


def _native() -> Any:
    """``llama_cpp.llama_cpp`` with llama.cpp's own log quiet (errors only); a
    ConfigError naming the install when the extra is missing.

    llama.cpp's OpenMP threads otherwise spin at every barrier waiting for each other: on
    a machine busy with other work a descheduled thread stalls the rest (the local server
    measured 2 threads 40x slower than with passive waits at load 20, and in-process
    embeddings 0.1 texts/s against 2.6 on one thread). OpenMP reads the policy when its
    library loads, so it is set before the first import, unless the user set it."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp.llama_cpp as native  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        from benchkit.errors import ConfigError

        raise ConfigError(
            f"scoring with a local GGUF model needs llama-cpp-python ({exc})",
            fix="run `pip install 'benchkit[local]'`.",
        ) from exc
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    with _backend_lock:
        global _backend_ready
        if not _backend_ready:
            native.llama_backend_init()
            _backend_ready = True
    return native


_backend_lock = threading.Lock()
_backend_ready = False
_scorers_lock = threading.Lock()
_scorers: dict[tuple[str, int, int, int], LlamaScorer] = {}


def shared_scorer(path: Path, *, context: int = 4096, threads: int | None = None) -> LlamaScorer:
    """This process's one scorer for the model file ``path`` (loaded on first call)."""
    chosen = threads or default_threads()
    key = (str(path), context, chosen, os.getpid())
    with _scorers_lock:
        scorer = _scorers.get(key)
        if scorer is None:
            scorer = _scorers[key] = LlamaScorer(path, context=context, threads=chosen)
        return scorer


class InProcessScorer:
    """An :class:`~benchkit.llm.LLMClient`'s log-likelihood backend for a GGUF file: the
    process's :class:`LlamaScorer` for it, loaded on the first request the cache does not
    answer, called in a worker thread (a cell's timeout abandons the call; the scorer
    finishes it and takes the next)."""

    #: What the reply cache's key names besides the model file (its hash) and the request:
    #: a change of how answers are computed makes new keys.
    identity: Mapping[str, Any] = {"scorer": "llama.cpp batch 2", "convention": "lm-eval"}

    def __init__(self, path: Path, *, context: int = 4096) -> None:
        self.path = path
        self.context = context

    def __repr__(self) -> str:
        return f"InProcessScorer({self.path.name!r})"

    def load(self) -> LlamaScorer:
        """The process's scorer for this file (loading it now if it is not loaded)."""
        return shared_scorer(self.path, context=self.context)

    async def score(
        self, requests: Sequence[LoglikelihoodRequest]
    ) -> tuple[list[Loglikelihood], int]:
        import anyio.to_thread

        def work() -> tuple[list[Loglikelihood], int]:
            return self.load().score(requests)

        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
