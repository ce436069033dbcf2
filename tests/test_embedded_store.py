"""The embedded store launcher: one server per data directory, shared by every process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memory_admin.runtime.embedded_store import (
    _pid_alive,
    embedded_server_uri,
    stop_embedded_server,
)

ROOT = Path(__file__).resolve().parent.parent


def test_one_server_per_data_directory_reused_across_processes(tmp_path):
    uri = embedded_server_uri(data_dir=tmp_path)
    try:
        assert embedded_server_uri(data_dir=tmp_path) == uri
        other_process = subprocess.run(
            [
                sys.executable,
                "-c",
                "from pathlib import Path; import sys;"
                "from memory_admin.runtime.embedded_store import embedded_server_uri;"
                f"print(embedded_server_uri(data_dir=Path({str(tmp_path)!r})))",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert other_process.stdout.strip() == uri
        assert "journal=true" in uri
    finally:
        assert stop_embedded_server(data_dir=tmp_path)
    assert stop_embedded_server(data_dir=tmp_path) is False


def test_a_dead_server_is_replaced(tmp_path):
    import json
    import os
    import signal

    uri = embedded_server_uri(data_dir=tmp_path)
    state = json.loads((tmp_path / "secantus-server.json").read_text())
    os.kill(state["pid"], signal.SIGKILL)
    while _pid_alive(state["pid"]):
        pass
    try:
        assert embedded_server_uri(data_dir=tmp_path) != uri
    finally:
        stop_embedded_server(data_dir=tmp_path)


def test_the_store_runs_without_an_oplog_and_transactions_still_conflict(monkeypatch, tmp_path):
    """By default the server keeps no oplog (`--standalone`); a transaction still commits
    atomically and a concurrent write to the same document still conflicts."""
    import pytest
    from django.core.exceptions import ImproperlyConfigured
    from pymongo import MongoClient
    from pymongo.errors import OperationFailure
    from pymongo.read_concern import ReadConcern
    from pymongo.write_concern import WriteConcern

    from memory_admin.runtime.embedded_store import oplog_args

    monkeypatch.delenv("MEMORY_STORE_OPLOG", raising=False)
    assert oplog_args() == ["--standalone"]
    uri = embedded_server_uri(data_dir=tmp_path)
    client = MongoClient(uri)
    try:
        assert "setName" not in client.admin.command("hello")
        docs = client.t.docs
        docs.insert_one({"_id": 1, "n": 0})
        txn = {"read_concern": ReadConcern("snapshot"), "write_concern": WriteConcern(w="majority")}
        with client.start_session() as first, client.start_session() as second:
            first.start_transaction(**txn)
            docs.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=first)
            docs.insert_one({"_id": 2}, session=first)
            second.start_transaction(**txn)
            with pytest.raises(OperationFailure) as conflict:
                docs.update_one({"_id": 1}, {"$inc": {"n": 10}}, session=second)
            assert conflict.value.code == 112  # WriteConflict: the second one retries
            assert conflict.value.has_error_label("TransientTransactionError")
            second.abort_transaction()
            first.commit_transaction()
        assert docs.find_one({"_id": 1})["n"] == 1 and docs.count_documents({}) == 2
    finally:
        client.close()
        stop_embedded_server(data_dir=tmp_path)
    monkeypatch.setenv("MEMORY_STORE_OPLOG", "sometimes")
    with pytest.raises(ImproperlyConfigured, match="MEMORY_STORE_OPLOG"):
        oplog_args()


def test_the_oplog_is_bounded_by_settings(monkeypatch, tmp_path):
    """With the oplog on, the server gets its bounds (defaults 300 s / 10,000 entries, or the
    environment's), and a bad value stops the start with a clear message."""
    import pytest
    from django.core.exceptions import ImproperlyConfigured

    from memory_admin.runtime.embedded_store import oplog_args

    monkeypatch.setenv("MEMORY_STORE_OPLOG", "on")
    monkeypatch.delenv("MEMORY_STORE_OPLOG_SECONDS", raising=False)
    monkeypatch.delenv("MEMORY_STORE_OPLOG_ENTRIES", raising=False)
    assert oplog_args() == ["--oplog-retention-seconds", "300", "--oplog-max-entries", "10000"]
    monkeypatch.setenv("MEMORY_STORE_OPLOG_SECONDS", "60")
    monkeypatch.setenv("MEMORY_STORE_OPLOG_ENTRIES", "500")
    assert oplog_args() == ["--oplog-retention-seconds", "60", "--oplog-max-entries", "500"]
    uri = embedded_server_uri(data_dir=tmp_path)
    try:
        import json

        pid = json.loads((tmp_path / "secantus-server.json").read_text())["pid"]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"--oplog-max-entries" in cmdline
        assert cmdline[cmdline.index(b"--oplog-max-entries") + 1] == b"500"
        assert uri
    finally:
        stop_embedded_server(data_dir=tmp_path)
    for bad in ("0", "-5", "lots"):
        monkeypatch.setenv("MEMORY_STORE_OPLOG_ENTRIES", bad)
        with pytest.raises(ImproperlyConfigured, match="MEMORY_STORE_OPLOG_ENTRIES"):
            oplog_args()


def test_restart_if_dead_replaces_a_dead_server_but_not_a_stopped_one(tmp_path):
    import json
    import os
    import signal

    from memory_admin.runtime.embedded_store import restart_if_dead

    assert restart_if_dead(data_dir=tmp_path) is None  # never started: left alone
    uri = embedded_server_uri(data_dir=tmp_path)
    try:
        assert restart_if_dead(data_dir=tmp_path) == uri  # alive: kept
        state = json.loads((tmp_path / "secantus-server.json").read_text())
        os.kill(state["pid"], signal.SIGKILL)
        while _pid_alive(state["pid"]):
            pass
        replaced = restart_if_dead(data_dir=tmp_path)
        assert replaced is not None and replaced != uri
    finally:
        assert stop_embedded_server(data_dir=tmp_path)
    assert restart_if_dead(data_dir=tmp_path) is None  # stopped on purpose: stays stopped


def test_the_supervised_uri_follows_a_server_another_process_started(tmp_path):
    from memory_admin.runtime import supervisor as store_supervisor

    first = store_supervisor.supervised_uri(data_dir=tmp_path, start_timeout=60)
    try:
        assert store_supervisor.supervised_uri(data_dir=tmp_path, start_timeout=60) == first
        stop_embedded_server(data_dir=tmp_path)
        second = embedded_server_uri(data_dir=tmp_path)  # as another process would
        assert store_supervisor.supervised_uri(data_dir=tmp_path, start_timeout=60) == second
    finally:
        stop_embedded_server(data_dir=tmp_path)
