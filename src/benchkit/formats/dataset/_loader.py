"""The ``dataset`` format: a YAML (or JSON) file that maps the rows of a data file people
already have — JSONL, CSV, Parquet, a saved Hugging Face dataset — onto tasks.

    dataset:
      root: {env: BENCHKIT_DATASETS, default: ../datasets}   # where the files are
      path: piqa/valid.jsonl
      labels: piqa/valid-labels.lst       # one label a line, aligned with the rows
    id: piqa
    prompt:
      input: "Question: {goal}\\nAnswer:"
      choices: ["{sol1}", "{sol2}"]
      target: label                       # an index, a letter or the choice's text
    metrics: [acc, acc_norm]

Each row becomes a task whose input asks the model for the log-likelihood of every
choice after the prompt (:class:`benchkit.llm.ChoiceQuestion`), scored by the
``multiple_choice`` evaluator; ``mode: generate`` makes the prompt a plain text input and
the answer its expected reply instead, for generation-based multiple choice with the
usual evaluators. docs/datasets.md describes every key.
"""

from __future__ import annotations

import os
import random
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit import _limits
from benchkit.errors import ConfigError
from benchkit.formats._document import Document
from benchkit.formats._source import read_document
from benchkit.formats.dataset._read import Row, read_labels, read_rows
from benchkit.formats.dataset._template import MissingField, Template
from benchkit.llm._loglik import ChoiceQuestion
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    Reproduces,
    RunOptions,
    Source,
    Suite,
    Task,
)

__all__ = ["load"]

_TOP = {
    "dataset", "id", "name", "version", "description", "prompt", "mode", "metrics",
    "evaluators", "conditions", "reproduces", "concurrency",
}  # fmt: skip
_DATA = {"root", "path", "labels", "labels_field", "split", "limit", "fewshot"}
_FEWSHOT = {"path", "labels", "split"}
_PROMPT = {
    "input", "choices", "target", "target_delimiter", "description", "n_shot",
    "fewshot_separator", "seed", "id",
}  # fmt: skip
_METRICS = ("acc", "acc_norm", "acc_bytes", "acc_mutual_info")
_MAX_SHOTS = 1_000
_DEFAULT_CONDITION = Condition("model", ProviderSpec("chat", {"model": "local"}))


def load(path: Path, *, document: Document | None = None) -> Suite:
    """The suite a dataset file describes (see the module)."""
    doc = document if document is not None else read_document(path)
    return _Loader(Path(path), doc).suite()


