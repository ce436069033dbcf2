"""gunicorn's settings: `gunicorn memory_admin.wsgi` reads this file from the working directory.

Environment: GUNICORN_BIND (default 127.0.0.1:8000, behind the TLS proxy),
WEB_CONCURRENCY (workers, default 3), GUNICORN_THREADS (threads per worker, default 4),
FORWARDED_ALLOW_IPS (the proxy's address), GUNICORN_READ_TIMEOUT (seconds a client's
socket may stall mid-request, default 10), GUNICORN_REQUEST_DEADLINE (seconds for a
request's whole head and body from its first byte, default 30; both read by the worker
class, which reads each request whole on its event loop before a thread sees it).

Run it behind the buffering proxy of deploy/nginx/ (docs/deploy.md): nginx reads each
request whole before gunicorn sees it, so slow clients hold nginx's cheap connections,
never gunicorn's few threads.
"""

from __future__ import annotations

import os

# A production entry point: DEBUG is off unless DJANGO_DEBUG says otherwise, so with no
# environment the app refuses to start (DJANGO_SECRET_KEY is then required) instead of
# serving Django's debug pages. `make run` (runserver) keeps DEBUG on for development.
if not os.environ.get("DJANGO_DEBUG", "").strip():
    os.environ["DJANGO_DEBUG"] = "false"

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
# Threaded workers: a streamed chat answer (`stream: true`) holds its thread, not its worker.
# gunicorn's gthread, with its own error answers (431, 400) in the API's JSON envelope and
# `Connection: close` on the app's early refusals (memory_admin/runtime/gunicorn_worker.py).
worker_class = "memory_admin.runtime.gunicorn_worker.EnvelopeThreadWorker"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = 60
graceful_timeout = 30
# Which proxies may set X-Forwarded-* (gunicorn's own view; Django reads X-Forwarded-Proto
# only with DJANGO_SECURE_PROXY_SSL_HEADER=true).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# The request line. Every URL parameter is bounded by the OpenAPI, but percent-encoded
# UTF-8 takes up to 12 bytes a character, so the longest valid URL passes gunicorn's cap
# of 8190 bytes, and its 414 would be an HTML page outside the API's error envelope.
# 0 lifts the cap (gunicorn still stops reading at 1 MiB); the app answers long
# URLs itself, in its envelope (tests/test_production.py).
limit_request_line = 0
accesslog = "-"
