"""A json_schema task's ``expectedOutput.schema``, checked at load time as the original's Ajv does.

eval-skills compiles each expected-output schema with Ajv 8 in strict mode, so a schema
with an unknown keyword or format fails there; :func:`expected_schema` refuses the same
schemas (plus any that breaks its draft's meta-schema) when the benchmark loads, naming
the file, line and JSON path, so a broken schema fails the load, not the run.
"""

from __future__ import annotations

from typing import Any

from benchkit.formats._source import Document, JsonPath


def expected_schema(doc: Document, expected: dict[str, Any], path: JsonPath) -> dict[str, Any]:
    """``expectedOutput.schema``, checked against its draft's meta-schema (draft-07 unless
    its ``$schema`` names another), so a broken schema fails the load, not the run."""
    where: JsonPath = (*path, "expectedOutput", "schema")
    if "schema" not in expected:
        raise doc.error(
            "a json_schema task needs `expectedOutput.schema`",
            (*path, "expectedOutput"),
            fix="add the JSON Schema the output must match as `schema`.",
        )
    value: dict[str, Any] = expected["schema"]
    import jsonschema

    cls = jsonschema.validators.validator_for(value, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(value)
    except jsonschema.SchemaError as exc:
        raise doc.error(
            f"invalid JSON Schema: {exc.message}",
            (*where, *exc.absolute_path),
            fix="check the schema against its draft (draft-07 unless `$schema` says otherwise).",
        ) from exc
    _strict(doc, value, where)
    return value


#: The keywords Ajv 8 (the original's validator) knows for a draft-07 schema: the draft's
#: own, its metadata, and Ajv's ``nullable`` / ``$defs``. In strict mode, which the
#: original uses, any other keyword makes the schema fail to compile.
_AJV_KEYWORDS = frozenset(
    [
        "$id",
        "$schema",
        "$ref",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "type",
        "enum",
        "const",
        "nullable",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "contentMediaType",
        "contentEncoding",
        "items",
        "additionalItems",
        "maxItems",
        "minItems",
        "uniqueItems",
        "contains",
        "maxProperties",
        "minProperties",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "dependencies",
        "propertyNames",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
    ]
)
#: Keywords of the drafts after 7, allowed when ``$schema`` names 2019-09 or 2020-12.
_LATER_KEYWORDS = frozenset(
    [
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
        "$vocabulary",
        "prefixItems",
        "unevaluatedItems",
        "unevaluatedProperties",
        "dependentSchemas",
        "dependentRequired",
        "maxContains",
        "minContains",
        "contentSchema",
    ]
)
#: Formats ajv-formats adds (strict mode refuses any other).
_AJV_FORMATS = frozenset(
    [
        "date",
        "time",
        "date-time",
        "iso-time",
        "iso-date-time",
        "duration",
        "uri",
        "uri-reference",
        "uri-template",
        "url",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "regex",
        "uuid",
        "json-pointer",
        "json-pointer-uri-fragment",
        "relative-json-pointer",
        "byte",
        "int32",
        "int64",
        "float",
        "double",
        "password",
        "binary",
    ]
)
_ONE_SCHEMA = ("items", "additionalItems", "additionalProperties", "contains", "propertyNames",
               "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties",
               "contentSchema")  # fmt: skip
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "items", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependencies",
                "dependentSchemas")  # fmt: skip


def _strict(doc: Document, schema: dict[str, Any], where: JsonPath) -> None:
    """Refuse what Ajv's strict mode refuses: unknown keywords and unknown formats."""
    draft = str(schema.get("$schema", ""))
    known = _AJV_KEYWORDS | (_LATER_KEYWORDS if "2019-09" in draft or "2020-12" in draft else set())
    stack: list[tuple[Any, JsonPath]] = [(schema, where)]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key not in known:
                raise doc.error(
                    f"unknown JSON Schema keyword `{key}` (the original compiles schemas in "
                    "Ajv's strict mode, which refuses it)",
                    (*path, key),
                    fix="remove it, or write it as a known keyword (draft-07).",
                )
            if key == "format" and isinstance(value, str) and value not in _AJV_FORMATS:
                raise doc.error(
                    f"unknown format {value!r} (Ajv's strict mode refuses it)",
                    (*path, key),
                    fix=f"use one of: {', '.join(sorted(_AJV_FORMATS))}.",
                )
            if key in _ONE_SCHEMA and isinstance(value, dict):
                stack.append((value, (*path, key)))
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((item, (*path, key, i)) for i, item in enumerate(value))
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((item, (*path, key, name)) for name, item in value.items())
