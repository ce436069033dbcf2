"""Killing the embedded store under a running app: it comes back, nothing acknowledged is lost.

The app runs as production runs it (gunicorn, two worker processes) on the embedded
store of its own data directory. Mid-run, the store server gets SIGKILL. Requests
made meanwhile answer 503 with the envelope and Retry-After, quickly; within seconds
a new server runs and every worker writes again; every observation that was
acknowledged (201) before, during or after is there at the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_admin.runtime.embedded_store import _free_port, _pid_alive, stop_embedded_server
from tests.http_client import HttpClient

ROOT = Path(__file__).resolve().parent.parent


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MONGODB_", "CELERY_"))}
    env.update(
        MEMORY_DATA_DIR=str(data_dir),
        DJANGO_DEBUG="true",
        OPENAI_API_KEY="",
        DJANGO_SETTINGS_MODULE="memory_admin.settings",
    )
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


@pytest.fixture
def served_app(tmp_path):
    """(base URL, API key, data dir) of gunicorn on the embedded store of `tmp_path`."""
    env = _env(tmp_path)
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "ensure_indexes")
    raw_key = _manage(env, "create_api_key", "--name", "supervision").strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "memory_admin.wsgi:application",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "gunicorn.log", "wb"),  # noqa: SIM115
    )
    base = f"http://127.0.0.1:{port}"
    try:
        HttpClient(base).wait_until_up("/api/v1/health", within=60)
        yield base, raw_key, tmp_path
    finally:
        server.terminate()
        server.wait(30)
        stop_embedded_server(data_dir=tmp_path)


def test_a_killed_store_is_replaced_and_nothing_acknowledged_is_lost(served_app):
    base, raw_key, data_dir = served_app
    api = HttpClient(base + "/api/v1", headers={"Authorization": f"Bearer {raw_key}"})
    scope = api.post("/agents/a1/scopes", json={"scope_type": "group", "group_id": "g1"})
    assert scope.status_code == 201, scope.text
    scope_id = scope.json()["id"]
    acknowledged: list[str] = []

    def write(n: int):
        started = time.monotonic()
        response = api.post(f"/scopes/{scope_id}/observations", json={"content": f"Fact {n}."})
        if response.status_code == 201:
            acknowledged.append(response.json()["id"])
        return response.status_code, time.monotonic() - started, response

    for n in range(20):
        assert write(n)[0] == 201
    state = json.loads((data_dir / "secantus-server.json").read_text())
    os.kill(state["pid"], signal.SIGKILL)
    killed_at = time.monotonic()
    while _pid_alive(state["pid"]):
        time.sleep(0.01)

    statuses: list[int] = []
    recovered_at = None
    for n in range(20, 80):
        status, elapsed, response = write(n)
        statuses.append(status)
        assert status in (201, 503), response.text
        assert elapsed < 5, elapsed  # answered quickly, not after pymongo's long waits
        if status == 503:
            assert response.json()["error"]["code"] == "unavailable"
            assert response.headers["Retry-After"] == "2"
            time.sleep(0.2)
        elif recovered_at is None:
            recovered_at = time.monotonic()
        if time.monotonic() - killed_at > 30:
            break
    print(f"after the kill: {statuses.count(503)} x 503, then {statuses.count(201)} x 201")
    assert recovered_at is not None, statuses
    assert recovered_at - killed_at < 15
    new_state = json.loads((data_dir / "secantus-server.json").read_text())
    assert new_state["pid"] != state["pid"]
    # Both workers write again (each one reconnects on its own): the last writes all succeed.
    assert statuses[-20:] == [201] * 20, statuses
    assert api.get("/health").status_code == 200

    stored: set[str] = set()
    cursor = None
    while True:
        params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        page = api.get(f"/scopes/{scope_id}/observations", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        stored.update(item["id"] for item in body["items"])
        cursor = body.get("next_cursor")
        if not cursor:
            break
    assert set(acknowledged) <= stored
    assert len(acknowledged) > 40