class _Loader:
    def __init__(self, path: Path, doc: Document) -> None:
        self.path = path
        self.doc = doc
        data = doc.data
        if not isinstance(data, dict):
            raise doc.error("a dataset file is a mapping", fix="start it with dataset: {...}.")
        self.data = data
        self._known(data, _TOP, ())

    # -- checks -------------------------------------------------------------------------

    def _known(
        self, mapping: Mapping[str, Any], allowed: set[str], at: tuple[str | int, ...]
    ) -> None:
        for key in mapping:
            if key not in allowed:
                raise self.doc.error(
                    f"unknown key {key!r}",
                    (*at, key),
                    key=True,
                    fix=f"use one of: {', '.join(sorted(allowed))} (docs/datasets.md).",
                )

    def _get(
        self,
        mapping: Mapping[str, Any],
        key: str,
        at: tuple[str | int, ...],
        kind: type | tuple[type, ...],
        default: Any = None,
        *,
        required: bool = False,
    ) -> Any:
        if key not in mapping:
            if required:
                raise self.doc.error(
                    f"missing key {key!r}", at, fix=f"add {key}: ... (docs/datasets.md)."
                )
            return default
        value = mapping[key]
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            names = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise self.doc.error(
                f"{key} must be a {names.replace('str', 'string').replace('dict', 'mapping')}, "
                f"got {type(value).__name__}",
                (*at, key),
            )
        return value

    def _count(
        self,
        mapping: Mapping[str, Any],
        key: str,
        at: tuple[str, ...],
        default: int,
        low: int,
        high: int,
    ) -> int:
        value = self._get(mapping, key, at, int, default)
        if not low <= value <= high:
            raise self.doc.error(f"{key} must be from {low} to {high:,}, got {value}", (*at, key))
        return int(value)

    def _template(self, value: Any, at: tuple[str | int, ...]) -> Template:
        if not isinstance(value, str):
            raise self.doc.error(
                f"expected a field name or a {{field}} template, got {type(value).__name__}", at
            )
        try:
            return Template.parse(value)
        except ValueError as exc:
            raise self.doc.error(
                str(exc),
                at,
                fix="write {field} for a field's value, "
                "{{ and }} for braces; a value without braces names a field.",
            ) from None

    # -- files --------------------------------------------------------------------------

    def _root(self, spec: Mapping[str, Any]) -> Path:
        root = spec.get("root", ".")
        base = self.path.parent
        if isinstance(root, dict):
            self._known(root, {"env", "default"}, ("dataset", "root"))
            env = self._get(root, "env", ("dataset", "root"), str)
            default = self._get(root, "default", ("dataset", "root"), str, ".")
            chosen = os.environ.get(env) if env else None
            if chosen:
                return Path(chosen).expanduser().resolve()  # from the working directory
            root = default
        if not isinstance(root, str):
            raise self.doc.error(
                "root must be a path or {env: VAR, default: PATH}", ("dataset", "root")
            )
        return (base / Path(root).expanduser()).resolve()

    def _file(self, root: Path, value: Any, at: tuple[str, ...]) -> Path:
        if not isinstance(value, str) or not value:
            raise self.doc.error("expected a path (relative to root)", at)
        found = (root / value).resolve()
        if found != root and root not in found.parents:
            raise self.doc.error(
                f"{value!r} leads outside the dataset root {str(root)!r}",
                at,
                fix="give a path inside the root, or change root.",
            )
        if not found.exists():
            hint = ""
            env = self.data["dataset"].get("root")
            if isinstance(env, dict) and env.get("env"):
                hint = f" (root: ${env['env']}, else {env.get('default', '.')!r} from this file)"
            raise self.doc.error(
                f"no data at {str(found)!r}{hint}",
                at,
                fix="check the path; set the root's variable to where the data is.",
            )
        return found

    def _rows(
        self, spec: Mapping[str, Any], root: Path, at: tuple[str, ...], labels_field: str
    ) -> list[Row]:
        self._known(spec, _DATA if at == ("dataset",) else _FEWSHOT, at)
        data = self._file(root, self._get(spec, "path", at, str, required=True), (*at, "path"))
        split = self._get(spec, "split", at, str)
        rows = read_rows(data, split=split)
        labels_at = spec.get("labels")
        if labels_at is not None:
            labels = read_labels(self._file(root, labels_at, (*at, "labels")), len(rows), data)
            rows = [
                Row({**row.fields, labels_field: label}, row.index, row.file, row.line)
                for row, label in zip(rows, labels, strict=True)
            ]
        return rows

    # -- the suite ----------------------------------------------------------------------

    def suite(self) -> Suite:
        doc, top = self.doc, self.data
        spec = self._get(top, "dataset", (), dict, required=True)
        bench_id = self._get(top, "id", (), str, required=True)
        prompt = self._get(top, "prompt", (), dict, required=True)
        self._known(prompt, _PROMPT, ("prompt",))
        mode = self._get(top, "mode", (), str, "loglikelihood")
        if mode not in ("loglikelihood", "generate"):
            raise doc.error(f"mode {mode!r} is neither loglikelihood nor generate", ("mode",))
        labels_field = self._get(spec, "labels_field", ("dataset",), str, "label")
        # The whole mapping is checked before any data is read.
        metrics = self._metrics(top)
        shape = _Shape(
            input=self._template(
                self._get(prompt, "input", ("prompt",), str, required=True), ("prompt", "input")
            ),
            choices=self._choices(prompt),
            target=self._template(prompt.get("target", labels_field), ("prompt", "target")),
            delimiter=self._get(prompt, "target_delimiter", ("prompt",), str, " "),
            ident=None if "id" not in prompt else self._template(prompt["id"], ("prompt", "id")),
        )
        description = self._get(prompt, "description", ("prompt",), str, "")
        shots = self._count(prompt, "n_shot", ("prompt",), 0, 0, _MAX_SHOTS)
        separator = self._get(prompt, "fewshot_separator", ("prompt",), str, "\n\n")
        seed = self._count(prompt, "seed", ("prompt",), 1234, _limits.MIN_SEED, _limits.MAX_SEED)
        limit = spec.get("limit")
        if limit is not None:
            limit = self._count(spec, "limit", ("dataset",), 0, 1, _limits.MAX_COUNT)
        fewshot = spec.get("fewshot")
        if fewshot is not None and not isinstance(fewshot, dict):
            raise doc.error(
                "fewshot must be a mapping {path, labels, split}", ("dataset", "fewshot")
            )
        evaluators = self._evaluators(top, mode, metrics)
        conditions = self._conditions(top)
        reproduces = self._reproduces(top)
        concurrency = self._count(top, "concurrency", (), 8, 1, _limits.MAX_CONCURRENCY)
        root = self._root(spec)
        everything = self._rows(spec, root, ("dataset",), labels_field)
        rows = everything[:limit] if limit is not None else everything
        if not rows:
            raise doc.error("the data has no rows", ("dataset", "path"))
        pool: list[Row] = []
        same_split = fewshot is None
        if shots:
            pool = (
                everything
                if fewshot is None
                else self._rows(fewshot, root, ("dataset", "fewshot"), labels_field)
            )
            if len(pool) < shots + (1 if same_split else 0):
                raise doc.error(
                    f"n_shot {shots} needs more examples than the {len(pool)} rows it draws from",
                    ("prompt", "n_shot"),
                )
        width = len(str(len(rows) - 1))
        tasks = []
        for row in rows:
            context, choices, target = shape.question(row)
            if shots:
                # Per question, from the seed: the same examples whatever the limit or order.
                # From the question's own split, one more is drawn and the question dropped.
                picks = random.Random(f"{seed}:{row.index}").sample(
                    range(len(pool)), shots + (1 if same_split else 0)
                )
                drawn = [pool[i] for i in picks if not (same_split and i == row.index)][:shots]
                examples = []
                for example in drawn:
                    text, options, answer = shape.question(example)
                    examples.append(text + shape.delimiter + options[answer])
                context = separator.join(examples) + separator + context
            context = description + context
            ident = f"{row.index:0{width}d}" if shape.ident is None else _text_id(shape.ident, row)
            if mode == "loglikelihood":
                question = ChoiceQuestion(
                    context, choices, shape.delimiter, "acc_mutual_info" in metrics
                )
                tasks.append(
                    Task(
                        ident,
                        input=question.to_input(),
                        expected=target,
                        metadata={"row": row.index},
                    )
                )
            else:
                tasks.append(
                    Task(
                        ident,
                        input=context,
                        expected=string.ascii_uppercase[target] if target < 26 else str(target),
                        metadata={"row": row.index, "choices": list(choices), "answer": target},
                    )
                )
        _unique([t.id for t in tasks], doc)
        first = rows[0].file
        return Suite(
            Benchmark(
                bench_id,
                name=self._get(top, "name", (), str),
                version=str(self._get(top, "version", (), (str, int, float), "0")),
                tasks=tuple(tasks),
                description=self._get(top, "description", (), str),
                evaluators=evaluators,
                metadata={"data": str(first), "n_shot": shots, "mode": mode},
                source=Source(path=str(self.path), format="dataset"),
                reproduces=reproduces,
            ),
            conditions=conditions,
            options=RunOptions(concurrency=concurrency),
            base_dir=self.path.parent,
        )

    def _choices(self, prompt: Mapping[str, Any]) -> Template | list[Template] | None:
        value = prompt.get("choices")
        if value is None:
            return None
        if isinstance(value, list):
            if not value:
                raise self.doc.error("choices is empty", ("prompt", "choices"))
            return [self._template(v, ("prompt", "choices", i)) for i, v in enumerate(value)]
        template = self._template(value, ("prompt", "choices"))
        if template.field is None:
            raise self.doc.error(
                "choices is a field holding a list, or a list of fields / templates",
                ("prompt", "choices"),
                fix='write choices: answers, or choices: ["{sol1}", "{sol2}"].',
            )
        return template

    def _metrics(self, top: Mapping[str, Any]) -> list[str]:
        metrics = self._get(top, "metrics", (), list, ["acc", "acc_norm"])
        for i, metric in enumerate(metrics):
            if metric not in _METRICS:
                raise self.doc.error(
                    f"unknown metric {metric!r}", ("metrics", i), fix=f"use {', '.join(_METRICS)}."
                )
        if not metrics:
            raise self.doc.error("metrics is empty", ("metrics",))
        return list(metrics)

    def _evaluators(
        self, top: Mapping[str, Any], mode: str, metrics: list[str]
    ) -> list[EvaluatorSpec]:
        given = top.get("evaluators")
        if mode == "loglikelihood":
            if given is not None:
                raise self.doc.error(
                    "a loglikelihood dataset is scored by multiple_choice: name its metrics instead",
                    ("evaluators",),
                    key=True,
                    fix="write metrics: [acc, acc_norm], or mode: generate.",
                )
            return [EvaluatorSpec("multiple_choice", {"metric": metrics[0]})]
        if given is None:
            return [EvaluatorSpec("exact", {"case_sensitive": False})]
        if not isinstance(given, list) or not given:
            raise self.doc.error("evaluators must be a list", ("evaluators",))
        specs = []
        for i, item in enumerate(given):
            if isinstance(item, str):
                specs.append(EvaluatorSpec(item))
            elif isinstance(item, dict) and isinstance(item.get("type"), str):
                specs.append(
                    EvaluatorSpec(
                        item["type"],
                        {k: v for k, v in item.items() if k not in ("type", "name")},
                        item.get("name"),
                    )
                )
            else:
                raise self.doc.error(
                    "an evaluator is a name or {type: NAME, ...}", ("evaluators", i)
                )
        return specs

    def _conditions(self, top: Mapping[str, Any]) -> list[Condition]:
        given = top.get("conditions")
        if given is None:
            return [_DEFAULT_CONDITION]
        if not isinstance(given, list) or not given:
            raise self.doc.error("conditions must be a non-empty list", ("conditions",))
        found = []
        for i, item in enumerate(given):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise self.doc.error("a condition is {id: NAME, provider: ...}", ("conditions", i))
            self._known(item, {"id", "label", "provider"}, ("conditions", i))
            provider = item.get("provider", {"type": "chat", "model": "local"})
            if isinstance(provider, str):
                spec = ProviderSpec(provider)
            elif isinstance(provider, dict) and isinstance(provider.get("type"), str):
                spec = ProviderSpec(
                    provider["type"], {k: v for k, v in provider.items() if k != "type"}
                )
            else:
                raise self.doc.error(
                    "provider is a name or {type: NAME, ...}", ("conditions", i, "provider")
                )
            found.append(Condition(item["id"], spec, label=item.get("label")))
        _unique([c.id for c in found], self.doc, what="condition id", at=("conditions",))
        return found

    def _reproduces(self, top: Mapping[str, Any]) -> Reproduces | None:
        value = top.get("reproduces")
        if value is None:
            return None
        at = ("reproduces",)
        if not isinstance(value, dict):
            raise self.doc.error("reproduces is {metric, value, source}", at)
        self._known(value, {"metric", "value", "source", "condition"}, at)
        try:
            return Reproduces(
                metric=self._get(value, "metric", at, str, required=True),
                value=self._get(value, "value", at, (int, float), required=True),
                source=self._get(value, "source", at, str, ""),
                condition=self._get(value, "condition", at, str),
            )
        except ConfigError as exc:
            raise self.doc.error(exc.message, (*at, "value"), fix=exc.fix) from None


