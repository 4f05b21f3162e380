"""Keys that say when a stored cell may stand in for running it again.

A **cell key** changes whenever anything that can change the cell's outcome changes:

* the task's content — every field of the task (input, expectation, its own evaluator and
  verifier specs, timeout, weight, tags, setup steps, metadata, ...);
* the evaluators and verifiers that judge it (the task's own, else the benchmark's
  defaults), each with its type, options, name and **version**: an optional ``version``
  attribute on the registered evaluator or verifier class (or factory), ``"1"`` when absent;
* the condition: its id, its bundle directory, its options and its provider — a
  :class:`~benchkit.model.ProviderSpec` by its type and options, a provider object by its
  class plus, when it defines them, its ``config_hash()`` method and ``version`` attribute;
* the epoch, the run seed and deterministic mode.

The **suite key** identifies a whole run: the benchmark id, every task key in order, every
condition key in order, the number of epochs, the seed and deterministic mode. A resume
without a run id continues the latest run with the same suite key.

Concurrency, timeouts, retries and how errors are aggregated are not part of either key:
they change how a run goes, not what a finished cell means. Neither is the provider's code:
editing the function or program under test does not change a key (give a provider object a
``version`` or ``config_hash()`` for that).

Hashes are BLAKE2b over canonical JSON (sorted keys, fields that hold their default left
out, so a later benchkit that adds a field with a default keeps the old keys). Computing
the keys takes one pass over the tasks, which for a lazy benchmark means reading its source
once more.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from cattrs.gen import make_dict_unstructure_fn

from benchkit import model
from benchkit._public import defined_in
from benchkit.errors import ConfigError
from benchkit.model import Condition, EvaluatorSpec, ProviderSpec, Suite, VerifierSpec
from benchkit.registry import Registries, Registry
from benchkit.serde import converter

__all__ = ["SuiteKeys", "suite_keys"]

#: Bumped when what goes into a key changes, so old keys never match new ones by accident.
KEY_FORMAT = "benchkit-key-1"


def _key_converter() -> Any:
    conv = converter.copy()
    for cls in (
        model.Task,
        model.EvaluatorSpec,
        model.VerifierSpec,
        model.ProviderSpec,
        model.SetupStep,
        model.ToolCall,
    ):
        conv.register_unstructure_hook(
            cls, make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=True)
        )
    # Typed data a loader keeps in a task's metadata (MemoryBench's MemoryCase) keys like
    # the mapping it replaces: fields left at their default are not part of the key.
    conv.register_unstructure_hook_factory(
        attrs.has, lambda cls: make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=True)
    )
    return conv


_CONVERTER = _key_converter()
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str, check_circular=False
)


_blake2b = hashlib.blake2b


def _raw_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _canonical(obj: Any) -> str:
    return _CANONICAL.encode(_CONVERTER.unstructure(obj))


def _id_digest(task_id: str) -> bytes:
    return hashlib.blake2b(task_id.encode(), digest_size=16).digest()


@attrs.frozen
class SuiteKeys:
    """The suite key of a run, plus what is needed to compute each of its cell keys.

    Per task, by position, it keeps 40 bytes and no Python object — a 16-byte digest of
    the task id (``ids``), the 16-byte task key (``task_keys``) and the id's ``hash()``
    (``hashes``) — so a run of 200,000 tasks holds 8 MB of keys, not 60 MB of dict entries.
    ``conditions`` maps each condition id to its condition key. :meth:`task` finds a task
    by id (through an index built on first use); :meth:`cell_key` takes the cell's position
    as a hint and checks it against the id's hash first, which is how a run's cells are
    keyed without that index.
    """

    suite_key: str
    conditions: Mapping[str, str]
    epochs: int
    salt: str
    ids: bytes = attrs.field(repr=False)
    task_keys: bytes = attrs.field(repr=False)
    hashes: array[int] = attrs.field(repr=False, eq=False)
    _index: dict[bytes, int] = attrs.field(factory=dict, init=False, repr=False, eq=False)
    _suffixes: dict[tuple[str, int], bytes] = attrs.field(
        factory=dict, init=False, repr=False, eq=False
    )

    @property
    def task_count(self) -> int:
        """How many tasks the suite has."""
        return len(self.ids) // 16

    @property
    def total_cells(self) -> int:
        """How many cells the suite has (known after the pass, even for lazy tasks)."""
        return self.task_count * len(self.conditions) * self.epochs

    def _position(self, task_id: str, hint: int | None = None) -> int | None:
        if hint is not None and 0 <= hint < len(self.hashes) and self.hashes[hint] == hash(task_id):
            return hint  # a wrong hint passes only on a 64-bit hash collision as well
        index = self._index
        if not index:
            ids = self.ids
            index.update((ids[i : i + 16], i // 16) for i in range(0, len(ids), 16))
        return index.get(_id_digest(task_id))

    def holds_at(self, task_id: str, position: int) -> bool:
        """Whether the suite's task at ``position`` has the id ``task_id`` (no index is
        built for the ones that do)."""
        return self._position(task_id, position) == position

    def task(self, task_id: str) -> tuple[int, str] | None:
        """The task's position in the benchmark and its task key, or None."""
        position = self._position(task_id)
        if position is None:
            return None
        return position, self.task_keys[position * 16 : position * 16 + 16].hex()

    def cell_key(
        self, task_id: str, condition_id: str, epoch: int, position: int | None = None
    ) -> str | None:
        """The key of one cell, or None when the suite has no such cell.

        ``position`` (the cell's ``index``) is a hint that saves a look-up by id. Every cell
        is keyed as it is stored, so this is on the run's hot path: the part of the hashed
        text after the task key (condition key, epoch, salt) is encoded once per condition
        and epoch.
        """
        suffix = self._suffixes.get((condition_id, epoch))
        if suffix is None:
            cond = self.conditions.get(condition_id)
            if cond is None or not 0 <= epoch < self.epochs:
                return None
            suffix = self._suffixes[condition_id, epoch] = f"|{cond}|{epoch}|{self.salt}".encode()
        found = self._position(task_id, position)
        if found is None:
            return None
        task = self.task_keys[found * 16 : found * 16 + 16].hex().encode()
        return _blake2b(task + suffix, digest_size=16).hexdigest()


