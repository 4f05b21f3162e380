"""A workspace from a model's reply: the files it wrote, or the patch it gave, applied.

An agent task starts from some files (CodeForge's ``initial_files``) and ends when a test
command passes. What the model changed comes from its response:

* a mapping output: ``{"files": {path: text}, "patch": "<unified diff>"}`` (either key);
* a text reply: its unified diffs (fenced ``diff`` / ``patch`` blocks, or a reply that is
  itself a diff) are applied, and its fenced code blocks that name a file become that file.
  A block names its file in its info string (```` ```python slug.py ````, ```` ```slug.py
  ````, ``title="slug.py"``), on the line just before it (``slug.py:``, ``**slug.py**``,
  ``### slug.py``, ``File: slug.py``) or in its own first line (``# file: slug.py``). One
  unnamed block goes to the one file the task's prompt names, when it names exactly one.

Paths stay inside the workspace: an absolute path or one with ``..`` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

__all__ = ["PatchError", "apply_patch", "changed_files", "safe_path"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)$", re.MULTILINE)
_PATHLIKE = re.compile(r"^[\w.\-/]+\.[A-Za-z0-9]{1,8}$|^(Makefile|Dockerfile)$")
_MENTIONED = re.compile(r"(?<![\w./-])([\w\-/]+\.(?:py|js|ts|go|rs|java|rb|sh|c|h|cpp|toml|"
                        r"json|yaml|yml|txt|md|cfg|ini|env))(?![\w/-])")  # fmt: skip
_DIFF_TAGS = frozenset({"diff", "patch", "udiff"})
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """A diff that does not apply to the workspace (the message says where)."""


def safe_path(name: str) -> str | None:
    """``name`` as a clean relative POSIX path, or None when it would leave the workspace."""
    name = name.strip().strip("`'\"")
    pure = PurePosixPath(name)
    if not name or pure.is_absolute() or ".." in pure.parts or name.startswith("~"):
        return None
    return str(pure)


def _blocks(reply: str) -> list[tuple[str, str, str]]:
    """Each fenced block: (info string, body, the non-empty line just before it)."""
    out: list[tuple[str, str, str]] = []
    position = 0
    while True:
        opening = _FENCE.search(reply, position)
        if opening is None:
            return out
        fence, info = opening.group(1), opening.group(2).strip()
        start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        end = closing.search(reply, start)
        before = [line for line in reply[: opening.start()].split("\n") if line.strip()]
        out.append(
            (info, reply[start : end.start() if end else len(reply)], before[-1] if before else "")
        )
        if end is None:
            return out
        position = end.end()


def _named_in_info(info: str) -> str | None:
    found = re.search(r"""(?:title|file|filename|path)\s*=\s*["']?([^"'\s]+)""", info)
    if found:
        return found.group(1)
    for word in info.split():
        if _PATHLIKE.match(word) and "." in word:
            return word
    return None


def _named_before(line: str) -> str | None:
    text = line.strip().strip("*#:` ").strip()
    text = re.sub(r"^(?:file|filename|path)\s*[:=]\s*", "", text, flags=re.I).strip("*`: ")
    return text if _PATHLIKE.match(text) else None


def _named_inside(body: str) -> tuple[str | None, str]:
    first, _, rest = body.partition("\n")
    found = re.match(r"^\s*(?:#|//|--)\s*(?:file(?:name)?\s*:\s*)?([\w.\-/]+\.\w{1,8})\s*$", first)
    if found:
        return found.group(1), rest
    return None, body


def changed_files(output: Any, prompt: str = "") -> tuple[dict[str, str], list[str]]:
    """The files a response writes and the unified diffs it gives: ``(files, patches)``."""
    if isinstance(output, Mapping):
        given = output.get("files") or {}
        patch = output.get("patch")
        written = {str(k): str(v) for k, v in given.items()} if isinstance(given, Mapping) else {}
        return written, [patch] if isinstance(patch, str) and patch.strip() else []
    if not isinstance(output, str):
        return {}, []
    if output.lstrip().startswith(("--- ", "diff --git")):
        return {}, [output]
    files: dict[str, str] = {}
    patches: list[str] = []
    unnamed: list[str] = []
    for info, body, before in _blocks(output):
        tag = info.split()[0].lower() if info.split() else ""
        if tag in _DIFF_TAGS or body.lstrip().startswith(("--- ", "diff --git")):
            patches.append(body)
            continue
        name = _named_in_info(info) or _named_before(before)
        if name is None:
            name, body = _named_inside(body)
        if name is None:
            unnamed.append(body)
        else:
            files[name] = body
    mentioned = sorted(set(_MENTIONED.findall(prompt)))
    if not files and not patches and len(unnamed) == 1 and len(mentioned) == 1:
        files[mentioned[0]] = unnamed[0]
    return files, patches


def _strip_prefix(name: str) -> str:
    name = name.split("\t")[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def apply_patch(files: Mapping[str, str], diff: str) -> dict[str, str]:
    """``files`` with the unified ``diff`` applied (new and deleted files included).

    Each hunk must match its context at the line it names or, failing that, at one other
    place; otherwise :class:`PatchError` says which file and hunk.
    """
    out = dict(files)
    lines = diff.split("\n")
    i = 0
    while i < len(lines):
        if (
            not lines[i].startswith("--- ")
            or i + 1 >= len(lines)
            or not lines[i + 1].startswith("+++ ")
        ):
            i += 1
            continue
        old, new = _strip_prefix(lines[i][4:]), _strip_prefix(lines[i + 1][4:])
        i += 2
        target = new if new != "/dev/null" else old
        if safe_path(target) is None:
            raise PatchError(f"the patch names {target!r}, which leaves the workspace")
        source = "" if old == "/dev/null" else out.get(old)
        if source is None:
            raise PatchError(f"the patch changes {old!r}, which does not exist")
        text = source.split("\n")
        number = 0
        while i < len(lines) and lines[i].startswith("@@"):
            found = _HUNK.match(lines[i])
            if found is None:
                raise PatchError(f"a bad hunk header in the patch of {target!r}: {lines[i]!r}")
            number += 1
            start = max(int(found.group(1)) - 1, 0)
            i += 1
            before: list[str] = []
            after: list[str] = []
            while i < len(lines) and not lines[i].startswith(("@@", "--- ", "diff ")):
                line = lines[i]
                if line.startswith("\\"):
                    pass
                elif line.startswith("-"):
                    before.append(line[1:])
                elif line.startswith("+"):
                    after.append(line[1:])
                else:
                    before.append(line[1:] if line.startswith(" ") else line)
                    after.append(line[1:] if line.startswith(" ") else line)
                i += 1
            while before and after and before[-1] == "" and after[-1] == "":
                before.pop()  # the blank line a diff block ends with is no context
                after.pop()
            at = _locate(text, before, start)
            if at is None:
                raise PatchError(f"hunk {number} of the patch does not apply to {target!r}")
            text[at : at + len(before)] = after
        if new == "/dev/null":
            out.pop(old, None)
        else:
            if old != new:
                out.pop(old, None)
            out[new] = "\n".join(text)
    return out


def _locate(text: list[str], before: list[str], start: int) -> int | None:
    if not before:
        return min(start, len(text))
    size = len(before)
    if text[start : start + size] == before:
        return start
    for at in range(len(text) - size + 1):
        if text[at : at + size] == before:
            return at
    return None
