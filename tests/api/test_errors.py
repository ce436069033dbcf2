"""The envelope for everything that goes wrong under /api/, whoever answers: never HTML, no 500s."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.test import Client

from memory_admin.api.middleware import ApiErrorEnvelopeMiddleware
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory


def test_unknown_url_under_api_is_404_envelope(api):
    error = assert_error(api.get("/api/v1/no-such-thing"), 404, "not_found")
    assert "/api/v1/no-such-thing" in error["message"]
    assert_error(api.get("/api/v2/health"), 404, "not_found")


def test_unknown_url_outside_api_is_left_alone(db):
    response = Client().get("/no-such-page")
    assert not response["Content-Type"].startswith("application/json")


def test_wrong_method_is_405_envelope(api):
    response = api.delete(f"{API}/health")
    error = assert_error(response, 405, "method_not_allowed")
    assert error["details"] == {"allowed": ["GET"]}
    assert response["Allow"] == "GET"


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b'{"content": "\xff\xfe"}', "UTF-8"),
        (b"content=hello", "JSON"),
        (b'{"content": "unterminated', "JSON"),
        (b'{"content": "x", "n": NaN}', "NaN"),
        (b'{"content": "\\ud800"}', "unicode"),
    ],
    ids=["broken-utf8", "form-encoded", "truncated", "nan", "lone-surrogate"],
)
def test_malformed_bodies_are_400_malformed_json(api, store, body, what):
    scope = ScopeFactory.create(store=store)
    response = api.post(
        f"{API}/scopes/{scope.id}/observations", body, content_type="application/json"
    )
    error = assert_error(response, 400, "malformed_json")
    assert what in error["message"]


def test_oversized_body_is_413(api, store, settings):
    settings.API_MAX_BODY_BYTES = 1000
    scope = ScopeFactory.create(store=store)
    body = '{"content": "' + "x" * 2000 + '"}'
    response = api.post(
        f"{API}/scopes/{scope.id}/observations", body, content_type="application/json"
    )
    error = assert_error(response, 413, "payload_too_large")
    assert error["details"] == {"max_bytes": 1000}


def test_body_past_djangos_own_limit_is_413_not_400(api, store, settings):
    settings.API_MAX_BODY_BYTES = 10_000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    scope = ScopeFactory.create(store=store)
    body = '{"content": "' + "x" * 2000 + '"}'
    response = api.post(
        f"{API}/scopes/{scope.id}/observations", body, content_type="application/json"
    )
    assert_error(response, 413, "payload_too_large")


def test_body_within_the_limit_is_accepted(api, store, settings):
    settings.API_MAX_BODY_BYTES = 1000
    scope = ScopeFactory.create(store=store)
    response = api.post(
        f"{API}/scopes/{scope.id}/observations", {"content": "x"}, content_type="application/json"
    )
    assert response.status_code == 201


def test_unexpected_error_is_500_envelope_without_trace(api_key, store, monkeypatch, caplog):
    def boom(**kwargs: object) -> None:
        raise RuntimeError("secret internals at /srv/app/streams/scopes.py")

    monkeypatch.setattr("memory_admin.api.v1.scopes.scope_list", boom)
    client = Client(
        raise_request_exception=False, headers={"Authorization": f"Bearer {api_key[1]}"}
    )
    with caplog.at_level(logging.ERROR, logger="memory_admin.api"):
        response = client.get(f"{API}/agents/agent-1/scopes")
    error = assert_error(response, 500, "internal_error")
    assert error["details"] is None
    text = response.content.decode()
    assert "secret" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert "secret internals" in caplog.text  # the operator still gets the trace


def test_500_envelope_also_in_debug_mode(api_key, store, monkeypatch, settings):
    settings.DEBUG = True
    monkeypatch.setattr(
        "memory_admin.api.v1.scopes.scope_get",
        lambda **kwargs: (_ for _ in ()).throw(KeyError("oops")),
    )
    client = Client(
        raise_request_exception=False, headers={"Authorization": f"Bearer {api_key[1]}"}
    )
    response = client.get(f"{API}/scopes/{'0' * 24}")
    error = assert_error(response, 500, "internal_error")
    assert "oops" not in response.content.decode() and error["details"] is None


@pytest.mark.parametrize(
    "bad_id", ["nope", "0" * 23, "g" * 24, "0" * 25, "%00", "x" * 300, "😀" * 12]
)
def test_malformed_ids_are_404_never_500(api, bad_id):
    for path in (f"/scopes/{bad_id}", f"/scopes/{bad_id}/observations", f"/observations/{bad_id}"):
        assert_error(api.get(API + path), 404, "not_found")
    response = api.post(
        f"{API}/scopes/{bad_id}/observations", {"content": "x"}, content_type="application/json"
    )
    assert_error(response, 404, "not_found")


def test_unknown_but_wellformed_ids_are_404(api):
    assert_error(api.get(f"{API}/scopes/{'a' * 24}"), 404, "not_found")
    assert_error(api.get(f"{API}/observations/{'a' * 24}"), 404, "not_found")


def test_bad_content_length_is_400(api):
    response = api.generic("POST", f"{API}/agents/a1/scopes", b"{}", CONTENT_LENGTH="lots")
    assert_error(response, 400, "bad_request")


def test_middleware_envelopes_html_errors_from_outside_ninja(rf):
    def html_crash(request: object) -> HttpResponse:
        return HttpResponse("<h1>Server Error</h1>", status=500, content_type="text/html")

    response = ApiErrorEnvelopeMiddleware(html_crash)(rf.get("/api/v1/anything"))
    assert_error(response, 500, "internal_error")
    untouched = ApiErrorEnvelopeMiddleware(html_crash)(rf.get("/dashboard"))
    assert untouched.content == b"<h1>Server Error</h1>"


def test_middleware_turns_request_data_too_big_into_413(rf):
    middleware = ApiErrorEnvelopeMiddleware(lambda request: HttpResponse())
    response = middleware.process_exception(rf.post("/api/v1/x"), RequestDataTooBig("big"))
    assert_error(response, 413, "payload_too_large")
    assert middleware.process_exception(rf.post("/ui/x"), RequestDataTooBig("big")) is None
