"""The production entry points default to DEBUG off (probe finding F7).

gunicorn (with the repo's gunicorn.conf.py) and the `celery` command read no
DJANGO_DEBUG as "off": with no environment at all they refuse to start (a secret key
is required), and with only a secret key a 404 is the app's page, not Django's debug
page with the URL list. `manage.py runserver` (`make run`) keeps DEBUG on.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from memory_admin.runtime.embedded_store import _free_port
from tests.http_client import HttpClient

ROOT = Path(__file__).resolve().parent.parent


def _bare_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """No DJANGO_* or CELERY_* variable: what a deployment gets from nothing."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "CELERY_", "MONGODB_", "GUNICORN_"))
    }
    env.update(
        MEMORY_DATA_DIR=str(data_dir),
        MONGODB_URI=os.environ["MEMORY_TEST_MONGODB_URI"],
        MONGODB_DB=f"defaults_{secrets.token_hex(6)}",
        **extra,
    )
    return env


def _gunicorn(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,  # gunicorn reads ./gunicorn.conf.py
        env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "1"},
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),  # noqa: SIM115
    )


def _answers(port: int) -> bool:
    try:
        HttpClient(f"http://127.0.0.1:{port}", timeout=2).get("/api/v1/health")
    except OSError:
        return False
    return True


def test_gunicorn_with_no_environment_refuses_to_start(embedded_mongo, tmp_path):
    log = tmp_path / "gunicorn.log"
    port = _free_port()
    server = _gunicorn(_bare_env(tmp_path / "data"), port, log)
    deadline = time.monotonic() + 90
    serving = False
    try:
        while server.poll() is None and time.monotonic() < deadline and not serving:
            serving = _answers(port)
            time.sleep(0.2)
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(30)
    assert not serving, "gunicorn serves with no environment (DEBUG on by default)"
    assert server.returncode != 0
    assert "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off" in log.read_text()


def test_gunicorn_with_only_a_secret_key_serves_no_debug_page(embedded_mongo, tmp_path):
    env = _bare_env(tmp_path / "data", DJANGO_SECRET_KEY=secrets.token_urlsafe(60))
    done = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env={**env, "DJANGO_DEBUG": "false"},  # the manifest that DEBUG off serves from
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    port = _free_port()
    server = _gunicorn(env, port, tmp_path / "gunicorn.log")
    client = HttpClient(f"http://127.0.0.1:{port}")
    try:
        client.wait_until_up("/api/v1/health", within=60)
        missing = client.get("/no-such-page/")
        assert missing.status_code == 404
        assert "URLconf" not in missing.text and "DEBUG = True" not in missing.text
        assert "ui/" not in missing.text  # the URL patterns are not listed
    finally:
        server.terminate()
        server.wait(30)


def test_a_celery_worker_with_no_environment_refuses_to_start(embedded_mongo, tmp_path):
    env = _bare_env(tmp_path / "data", CELERY_BROKER_URL="memory://")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memory_admin", "worker", "--pool=solo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started = time.monotonic()
    try:
        output, _ = worker.communicate(timeout=90)
    except subprocess.TimeoutExpired as running:
        os.killpg(worker.pid, 9)
        worker.wait(10)
        raise AssertionError(
            f"the worker started with no environment ({time.monotonic() - started:.0f}s)"
        ) from running
    assert worker.returncode != 0
    assert "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off" in output


def test_runserver_keeps_debug_on_for_development(tmp_path):
    env = _bare_env(tmp_path / "data")
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings; print(settings.DEBUG)",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "True"
