"""Schemathesis hooks for tests/api/test_schemathesis.py: the envelope check.

Loaded by the `st` CLI through SCHEMATHESIS_HOOKS. Every error answer of the API,
whatever produced it (ninja, Django, the middleware, gunicorn), must be the one
envelope `{"error": {"code", "message", "details"}}` of shared/spec/api.md.
"""

from __future__ import annotations

import json

import schemathesis


@schemathesis.check
def error_envelope(ctx, response, case):  # noqa: ARG001 - schemathesis' check signature
    if response.status_code < 400:
        return None
    headers = {name.lower(): value for name, value in response.headers.items()}
    content_type = headers.get("content-type", "")
    if isinstance(content_type, list):
        content_type = content_type[0] if content_type else ""
    assert content_type.startswith("application/json"), f"error as {content_type!r}"
    body = json.loads(response.content)
    assert isinstance(body, dict) and set(body) == {"error"}, f"not the envelope: {body!r}"
    error = body["error"]
    assert isinstance(error, dict) and set(error) == {"code", "message", "details"}, error
    assert isinstance(error["code"], str) and error["code"], error
    assert isinstance(error["message"], str) and error["message"], error
    return None