class _Shape:
    """How a row becomes a question: its prompt, its choices and the answer's index."""

    def __init__(
        self,
        *,
        input: Template,
        choices: Template | list[Template] | None,
        target: Template,
        delimiter: str,
        ident: Template | None,
    ) -> None:
        self.input = input
        self.choices = choices
        self.target = target
        self.delimiter = delimiter
        self.ident = ident

    def question(self, row: Row) -> tuple[str, list[str], int]:
        try:
            context = self.input.render(row.fields)
            choices = self._choices(row)
            target = _index(row, self.target.value(row.fields), choices, self.target.text)
        except MissingField as exc:
            raise row.error(
                f"the row has no field {exc.name!r}",
                exc.name,
                fix=f"check the prompt's field names against the data's ({', '.join(sorted(row.fields)) or 'none'}).",
            ) from None
        return context, choices, target

    def _choices(self, row: Row) -> list[str]:
        if self.choices is None:
            raise row.error("the prompt names no choices", None, fix="add prompt.choices.")
        if isinstance(self.choices, Template):
            value = self.choices.value(row.fields)
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(c, str) for c in value)
            ):
                raise row.error(
                    f"choices field {self.choices.field!r} is not a list of strings",
                    self.choices.field,
                )
            return list(value)
        found = []
        for template in self.choices:
            value = template.value(row.fields)
            found.append(value if isinstance(value, str) else str(value))
        return found


