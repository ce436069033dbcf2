"""The embedded store requires a user (probe finding F3): no other local user reads memory.

The data directory's server runs with `--auth`; its generated credentials live in a
0600 file inside the 0700 data directory, so only the app's own user has them.
"""

from __future__ import annotations

import json
import stat
import urllib.parse

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from memory_admin.runtime.embedded_store import (
    AUTH_MARKER,
    CREDENTIALS_FILE,
    LOG_FILE,
    STATE_FILE,
    embedded_server_uri,
    recorded_server,
    server_alive,
    start_server,
    stop_embedded_server,
)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _anonymous(port: int) -> MongoClient:
    return MongoClient(
        f"mongodb://127.0.0.1:{port}/?directConnection=true", serverSelectionTimeoutMS=5000
    )


@pytest.fixture
def data_dir(tmp_path):
    yield tmp_path / "var"
    stop_embedded_server(data_dir=tmp_path / "var")


def test_the_store_refuses_anyone_without_the_generated_credentials(data_dir):
    uri = embedded_server_uri(data_dir=data_dir)
    credentials = json.loads((data_dir / CREDENTIALS_FILE).read_text())
    assert set(credentials) == {"username", "password"} and len(credentials["password"]) >= 32
    parsed = urllib.parse.urlsplit(uri)
    assert parsed.username == credentials["username"]
    assert urllib.parse.unquote(parsed.password) == credentials["password"]
    assert _mode(data_dir) == 0o700
    for name in (CREDENTIALS_FILE, AUTH_MARKER, LOG_FILE):
        assert _mode(data_dir / name) == 0o600, name

    with MongoClient(uri) as app:
        app.memory.facts.insert_one({"text": "Gene likes tea."})
    port = parsed.port
    with _anonymous(port) as stranger:
        with pytest.raises(OperationFailure) as refused:
            stranger.memory.facts.find_one()
        assert refused.value.code == 13  # Unauthorized
        with pytest.raises(OperationFailure):
            stranger.memory.facts.insert_one({"text": "planted"})
    wrong = uri.replace(parsed.password, "not-the-password")
    guesser = MongoClient(wrong, serverSelectionTimeoutMS=5000)
    with guesser, pytest.raises(OperationFailure):
        guesser.memory.facts.find_one()


def test_a_restarted_store_keeps_its_user_and_data(data_dir):
    uri = embedded_server_uri(data_dir=data_dir)
    with MongoClient(uri) as app:
        app.memory.facts.insert_one({"text": "kept"})
    assert stop_embedded_server(data_dir=data_dir)
    again = embedded_server_uri(data_dir=data_dir)
    assert urllib.parse.urlsplit(again).password == urllib.parse.urlsplit(uri).password
    with MongoClient(again) as app:
        assert app.memory.facts.find_one({}, {"_id": 0}) == {"text": "kept"}


def test_a_server_from_before_auth_is_replaced_by_one_with_auth(data_dir):
    data_dir.mkdir(mode=0o700)
    old = start_server(
        storage_path=data_dir / "mongo",
        log_path=data_dir / LOG_FILE,
        start_timeout=60,
        detached=True,
    )
    (data_dir / STATE_FILE).write_text(json.dumps({"pid": old.pid, "port": old.port}))
    with _anonymous(old.port) as before:
        before.memory.facts.insert_one({"text": "from before"})  # no auth: anyone could

    uri = embedded_server_uri(data_dir=data_dir)
    assert not server_alive(old)
    server = recorded_server(data_dir)
    assert server is not None and server.auth
    with _anonymous(server.port) as stranger, pytest.raises(OperationFailure):
        stranger.memory.facts.find_one()
    with MongoClient(uri) as app:
        assert app.memory.facts.find_one({}, {"_id": 0}) == {"text": "from before"}
