"""PIQA by log-likelihood (#37): benchkit's run beside llama.cpp's floor, an exact reference
and lm-evaluation-harness.

    BENCHKIT_DATASETS=../shared/datasets python perf/loglikelihood.py        # all 1,838
    python perf/loglikelihood.py --questions 200 --no-reference               # a quick look
    python perf/loglikelihood.py --lm-eval-python /tmp/lm-eval-venv/bin/python --lm-eval-questions 100

Printed, never asserted (see perf/RESULTS.md). Needs ``benchkit[local]`` and the PIQA data
(``$BENCHKIT_DATASETS``, else ``../shared/datasets``). Each part runs on the same tokens
(the questions' prompts and solutions, tokenised as benchkit tokenises them), with
``$BENCHKIT_LOCAL_THREADS`` threads (default: every core), the model loaded before the clock
starts; the load average is printed before and after, since others share the machine.

1. **benchkit**: ``benchmarks/reproduce/piqa.yaml`` run in this process against ``local``
   (no store, no cache): wall time, tokens evaluated (the contexts once, each solution
   after its context), tokens/s, CPU seconds (this process, every thread), acc and
   acc_norm.
2. **The floor**: llama.cpp's own prompt processing of the same tokens through
   llama-cpp-python's low-level batch API — each context once (its tokens in every
   solution's sequence), logits only at the positions that predict a solution token, and
   nothing else (no log-softmax, no Python bookkeeping) — both with questions packed into
   batches of up to 512 tokens and with one question a batch; the faster is the floor.
   The floor's tokens/s over benchkit's is the ratio to read (goal: at most 1.25).
3. **The exact reference** (``--no-reference`` skips it): every (question, solution) the
   straightforward way — a fresh cache, the whole text decoded as one sequence with every
   row of logits, a float64 log-softmax of each — and its per-question predictions (acc
   and acc_norm) against benchkit's: they must be identical.
4. **lm-evaluation-harness** (with ``--lm-eval-python``: a Python that has ``lm_eval``,
   installed outside this repository): its ``gguf`` model against llama-cpp-python's
   OpenAI-compatible server on the same GGUF file, PIQA from the same files through a task
   of the same template: wall time and its acc. That server's echoed log-probabilities are
   shifted by one token, so its acc is near chance — what an unsuspecting user gets.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PIQA = REPO / "benchmarks" / "reproduce" / "piqa.yaml"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (5 min {five:.1f})"


def _suite(questions: int | None) -> Any:
    import benchkit

    suite = benchkit.load(PIQA)
    return suite.select(limit=questions) if questions else suite


def _pairs(suite: Any) -> list[tuple[str, list[str], int]]:
    from benchkit.llm import ChoiceQuestion

    found = []
    for task in suite.benchmark.iter_tasks():
        question = ChoiceQuestion.of(task.input)
        assert question is not None
        found.append((question.context, question.continuations, int(task.expected)))
    return found


def part_benchkit(suite: Any) -> dict[str, Any]:
    import benchkit
    from benchkit.llm import local_model_info
    from benchkit.llm._scorer import shared_scorer

    shared_scorer(local_model_info().path)  # loaded before the clock starts
    started, cpu = time.perf_counter(), time.process_time()
    result = benchkit.run(suite, store=False)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    tokens = sum(
        c.response.usage.prompt_tokens for c in result.cells if c.response and c.response.usage
    )
    errors = sum(1 for c in result.cells if c.errored)
    metrics = (
        {m.name: m.value for m in result.reproduction.rows[0].metrics}
        if result.reproduction
        else {}
    )
    predicted = {
        c.task_id: dict(c.scores[0].details["predicted"])
        for c in result.cells
        if c.scores and c.scores[0].details
    }
    logprobs = {c.task_id: c.response.output["logprobs"] for c in result.cells if c.response}
    print(
        f"benchkit   {len(result.cells)} questions, {tokens} tokens: {wall:.1f} s wall, "
        f"{tokens / wall:.0f} tokens/s, {cpu:.1f} CPU s; acc {metrics.get('acc', float('nan')):.4f}, "
        f"acc_norm {metrics.get('acc_norm', float('nan')):.4f}; {errors} errors"
    )
    if result.reproduction:
        for line in result.reproduction.lines():
            print(f"           {line}")
    return {
        "wall": wall,
        "tokens": tokens,
        "cpu": cpu,
        "predicted": predicted,
        "logprobs": logprobs,
    }


def part_floor(suite: Any, batch: int) -> dict[str, Any]:
    import llama_cpp.llama_cpp as native  # type: ignore[import-not-found,unused-ignore]

    from benchkit.llm import LoglikelihoodRequest, local_model_info
    from benchkit.llm._scorer import shared_scorer

    scorer = shared_scorer(local_model_info().path)
    # The same tokens benchkit decodes: each context once, each solution after it.
    questions = []
    for context, continuations, _ in _pairs(suite):
        encoded = [scorer.encode(LoglikelihoodRequest(context, c)) for c in continuations]
        questions.append((encoded[0][0], [cont for _, cont in encoded]))
    sequences = 64
    params = native.llama_context_default_params()
    params.n_ctx = 4096
    capacity = max(batch, max(len(c) + sum(len(x) for x in cs) for c, cs in questions))
    params.n_batch = params.n_ubatch = capacity
    params.n_seq_max = sequences
    params.n_threads = params.n_threads_batch = scorer.threads
    params.kv_unified = True
    params.flash_attn_type = native.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.no_perf = True
    ctx = native.llama_init_from_model(scorer._model, params)
    memory = native.llama_get_memory(ctx)
    llama_batch = native.llama_batch_init(capacity, 0, sequences)
    # Packs of questions, each at most `batch` tokens and `sequences` sequences.
    packs: list[list[tuple[list[int], list[list[int]]]]] = [[]]
    size = seqs = 0
    for context, conts in questions:
        n = len(context) + sum(len(c) for c in conts)
        if packs[-1] and (size + n > batch or seqs + len(conts) > sequences):  # batch 1: one each
            packs.append([])
            size = seqs = 0
        packs[-1].append((context, conts))
        size += n
        seqs += len(conts)
    tokens = 0
    started, cpu = time.perf_counter(), time.process_time()
    for pack in packs:
        native.llama_memory_clear(memory, True)
        i = seq = 0
        for context, conts in pack:
            ids = list(range(seq, seq + len(conts)))
            for pos, token in enumerate(context):
                llama_batch.token[i], llama_batch.pos[i] = token, pos
                llama_batch.n_seq_id[i] = len(ids)
                for k, s in enumerate(ids):
                    llama_batch.seq_id[i][k] = s
                llama_batch.logits[i] = pos == len(context) - 1
                i += 1
            for s, cont in zip(ids, conts, strict=True):
                for j, token in enumerate(cont):
                    llama_batch.token[i], llama_batch.pos[i] = token, len(context) + j
                    llama_batch.n_seq_id[i] = 1
                    llama_batch.seq_id[i][0] = s
                    llama_batch.logits[i] = j < len(cont) - 1
                    i += 1
            seq += len(conts)
        llama_batch.n_tokens = i
        tokens += i
        if native.llama_decode(ctx, llama_batch) != 0:
            raise RuntimeError("llama_decode failed")
        native.llama_get_logits(ctx)  # the rows are there; reading them is not the floor's job
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    native.llama_batch_free(llama_batch)
    native.llama_free(ctx)
    print(
        f"floor      {len(questions)} questions, {tokens} tokens in {len(packs)} batches of up to "
        f"{batch}: {wall:.1f} s wall, {tokens / wall:.0f} tokens/s, {cpu:.1f} CPU s"
    )
    return {"wall": wall, "tokens": tokens, "cpu": cpu}


def part_reference(suite: Any, ours: dict[str, Any]) -> None:
    import numpy as np

    from benchkit.evaluators._choice import choose
    from benchkit.llm import LoglikelihoodRequest, local_model_info
    from benchkit.llm._local_server import _plain_cpu_buffers
    from benchkit.llm._scorer import shared_scorer

    _plain_cpu_buffers()  # as the scorer: no AMX repacking (SIGILL on some VMs)
    from llama_cpp import Llama  # type: ignore[import-not-found,unused-ignore]

    scorer = shared_scorer(local_model_info().path)
    llm = Llama(
        str(local_model_info().path),
        n_ctx=2048,
        logits_all=True,
        verbose=False,
        n_threads=scorer.threads,
        n_threads_batch=scorer.threads,
    )
    started, cpu = time.perf_counter(), time.process_time()
    differ: list[str] = []
    gap = 0.0
    tasks = list(suite.benchmark.iter_tasks())
    for task, (context, continuations, _) in zip(tasks, _pairs(suite), strict=True):
        values = []
        for continuation in continuations:
            ctx, cont = scorer.encode(LoglikelihoodRequest(context, continuation))
            llm.reset()
            llm.eval(ctx + cont)
            rows = np.array(llm.scores[: len(ctx) + len(cont)], dtype=np.float64)
            peak = rows.max(axis=1, keepdims=True)
            logsoftmax = rows - peak - np.log(np.exp(rows - peak).sum(axis=1, keepdims=True))
            values.append(float(sum(logsoftmax[len(ctx) - 1 + j, t] for j, t in enumerate(cont))))
        choices = task.input["choices"]
        mine = {
            "acc": choose(values),
            "acc_norm": choose([v / len(c) for v, c in zip(values, choices, strict=True)]),
        }
        theirs = ours["predicted"].get(task.id, {})
        if any(theirs.get(k) != v for k, v in mine.items()):
            differ.append(task.id)
        gap = max(
            gap, max(abs(a - b) for a, b in zip(values, ours["logprobs"][task.id], strict=True))
        )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"reference  {len(tasks)} questions the straightforward way in {wall:.1f} s wall, "
        f"{cpu:.1f} CPU s: predictions (acc and acc_norm) "
        f"differ on {len(differ)} questions {differ[:10]}; largest |Δ log-likelihood| {gap:.2e}"
    )


_TASK = """task: piqa_benchkit
dataset_path: json
dataset_kwargs:
  data_files: {{validation: {data}}}
