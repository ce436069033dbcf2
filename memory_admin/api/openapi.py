"""The errors every operation can answer, stated in the OpenAPI document once for all.

Any operation can meet a store that is down (503 with Retry-After) and input that
breaks its schema (422), and an authenticated one a missing key (401). Declaring
them per handler is easy to forget (a new endpoint's path parameter is too long:
an undocumented 422; a new body that is not UTF-8: an undocumented 400), so they are
added here to every operation that lacks them.
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
COMMON_ERRORS: dict[str, dict[str, Any]] = {
    "422": {
        "description": "The request does not match this operation's schema.",
        "content": _ERROR,
    },
    "503": {
        "description": "The memory store is unreachable; retry after `Retry-After` seconds.",
        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
        "content": _ERROR,
    },
}
UNAUTHORIZED = {"description": "A valid API key is required.", "content": _ERROR}
# An operation that takes a body can meet one that is not JSON or not UTF-8 (the parser,
# `memory_admin.api.parser`, answers 400 `malformed_json` before the handler runs).
MALFORMED_BODY = {"description": "The body is not valid JSON or not UTF-8.", "content": _ERROR}


def document_common_errors(api: NinjaAPI) -> None:
    """Wrap `api.get_openapi_schema` so every operation lists the common error statuses."""
    original = api.get_openapi_schema

    def get_openapi_schema(**kwargs: Any) -> Any:
        document = original(**kwargs)
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                # Ninja keys statuses by int; JSON makes both "422" and 422 the same
                # key, written twice (a duplicated mapping key Swagger refuses). One
                # string key per status; the operation's own entry wins.
                responses = {str(status): value for status, value in operation["responses"].items()}
                operation["responses"] = responses
                for status, response in COMMON_ERRORS.items():
                    responses.setdefault(status, response)
                if operation.get("security"):
                    responses.setdefault("401", UNAUTHORIZED)
                if "requestBody" in operation:
                    responses.setdefault("400", MALFORMED_BODY)
        return document

    api.get_openapi_schema = get_openapi_schema  # type: ignore[method-assign]
