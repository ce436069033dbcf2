"""The API's per-key rate limit holds across gunicorn workers when `MEMORY_CACHE_URL` points
Django's cache at Redis (issue 30: F6). In local memory each worker counted for itself, so
three workers let a key through three times its limit."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory_admin.runtime.embedded_store import _free_port
from tests.http_client import HttpClient
from tests.services import REDIS_URL, needs_redis
from tests.test_production import ROOT, manage, production_env

LIMIT = 5


@pytest.mark.redis
@needs_redis
def test_three_workers_share_one_limit_through_redis(embedded_mongo, tmp_path):
    env = production_env(tmp_path)
    env.update(
        MEMORY_CACHE_URL=REDIS_URL,
        MEMORY_CACHE_KEY_PREFIX=f"test-{uuid.uuid4().hex}",  # this run's counts only
        MEMORY_API_RATE_LIMIT=str(LIMIT),
    )
    assert manage(env, "migrate", "--noinput", "-v0").returncode == 0
    created = manage(env, "create_api_key", "--name", "limited")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,
        env={
            **env,
            "GUNICORN_BIND": f"127.0.0.1:{port}",
            "WEB_CONCURRENCY": "3",
            # The access log names the worker (pid) that answered each request.
            "GUNICORN_CMD_ARGS": "--access-logformat 'served %(p)s %(s)s %(U)s'",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    client = HttpClient(
        base, headers={"Authorization": f"Bearer {key}", "X-Forwarded-Proto": "https"}
    )
    try:
        HttpClient(base).wait_until_up("/api/v1/health", within=60)
        if time.time() % 60 > 45:  # one fixed window for the whole burst
            time.sleep(61 - time.time() % 60)
        # Each request on its own connection, several at once: the workers share them.
        with ThreadPoolExecutor(max_workers=6) as pool:
            statuses = list(pool.map(lambda _: client.get("/api/v1/jobs").status_code, range(30)))
    finally:
        server.terminate()
        log, _ = server.communicate(timeout=30)
    served = re.findall(r"served <?(\d+)>? (\d+) /api/v1/jobs", log)
    workers = {pid for pid, _ in served}
    assert len(served) == 30 and len(workers) >= 2, log[-2000:]  # else it would prove nothing
    assert statuses.count(200) == LIMIT, statuses
    assert statuses.count(429) == 30 - LIMIT, statuses


def test_a_cache_that_cannot_be_reached_counts_per_process_never_unlimited(
    settings, monkeypatch, caplog
):
    """Fail closed (issue 44): with the shared cache down the same limit is counted by
    this process, so the second request of a limit of 1 is refused, not let through."""
    from memory_admin.api import ratelimit

    def down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    settings.MEMORY_API_RATE_LIMIT = 1
    ratelimit.reset_for_tests()
    monkeypatch.setattr(ratelimit, "_count", down)
    try:
        ratelimit.check_rate("some-key")
        with pytest.raises(ratelimit.RateLimited):
            ratelimit.check_rate("some-key")
        assert "rate limit counted per process, the shared cache failed" in caplog.text
    finally:
        ratelimit.reset_for_tests()


def test_a_cache_url_that_is_not_redis_is_refused_at_start():
    env = {"MEMORY_CACHE_URL": "memcached://127.0.0.1:11211", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", "import memory_admin.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "MEMORY_CACHE_URL must be a redis://" in done.stderr
