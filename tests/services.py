"""Which outside services the suite can reach, and whether CI demands them.

Tests that need PostgreSQL, Redis, Chromium or nginx run whenever those are present
and are skipped, with the reason, when they are not. `.ci/run` sets
MEMORY_TEST_REQUIRE_SERVICES=1, which turns "not present" into running the
test anyway, so it fails loudly instead of passing by skipping.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

import pytest

REQUIRE_SERVICES = os.environ.get("MEMORY_TEST_REQUIRE_SERVICES", "") == "1"
POSTGRES_URL = os.environ.get(
    "MEMORY_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
# Each pytest-xdist worker its own Redis database (15, 14, 13, 11, ...; 12 is the broker
# re-run's, tests/integration/side_runs.py), so workers share no queue and no key.
_REDIS_BASE = os.environ.get("MEMORY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_REDIS_DBS = [db for db in range(int(_REDIS_BASE.rsplit("/", 1)[1]), 0, -1) if db != 12]
REDIS_URL = _REDIS_BASE.rsplit("/", 1)[0] + f"/{_REDIS_DBS[_WORKER % len(_REDIS_DBS)]}"
CHROMIUM_PATH = os.environ.get("MEMORY_TEST_CHROMIUM", "/usr/bin/chromium")
NGINX_PATH = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _needs(available: bool, what: str) -> pytest.MarkDecorator:
    reason = (
        f"{what} is not available here; CI sets MEMORY_TEST_REQUIRE_SERVICES=1 so it never skips"
    )
    return pytest.mark.skipif(not available and not REQUIRE_SERVICES, reason=reason)


needs_postgres = _needs(_port_open("127.0.0.1", 5432), "PostgreSQL on 127.0.0.1:5432")
needs_redis = _needs(_port_open("127.0.0.1", 6379), "Redis on 127.0.0.1:6379")
needs_chromium = _needs(shutil.which(CHROMIUM_PATH) is not None, f"Chromium at {CHROMIUM_PATH}")
needs_nginx = _needs(NGINX_PATH is not None, "nginx (Debian package `nginx`)")
needs_redis_server = _needs(
    shutil.which("redis-server") is not None, "redis-server (Debian package `redis-server`)"
)


def _can_make_namespaces() -> bool:
    """Root, and `ip netns` answers (the multi-host rehearsal's hosts)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, check=False)
    return done.returncode == 0


needs_rehearsal = _needs(
    _can_make_namespaces()
    and NGINX_PATH is not None
    and shutil.which("redis-server") is not None
    and shutil.which("psql") is not None
    and os.path.exists("/var/run/postgresql/.s.PGSQL.5432"),
    "root with `ip netns`, nginx, redis-server and PostgreSQL's Unix socket "
    "(the multi-host rehearsal, deploy/rehearsal/)",
)
