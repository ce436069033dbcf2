"""Bearer API keys, and the two access rules they carry: which agents a key may see,
and what it may do there (its permissions: read, write, forget, review).

A key limited to some agents must not learn that another agent's objects
exist, so every "not yours" is answered exactly like "not there" (404).
A missing permission is a 403 (`permission_denied`), checked before the body is
validated, so a read-only key learns nothing from a write's 422 either.

Every operation names its permission once, in its decorator:
`@router.post("/...", auth=needs("write"))`. Where the permission depends on the
body (a field only a `review` key may set), the view calls
`require_permission(request, "review")`. tests/api/test_permissions.py fails for
an operation that names none.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

from django.db import OperationalError
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from memory_admin.api.ratelimit import check_rate
from memory_admin.models import PERMISSIONS, ApiKey, hash_api_key
from streams.core.exceptions import MemoryServiceError, NotFound

# `last_used_at` is for operators ("is this key still in use?"), so a minute's
# resolution is plenty and spares a write on every request of the hot path.
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_TOKEN_CHARS = 256


class PermissionDenied(MemoryServiceError):
    """The key is valid but lacks the permission this operation needs (403)."""

    code = "permission_denied"


class ApiKeyAuth(HttpBearer):
    """`Authorization: Bearer <key>`; `request.auth` becomes the active `ApiKey`.

    With `permissions`, a valid key lacking any of them is refused with 403 (see `needs`).
    """

    def __init__(self, *permissions: str) -> None:
        unknown = set(permissions) - set(PERMISSIONS)
        if unknown:
            raise ValueError(f"unknown permissions {sorted(unknown)}")
        self.permissions = permissions
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        token = token.strip()
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        key = ApiKey.objects.active().filter(key_hash=hash_api_key(token)).first()
        if key is None:
            return None
        check_rate(key.pk)
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
            # SQLite locked by a concurrent request: skip this beat, the next one writes.
            with contextlib.suppress(OperationalError):
                ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        for permission in self.permissions:
            _check(key, permission)
        return key


_NEEDS: dict[tuple[str, ...], ApiKeyAuth] = {}


def needs(*permissions: str) -> ApiKeyAuth:
    """The auth of an operation that needs these permissions: `auth=needs("write")`."""
    if not permissions:
        raise ValueError("name at least one permission")
    if permissions not in _NEEDS:
        _NEEDS[permissions] = ApiKeyAuth(*permissions)
    return _NEEDS[permissions]


def _check(key: ApiKey, permission: str) -> None:
    if permission not in PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")
    if not key.has_permission(permission):
        raise PermissionDenied(
            f"this API key lacks the {permission!r} permission",
            details={"permission": permission, "granted": list(key.granted)},
        )


def document_permissions(api: Any) -> None:
    """State in the OpenAPI document what each operation needs: `x-permissions` and a 403
    response naming them (added once: a 403 an operation documents itself is kept)."""
    needed: dict[tuple[str, str], tuple[str, ...]] = {}
    for _prefix, router in api._routers:
        for path, path_view in router.path_operations.items():
            for operation in path_view.operations:
                granted = [
                    a.permissions for a in operation.auth_callbacks if isinstance(a, ApiKeyAuth)
                ]
                for method in operation.methods:
                    if granted and granted[0]:
                        needed[(method.lower(), path)] = granted[0]
    original = api.get_openapi_schema

    def get_openapi_schema(**kwargs: Any) -> Any:
        document = original(**kwargs)
        paths = document.get("paths", {})
        # The document's paths carry the API's mount point ("/api/v1"); the routers' do not.
        mount = next((p[: -len("/health")] for p in paths if p.endswith("/health")), "")
        for path, path_item in paths.items():
            for method, operation in path_item.items():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                permissions = needed.get((method, path.removeprefix(mount)))
                if not permissions:
                    continue
                operation["x-permissions"] = list(permissions)
                responses = operation["responses"]
                if 403 not in responses and "403" not in responses:
                    names = " and ".join(f"`{p}`" for p in permissions)
                    plural = "s" if len(permissions) > 1 else ""
                    responses["403"] = {
                        "description": f"The API key lacks the {names} permission{plural} "
                        "(`permission_denied`).",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ErrorOut"}
                            }
                        },
                    }
        return document

    api.get_openapi_schema = get_openapi_schema


def require_permission(request: HttpRequest, permission: str) -> None:
    """PermissionDenied (403) unless the caller's key has `permission`; for checks that
    depend on the body (operations state their base permission with `needs`)."""
    _check(request.auth, permission)  # type: ignore[attr-defined]


def visible_agents(request: HttpRequest) -> frozenset[str] | None:
    """The agents the caller's key may see, or None for every agent."""
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    return key.agent_scope


def require_agent(request: HttpRequest, agent_id: str) -> None:
    """NotFound unless the caller's key may see `agent_id`."""
    agents = visible_agents(request)
    if agents is not None and agent_id not in agents:
        raise NotFound("agent not found")


def require_admin_key(request: HttpRequest) -> None:
    """PermissionDenied unless the caller's key is an admin key (made without agents)."""
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    if not key.is_admin:
        raise PermissionDenied(
            "this operation needs an admin key (one made without agents)",
            details={"permission": "admin", "granted": list(key.granted)},
        )


def actor_name(request: HttpRequest) -> str:
    """Who a write is recorded as: the caller's API key name."""
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    return key.name
