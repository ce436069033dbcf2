"""A JSON parser stricter than ninja's: only well-formed UTF-8 and standard JSON pass.

`json.loads` on bytes guesses the encoding and lets lone surrogates, `NaN` and
`Infinity` through; such text would later fail deep in pymongo's BSON encoder
as a 500. Rejecting it at the door makes every bad body a 400 `malformed_json`.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.http import HttpRequest
from ninja.parser import Parser
from ninja.types import DictStrAny

from memory_admin.api.errors import MalformedJson


def _reject_constant(name: str) -> Any:
    raise MalformedJson(f"{name} is not valid JSON")


class StrictJsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> DictStrAny:
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedJson("the body is not valid UTF-8") from exc
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise MalformedJson(f"the body is not valid JSON: {exc.msg}") from exc
        try:
            # Escapes such as "\ud800" decode to lone surrogates that no UTF-8 store accepts.
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MalformedJson("the body holds an invalid unicode escape") from exc
        return cast(DictStrAny, data)
