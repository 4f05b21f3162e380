"""Skill metadata checker: answers skill-quality's ``checkType`` checks about a skill.

Params: ``checkType`` (metadata, description_length, directory_not_empty, json_valid or
accessibility), the check's own options (``field``, ``minLength``) and optionally
``skillDir``, the skill directory to check (default: this skill's own). The answer is a
string; a failed check never contains the words a passing answer is recognised by.
JSON-RPC 2.0 on stdin/stdout, one request per run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


class CheckError(Exception):
    """Params the checker cannot act on (JSON-RPC error -32602)."""


def frontmatter(path: Path) -> dict[str, str] | None:
    """The ``key: value`` lines between the leading ``---`` fences, or None without them."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            fields[key.strip()] = value.strip()
    return None


def check_metadata(root: Path, field: str) -> str:
    path = root / field
    if not path.is_file():
        return f"{field} is missing"
    fields = frontmatter(path)
    if fields is None:
        return f"{field} has no frontmatter block"
    present = [f"{key}: {fields[key]}" for key in ("name", "description") if fields.get(key)]
    absent = [key for key in ("name", "description") if not fields.get(key)]
    answer = f"{field} frontmatter has " + ("; ".join(present) or "no required keys")
    if absent:
        answer += f" (lacking {' and '.join(absent)})"
    return answer


def description_of(root: Path) -> str:
    skill_md = root / "SKILL.md"
    if skill_md.is_file():
        fields = frontmatter(skill_md) or {}
        if fields.get("description"):
            return fields["description"]
    try:
        manifest = json.loads((root / "skill.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    text = manifest.get("description") if isinstance(manifest, dict) else None
    return text if isinstance(text, str) else ""


def check_description_length(root: Path, minimum: int) -> str:
    length = len(description_of(root).strip())
    if length >= minimum:
        return f"description has {length} characters (minimum {minimum})"
    return f"the summary has {length} characters, fewer than the {minimum} required"


def check_directory(root: Path) -> str:
    names = sorted(entry.name for entry in root.iterdir() if not entry.name.startswith("."))
    if not names:
        return "the directory is empty"
    return f"{len(names)} entries: {', '.join(names)}"


def check_json(root: Path) -> str:
    path = root / "skill.json"
    if not path.is_file():
        return "there is no manifest file to check"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return f"the manifest does not parse (line {exc.lineno}, column {exc.colno})"
    if not isinstance(data, dict):
        return "the manifest is not an object"
    return "skill.json is valid JSON"


def check_access(root: Path) -> str:
    if not os.access(root, os.R_OK | os.X_OK):
        return "the directory cannot be read"
    blocked = [p.name for p in root.iterdir() if p.is_file() and not os.access(p, os.R_OK)]
    if blocked:
        return f"unreadable files: {', '.join(sorted(blocked))}"
    return "accessible"


def target(params: dict[str, Any]) -> Path:
    given = params.get("skillDir", ".")
    if not isinstance(given, str):
        raise CheckError("skillDir must be a string")
    root = Path(given)
    if not root.is_dir():
        raise CheckError(f"skillDir {given!r} is not a directory")
    return root


def check(params: Any) -> str:
    if not isinstance(params, dict):
        raise CheckError("params must be an object")
    kind = params.get("checkType")
    root = target(params)
    if kind == "metadata":
        field = params.get("field", "SKILL.md")
        if not isinstance(field, str) or "/" in field or field.startswith("."):
            raise CheckError("field must name a file in the skill directory")
        return check_metadata(root, field)
    if kind == "description_length":
        minimum = params.get("minLength", 20)
        if not isinstance(minimum, int) or minimum < 0:
            raise CheckError("minLength must be a whole number")
        return check_description_length(root, minimum)
    if kind == "directory_not_empty":
        return check_directory(root)
    if kind == "json_valid":
        return check_json(root)
    if kind == "accessibility":
        return check_access(root)
    raise CheckError(f"unknown checkType {kind!r}")


def handle(request: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    method = request.get("method")
    if method == "healthcheck":
        reply["result"] = {"status": "ok"}
    elif method != "invoke":
        reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
    else:
        try:
            reply["result"] = check(request.get("params"))
        except CheckError as exc:
            reply["error"] = {"code": -32602, "message": str(exc)}
        except OSError as exc:
            reply["error"] = {"code": -32000, "message": f"cannot read the skill: {exc}"}
    return reply


def main() -> None:
    try:
        request = json.loads(sys.stdin.readline())
    except ValueError:
        request = None
    if isinstance(request, dict):
        reply = handle(request)
    else:
        error = {"code": -32700, "message": "parse error: expected one JSON-RPC request"}
        reply = {"jsonrpc": "2.0", "id": None, "error": error}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
