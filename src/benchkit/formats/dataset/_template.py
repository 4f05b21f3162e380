"""``{field}`` templates: a prompt made from a row's fields, and nothing else (no Jinja).

A value in a dataset file is a **template** when it holds a ``{field}`` placeholder
(``"Question: {goal}\\nAnswer:"``) and a **field name** when it holds none (``answer``):
the field's value, whatever its type. ``{a.b}`` reads a nested object's field; ``{{``
and ``}}`` are literal braces. Nothing else is allowed in a placeholder (no format
specification, no conversion, no expression), so a template means one thing.

    >>> Template.parse("Q: {question}\\nA:").render({"question": "Why?"})
    'Q: Why?\\nA:'
    >>> Template.parse("answer").value({"answer": 2})
    2
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["MissingField", "Template"]

_NAME = re.compile(r"[^\W\d][\w-]*(\.[^\W\d][\w-]*|\.\d+)*")


class MissingField(LookupError):
    """A row has no such field (``name``: the dotted path that is missing)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@attrs.frozen
class Template:
    """A parsed template, or a field name (:attr:`field`)."""

    text: str
    parts: tuple[tuple[str, str | None], ...]  # (literal, field after it or None)
    field: str | None = None

    @classmethod
    def parse(cls, text: str) -> Template:
        """Parse ``text``; ValueError saying what is wrong with a placeholder."""
        if "{" not in text and "}" not in text:
            if not _NAME.fullmatch(text):
                raise ValueError(
                    f"{text!r} is neither a field name (letters, digits, _ and -, dotted for "
                    "a nested field) nor a template with a {field} placeholder"
                )
            return cls(text, ((("", text)),), field=text)
        parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise ValueError(f"template {text!r}: {exc} (write {{{{ and }}}} for braces)") from None
        for literal, name, spec, conversion in parsed:
            if name is None:
                parts.append((literal, None))
                continue
            if conversion or spec:
                raise ValueError(
                    f"template {text!r}: {{{name}{'!' + conversion if conversion else ''}"
                    f"{':' + spec if spec else ''}}} — only {{field}} is allowed"
                )
            if not _NAME.fullmatch(name):
                raise ValueError(f"template {text!r}: {{{name}}} is not a field name")
            parts.append((literal, name))
        return cls(text, tuple(parts))

    @property
    def fields(self) -> list[str]:
        return [name for _, name in self.parts if name is not None]

    def value(self, row: Mapping[str, Any]) -> Any:
        """The field's value (a field name), else the rendered text."""
        if self.field is not None:
            return lookup(row, self.field)
        return self.render(row)

    def render(self, row: Mapping[str, Any]) -> str:
        """The text, each placeholder replaced by its field's value (strings as they are,
        other values as JSON would write a number, ``true`` or ``null``)."""
        out = []
        for literal, name in self.parts:
            out.append(literal)
            if name is not None:
                out.append(_text(lookup(row, name)))
        return "".join(out)


def lookup(row: Mapping[str, Any], name: str) -> Any:
    """The value at the dotted path ``name`` (a list's item by its index); MissingField."""
    value: Any = row
    for part in name.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise MissingField(name)
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