def _versioned(
    specs: Iterable[EvaluatorSpec | VerifierSpec],
    registry: Registry[Any],
    versions: dict[str, str],
    base_dir: Path | None,
) -> str:
    """Canonical JSON of ``specs``, each with its plug-in's version (a ``file.py:Name``
    plug-in is found relative to ``base_dir``, the benchmark file's directory)."""
    out: list[Any] = []
    for spec in specs:
        version = versions.get(spec.type)
        if version is None:
            found = registry.get(spec.type, base_dir=base_dir)
            version = versions[spec.type] = str(getattr(found, "version", "1"))
        out.append([_CONVERTER.unstructure(spec), version])
    return _CANONICAL.encode(out)


def _provider_key(provider: object) -> Any:
    if isinstance(provider, ProviderSpec):
        return {"spec": _CONVERTER.unstructure(provider)}
    cls = type(provider)
    config_hash = getattr(provider, "config_hash", None)
    return {
        "class": f"{defined_in(cls)}.{cls.__qualname__}",  # as keyed before any renaming
        "config": str(config_hash()) if callable(config_hash) else None,
        "version": str(getattr(provider, "version", "")),
    }


def _condition_key(cond: Condition) -> str:
    material = {
        "id": cond.id,
        "provider": _provider_key(cond.provider),
        "bundle": None if cond.bundle is None else str(cond.bundle),
        "options": dict(cond.options),
    }
    return _digest(_CANONICAL.encode(material))


def suite_keys(suite: Suite, registries: Registries) -> SuiteKeys:
    """The keys of ``suite``: one pass over its tasks.

    ``registries`` are the ones the run uses (evaluator and verifier versions are read from
    the registered classes). Raises ConfigError for two tasks with the same id, which a
    store cannot tell apart.
    """
    bench = suite.benchmark
    options = suite.options
    evaluators = registries.evaluators
    verifiers = registries.verifiers
    eval_versions: dict[str, str] = {}
    verifier_versions: dict[str, str] = {}
    default_evals = _versioned(bench.evaluators, evaluators, eval_versions, suite.base_dir)
    default_verifiers = _versioned(bench.verifiers, verifiers, verifier_versions, suite.base_dir)
    ids = bytearray()
    task_keys = bytearray()
    hashes = array("q")
    seen: set[bytes] = set()
    suite_hash = hashlib.blake2b(digest_size=16)
    suite_hash.update(f"{KEY_FORMAT}|{bench.id}|".encode())
    for position, task in enumerate(bench.iter_tasks()):
        id_digest = _id_digest(task.id)
        if id_digest in seen:
            first = next(i // 16 for i in range(0, len(ids), 16) if ids[i : i + 16] == id_digest)
            raise ConfigError(
                f"benchmark {bench.id!r} has two tasks with the id {task.id!r} "
                f"(positions {first} and {position})",
                fix="give every task a unique id: the run store keys results by task id.",
            )
        seen.add(id_digest)
        evals = (
            _versioned(task.evaluators, evaluators, eval_versions, suite.base_dir)
            if task.evaluators
            else default_evals
        )
        checks = (
            _versioned(task.verifiers, verifiers, verifier_versions, suite.base_dir)
            if task.verifiers
            else default_verifiers
        )
        key = _raw_digest(f"{KEY_FORMAT}|{_canonical(task)}|{evals}|{checks}")
        ids += id_digest
        task_keys += key
        hashes.append(hash(task.id))
        suite_hash.update(key.hex().encode())
    conditions = {c.id: _condition_key(c) for c in suite.conditions}
    salt = f"seed={options.seed}|deterministic={options.deterministic}"
    suite_hash.update(f"|{'|'.join(conditions.values())}|{options.epochs}|{salt}".encode())
    return SuiteKeys(
        suite_hash.hexdigest(),
        conditions,
        options.epochs,
        salt,
        bytes(ids),
        bytes(task_keys),
        hashes,
    )
