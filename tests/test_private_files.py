"""MEMORY_DATA_DIR and its secrets are private to the app's user (probe finding F3, issue 32).

A data directory that does not exist yet is created (0700) so that `migrate` works;
`db.sqlite3`, the development secret key and the demo password are created 0600 from
their first byte: never chmod-ed after writing (F14), whatever the umask.
"""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memory_admin.runtime import private_files

ROOT = Path(__file__).resolve().parent.parent


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        preexec_fn=lambda: os.umask(0o022),  # the usual umask: files would be 0644
    )


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MONGODB_"))}
    env.update(
        MEMORY_DATA_DIR=str(data_dir),
        MONGODB_URI=os.environ["MEMORY_TEST_MONGODB_URI"],
        MONGODB_DB=f"private_{secrets.token_hex(6)}",
        **extra,
    )
    return env


def test_migrate_creates_a_missing_data_dir_0700_with_the_database_0600(embedded_mongo, tmp_path):
    data_dir = tmp_path / "not" / "yet" / "there"
    env = _env(data_dir, DJANGO_DEBUG="false", DJANGO_SECRET_KEY=secrets.token_urlsafe(60))
    done = _manage(env, "migrate", "--noinput", "-v0")
    assert done.returncode == 0, done.stderr
    assert _mode(data_dir) == 0o700
    assert _mode(data_dir / "db.sqlite3") == 0o600
    assert (data_dir / "db.sqlite3").stat().st_size > 0  # migrated, not just created


def test_development_secrets_are_created_0600(embedded_mongo, tmp_path):
    data_dir = tmp_path / "dev"
    env = _env(data_dir, DJANGO_DEBUG="true")
    for args in (("migrate", "--noinput", "-v0"), ("ensure_demo_login",)):
        done = _manage(env, *args)
        assert done.returncode == 0, done.stderr
    assert _mode(data_dir) == 0o700
    for name in ("db.sqlite3", "dev-secret-key", "demo-password"):
        assert _mode(data_dir / name) == 0o600, name
    password = (data_dir / "demo-password").read_text().strip()
    assert password and password in _manage(env, "ensure_demo_login").stdout  # kept


def test_an_older_installs_open_data_dir_and_files_are_closed(embedded_mongo, tmp_path):
    data_dir = tmp_path / "old"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    (data_dir / "dev-secret-key").write_text("an-old-key")
    (data_dir / "dev-secret-key").chmod(0o644)
    done = _manage(_env(data_dir, DJANGO_DEBUG="true"), "migrate", "--noinput", "-v0")
    assert done.returncode == 0, done.stderr
    assert _mode(data_dir) == 0o700
    assert _mode(data_dir / "dev-secret-key") == 0o600
    assert (data_dir / "dev-secret-key").read_text() == "an-old-key"


@pytest.fixture
def no_chmod(monkeypatch):
    """Any chmod of a file fails the test: a file must be born with its mode."""

    def refuse(path, *args, **kwargs):
        if Path(path).is_file():
            raise AssertionError(f"chmod of {path}")
        return real_chmod(path, *args, **kwargs)

    real_chmod = os.chmod
    monkeypatch.setattr(os, "chmod", refuse)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_secret_files_are_born_0600_whatever_the_umask(tmp_path, no_chmod, umask):
    old = os.umask(umask)
    try:
        assert private_files.read_or_create_secret(tmp_path / "d" / "key", lambda: "s3cret") == (
            "s3cret"
        )
        with private_files.open_private_append(tmp_path / "d" / "log") as log:
            log.write(b"line\n")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "d") == 0o700
    assert _mode(tmp_path / "d" / "key") == 0o600
    assert _mode(tmp_path / "d" / "log") == 0o600
    # A second call reads the secret; it never replaces it.
    assert private_files.read_or_create_secret(tmp_path / "d" / "key", lambda: "other") == "s3cret"