output_type: multiple_choice
validation_split: validation
doc_to_text: "Question: {{{{goal}}}}\\nAnswer:"
doc_to_target: label
doc_to_choice: "{{{{[sol1, sol2]}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""


def part_lm_eval(python: str, suite: Any, threads: int) -> None:
    from benchkit.llm import local_model_info

    count = suite.benchmark.task_count
    data_dir = (
        Path(os.environ.get("BENCHKIT_DATASETS", str(REPO / ".." / "shared" / "datasets"))) / "piqa"
    )
    with tempfile.TemporaryDirectory() as tmp:
        rows = [json.loads(line) for line in (data_dir / "valid.jsonl").read_text().splitlines()][
            :count
        ]
        labels = (data_dir / "valid-labels.lst").read_text().split()
        merged = Path(tmp) / "piqa.jsonl"
        merged.write_text(
            "".join(
                json.dumps({**r, "label": int(label)}) + "\n"
                for r, label in zip(rows, labels, strict=False)
            )
        )
        (Path(tmp) / "piqa_benchkit.yaml").write_text(_TASK.format(data=merged))
        # The server serves a socket bound here (its module's contract: --fd).
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = int(listener.getsockname()[1])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_before = before.ru_utime + before.ru_stime
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("HOST", "PORT", "API_KEY", "BENCHKIT_LOCAL_KEY")
        }
        server_log = (Path(tmp) / "server.log").open("wb")
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchkit.llm._local_server",
                "--model",
                str(local_model_info().path),
                "--fd",
                str(listener.fileno()),
                "--n_ctx",
                "2048",
                "--n_threads",
                str(threads),
                "--n_threads_batch",
                str(threads),
                "--logits_all",
                "True",
                "--verbose",
                "False",
            ],
            stdin=subprocess.PIPE,
            pass_fds=(listener.fileno(),),
            stdout=subprocess.DEVNULL,
            stderr=server_log,
            env=env,
        )
        try:
            import httpx

            listener.close()
            deadline = time.monotonic() + 300
            while True:
                if server.poll() is not None or time.monotonic() > deadline:
                    log = (Path(tmp) / "server.log").read_text(errors="replace")
                    raise RuntimeError(f"llama-cpp-python's server did not start:\n{log[-2000:]}")
                try:
                    if (
                        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code
                        == 200
                    ):
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            started = time.perf_counter()
            proc = subprocess.run(
                [
                    python,
                    "-m",
                    "lm_eval",
                    "--model",
                    "gguf",
                    "--model_args",
                    f"base_url=http://127.0.0.1:{port}",
                    "--tasks",
                    "piqa_benchkit",
                    "--include_path",
                    tmp,
                    "--output_path",
                    str(Path(tmp) / "out"),
                ],
                capture_output=True,
                text=True,
                check=False,
                env={**env, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
            )
            wall = time.perf_counter() - started
        finally:
            if server.stdin is not None:
                server.stdin.close()
            server.terminate()
            server.wait(30)
            server_log.close()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = children.ru_utime + children.ru_stime - cpu_before
        table = [line for line in proc.stdout.splitlines() if "acc" in line]
        print(
            f"lm-eval    gguf model against llama-cpp-python's server, {count} questions: "
            f"{wall:.1f} s wall, {cpu:.1f} CPU s (lm_eval and the server, its start included); "
            f"exit {proc.returncode}"
        )
        for line in table or proc.stderr.splitlines()[-5:]:
            print(f"           {line}")


PARTS = ("benchkit", "floor", "reference", "lm-eval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, help="only the first N questions (default: all)")
    parser.add_argument("--no-reference", action="store_true", help="skip the exact reference")
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help="the parts to run, comma-separated (default: all; the reference needs benchkit, "
        "lm-eval needs --lm-eval-python)",
    )
    parser.add_argument(
        "--floor-batches",
        default="512,1",
        help="the floor's batch sizes in tokens, comma-separated; 1 is one question a batch "
        "(default: 512,1)",
    )
    parser.add_argument("--lm-eval-python", help="a Python with lm_eval installed (part 4)")
    parser.add_argument(
        "--lm-eval-questions",
        type=int,
        default=100,
        help="questions for lm-evaluation-harness (its server sorts the vocabulary in Python "
        "for every token: about 50 s a question on a busy 2-core machine)",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if unknown := parts - set(PARTS):
        parser.error(f"unknown parts {sorted(unknown)}: choose from {', '.join(PARTS)}")
    if args.no_reference:
        parts.discard("reference")
    if "reference" in parts and "benchkit" not in parts:
        parser.error("the reference is checked against benchkit's run: add the benchkit part")
    os.environ.setdefault("BENCHKIT_DATASETS", str((REPO / ".." / "shared" / "datasets").resolve()))
    from benchkit.llm._scorer import default_threads

    suite = _suite(args.questions)
    print(
        f"PIQA, {suite.benchmark.task_count} questions, {default_threads()} threads; load average {_load()}"
    )
    ours = part_benchkit(suite) if "benchkit" in parts else None
    if "floor" in parts:
        # Two ways llama.cpp can take the same tokens: several questions a batch (fewer,
        # larger matrix products, but attention over every question's cells), or one
        # question a batch; the floor is the faster.
        batches = [int(b) for b in args.floor_batches.split(",")]
        floor = min((part_floor(suite, b) for b in batches), key=lambda f: f["wall"])
        if ours is not None:
            print(
                f"ratio      benchkit's tokens/s is the floor's / {(floor['tokens'] / floor['wall']) / (ours['tokens'] / ours['wall']):.2f} "
                f"(goal: at most 1.25); CPU s {ours['cpu'] / floor['cpu']:.2f}x the floor's; load average {_load()}"
            )
    if "reference" in parts and ours is not None:
        part_reference(suite, ours)
    if "lm-eval" in parts and args.lm_eval_python:
        part_lm_eval(args.lm_eval_python, _suite(args.lm_eval_questions), default_threads())
    print(f"load average at the end {_load()}")


if __name__ == "__main__":
    main()
