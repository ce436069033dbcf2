"""Asking the server to close a connection after this response.

See `memory_admin.runtime.gunicorn_worker`.

A WSGI app may not send `Connection` itself; under the repo's gunicorn worker this
flag makes gunicorn send `Connection: close` and close; elsewhere it does nothing.
"""

from __future__ import annotations

from django.http import HttpRequest

CLOSE_KEY = "memory_admin.close_connection"


def close_connection(request: HttpRequest) -> None:
    """This response is the connection's last (its request body is left unread)."""
    request.META[CLOSE_KEY] = True
