"""The embedded store's files are the app user's alone and its port can be named
(issue 44): the server starts with a umask of 077, so WiredTiger's files are 0600 (they
were 0644, inside 0700 directories), and `MEMORY_STORE_PORT` names its loopback port."""

from __future__ import annotations

import os
import stat

import pytest
from django.core.exceptions import ImproperlyConfigured
from pymongo import MongoClient

from memory_admin.runtime.embedded_store import (
    _free_port,
    embedded_server_uri,
    stop_embedded_server,
)


def _write_something(uri: str) -> None:
    with MongoClient(uri, serverSelectionTimeoutMS=10_000) as client:
        client["probe"]["items"].insert_one({"x": 1})


def test_every_file_the_store_writes_is_0600(tmp_path):
    uri = embedded_server_uri(data_dir=tmp_path)
    try:
        _write_something(uri)
    finally:
        stop_embedded_server(data_dir=tmp_path)
    files = [os.path.join(d, f) for d, _, names in os.walk(tmp_path / "mongo") for f in names]
    assert files, "the store wrote no files"
    open_to_others = {
        path: oct(stat.S_IMODE(os.stat(path).st_mode))
        for path in files
        if stat.S_IMODE(os.stat(path).st_mode) & 0o077
    }
    assert not open_to_others, open_to_others


def test_memory_store_port_names_the_port(tmp_path, monkeypatch):
    port = _free_port()
    monkeypatch.setenv("MEMORY_STORE_PORT", str(port))
    uri = embedded_server_uri(data_dir=tmp_path)
    try:
        assert f"@127.0.0.1:{port}/" in uri
        _write_something(uri)
    finally:
        stop_embedded_server(data_dir=tmp_path)


@pytest.mark.parametrize("bad", ["0", "65536", "port", "-1"])
def test_a_bad_port_stops_the_start_with_a_clear_message(tmp_path, monkeypatch, bad):
    monkeypatch.setenv("MEMORY_STORE_PORT", bad)
    try:
        with pytest.raises(ImproperlyConfigured, match="MEMORY_STORE_PORT"):
            embedded_server_uri(data_dir=tmp_path)
    finally:
        stop_embedded_server(data_dir=tmp_path)