def _index(row: Row, value: Any, choices: Sequence[str], source: str) -> int:
    """The answer's index from an index, a digit string, the choice's text or a letter."""
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int) and 0 <= value < len(choices):
        return value
    if isinstance(value, str):
        text = value.strip()
        if value in choices:
            return list(choices).index(value)
        if text.isdigit() and int(text) < len(choices):
            return int(text)
        letters = string.ascii_uppercase[: len(choices)]
        if len(text) == 1 and text.upper() in letters:
            return letters.index(text.upper())
    raise row.error(
        f"the answer {value!r} (from {source!r}) is not an index 0..{len(choices) - 1}, a letter "
        f"A-{string.ascii_uppercase[min(len(choices), 26) - 1]} or one of the {len(choices)} choices",
        None if "{" in source else source,
        fix="map prompt.target to the field holding the answer.",
    )


def _text_id(template: Template, row: Row) -> str:
    value = template.value(row.fields)
    text = value if isinstance(value, str) else str(value)
    if not text:
        raise row.error("the task id is empty", template.field)
    return text


def _unique(
    ids: list[str], doc: Document, *, what: str = "task id", at: tuple[str, ...] = ("prompt", "id")
) -> None:
    seen: set[str] = set()
    for ident in ids:
        if ident in seen:
            raise doc.error(f"{what} {ident!r} is used twice", at, fix="give each a unique id.")
        seen.add(ident)
