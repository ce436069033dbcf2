"""What a strict structured-output server checks: the schema it is sent, and the answer.

OpenAI's `strict: true` accepts only closed objects (`additionalProperties: false`) that
require every property, non-empty enums, and a small set of keywords; it then generates
only answers that follow the schema. The fake does both checks: a malformed schema is a
400, as the real server answers; a scripted answer outside the schema is a test bug the
fake refuses to deliver (a strict server could not have produced it). One leniency, said
here so no one is surprised: a missing key whose schema allows null is accepted (tests
written before the schemas script answers without `sources` or `expires_at`).
"""

from __future__ import annotations

import json
from typing import Any

KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "enum"}
TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def json_schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a request's `response_format` carries, or None."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return None
    return (response_format.get("json_schema") or {}).get("schema")


def refusal(body: dict[str, Any], refused: set[str]) -> str | None:
    """The 400 message of a request this server does not accept, else None: a feature it
    was told to refuse, or a `response_format` schema a strict server rejects."""
    kind = (body.get("response_format") or {}).get("type")
    if kind in refused:
        return f"Invalid parameter: response_format of type '{kind}' is not supported."
    if "temperature" in refused and "temperature" in body:
        return "Unsupported parameter: 'temperature' is not supported with this model."
    problems = schema_problems(body)
    if problems:
        return "Invalid schema for response_format: " + "; ".join(problems)
    return None


def schema_problems(body: dict[str, Any]) -> list[str]:
    """Why a strict server would refuse this request's `response_format` ([] if it would not)."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return []
    spec = response_format.get("json_schema") or {}
    problems = []
    if not spec.get("name"):
        problems.append("json_schema.name is missing")
    if spec.get("strict") is not True:
        problems.append("json_schema.strict is not true")
    schema = spec.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return [*problems, "the schema's root is not an object"]
    return problems + _walk(schema, "$")


def _walk(node: Any, where: str) -> list[str]:
    if not isinstance(node, dict):
        return [f"{where}: not a schema"]
    problems = [f"{where}: unsupported keyword {k!r}" for k in node if k not in KEYWORDS]
    types = node.get("type")
    listed = types if isinstance(types, list) else [types]
    if not listed or any(t not in TYPES for t in listed):
        problems.append(f"{where}: bad type {types!r}")
    if "enum" in node and (not isinstance(node["enum"], list) or not node["enum"]):
        problems.append(f"{where}: an enum must list at least one value")
    if "object" in listed:
        properties = node.get("properties") or {}
        if node.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties must be false")
        if sorted(node.get("required") or []) != sorted(properties):
            problems.append(f"{where}: every property must be required")
        for name, sub in properties.items():
            problems += _walk(sub, f"{where}.{name}")
    if "array" in listed:
        problems += _walk(node.get("items"), f"{where}[]")
    return problems


def answer_problems(body: dict[str, Any], text: str) -> list[str]:
    """Where an answer leaves the request's schema ([] when it follows it, or has none)."""
    schema = json_schema_of(body)
    if schema is None:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return ["the answer is not JSON"]
    return _check(schema, value, "$")


def _check(schema: dict[str, Any], value: Any, where: str) -> list[str]:
    types = schema.get("type")
    listed = types if isinstance(types, list) else [types]
    if not any(_is(t, value) for t in listed):
        return [f"{where}: {value!r} is not {types}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    problems: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        problems += [f"{where}: {k!r} is not allowed" for k in value if k not in properties]
        for name, sub in properties.items():
            if name in value:
                problems += _check(sub, value[name], f"{where}.{name}")
            elif not _nullable(sub):
                problems.append(f"{where}: {name!r} is required")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problems += _check(schema["items"], item, f"{where}[{index}]")
    return problems


def _nullable(schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    listed = types if isinstance(types, list) else [types]
    return "null" in listed or "array" in listed  # an absent list reads as an empty one


def _is(kind: Any, value: Any) -> bool:
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "null": value is None,
    }.get(kind, False)
