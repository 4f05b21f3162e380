"""Every test checks something: an assert, a pytest.raises, or an assert_* helper.

Checked on the syntax tree, so a test whose checks live in a nested function counts only
when that function is used by the test (called, or handed to anyio.run and the like).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = sorted(Path(__file__).parent.rglob("test_*.py"))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a function body, without those of functions defined inside it."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _checks(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        return "raises" in name or name.split(".")[-1].startswith("assert_")
    return False


def _asserts(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    own = list(_own(fn.body))
    if any(_checks(node) for node in own):
        return True
    used = {node.id for node in own if isinstance(node, ast.Name)}
    nested = [n for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(inner.name in used and _asserts(inner) for inner in nested)


@pytest.mark.parametrize(
    "path", TESTS, ids=[str(p.relative_to(Path(__file__).parent)) for p in TESTS]
)
def test_every_test_asserts_something(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    silent = [
        f"{node.name} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test_")
        and not _asserts(node)
    ]
    assert silent == [], f"{path.name}: tests that check nothing: {', '.join(silent)}"


def test_the_check_catches_a_silent_test() -> None:
    tree = ast.parse("def test_x():\n    def helper():\n        assert 1\n    print(2)\n")
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert not _asserts(fn)
    used = ast.parse("def test_y():\n    def helper():\n        assert 1\n    run(helper)\n")
    assert _asserts(used.body[0])  # type: ignore[arg-type]
