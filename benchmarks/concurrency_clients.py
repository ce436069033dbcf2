"""Our side of `benchmarks concurrency`: N client processes calling the API in a loop.

Each client is a process of its own (forked; only the standard library's HTTP client)
with one keep-alive connection, as an agent's pooled client would hold, and its own
group scope `conc-<n>` of the one agent: a client's adds never wait for another's
scope, only for what the adds share (the agent's counters, the store).
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.single_add import AGENT, Server

BATCH = 10
OPERATIONS = ("single add", "batch add", "context", "search")


@dataclass
class Calls:
    """One client's calls: each one's seconds, how many were not 2xx, and those by what
    they were (`HTTP 503`, `no answer`: the connection failed)."""

    seconds: list[float] = field(default_factory=list)
    errors: int = 0
    kinds: dict[str, int] = field(default_factory=dict)

    def failed(self, kind: str) -> None:
        self.errors += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


class Connection:
    def __init__(self, server: Server) -> None:
        self.port = server.port
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.last_error = ""
        self.headers = {
            "Authorization": f"Bearer {server.api_key}",
            "Content-Type": "application/json",
        }

    def call(self, method: str, path: str, body: dict | None = None) -> int:
        """The status (0: the connection failed; a new one is opened for the next call);
        a failed call's error code is kept in `last_error` (the envelope's `code`)."""
        try:
            self.conn.request(method, path, json.dumps(body) if body else None, self.headers)
            response = self.conn.getresponse()
            raw = response.read()
            if not 200 <= response.status < 300:
                self.last_error = _error_code(raw)
            return response.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            return 0


def _error_code(raw: bytes) -> str:
    """The API envelope's error code and message, shortened ("" when it has none)."""
    try:
        error = json.loads(raw)["error"]
        return f"{error['code']}: {str(error.get('message', ''))[:100]}"
    except (ValueError, KeyError, TypeError):
        return ""


Call = Callable[[Connection, int], int]


def operation(
    name: str, *, client: int, scope_id: str, texts: list[str], queries: list[str], salt: str
) -> Call:
    """Client `client`'s call number n of the operation `name`."""
    group = f"conc-{client}"

    def single(conn: Connection, n: int) -> int:
        text = f"{texts[(client * 7919 + n) % len(texts)]} ({salt} {client}.{n})"
        return conn.call("POST", f"/api/v1/scopes/{scope_id}/observations", {"content": text})

    def batch(conn: Connection, n: int) -> int:
        first = client * 7919 + n * BATCH
        items = [
            {
                "client_id": f"{salt}-{client}-{n}-{i}",
                "content": f"{texts[(first + i) % len(texts)]} ({salt} {n}.{i})",
            }
            for i in range(BATCH)
        ]
        return conn.call("POST", f"/api/v1/scopes/{scope_id}/observations", {"items": items})

    def context(conn: Connection, n: int) -> int:
        body = {
            "user_id": f"conc-user-{client}",
            "user_name": f"User {client}",
            "groups": [{"id": group, "name": f"Team {client}"}],
            "session_id": f"conc-session-{client}",
            "message": queries[(client + n) % len(queries)],
        }
        return conn.call("POST", f"/api/v1/agents/{AGENT}/context", body)

    def search(conn: Connection, n: int) -> int:
        query = urllib.parse.urlencode(
            {"q": queries[(client + n) % len(queries)], "group_id": group, "limit": 10}
        )
        return conn.call("GET", f"/api/v1/agents/{AGENT}/search?{query}")

    return {"single add": single, "batch add": batch, "context": context, "search": search}[name]


def drive(server: Server, seconds: float, calls: list[Call]) -> list[Calls]:
    """Each call loop in a process of its own for `seconds`; what each one measured."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    start = context.Barrier(len(calls) + 1)

    def client(index: int, call: Call) -> None:
        conn = Connection(server)
        mine = Calls()
        start.wait()
        stop = time.monotonic() + seconds  # CLOCK_MONOTONIC is system-wide
        n = 0
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            status = call(conn, n)
            mine.seconds.append(time.perf_counter() - t0)
            if not 200 <= status < 300:
                mine.failed(f"HTTP {status} {conn.last_error}".strip() if status else "no answer")
            n += 1
        results.put((index, mine.seconds, mine.errors, mine.kinds))

    processes = [context.Process(target=client, args=(i, c)) for i, c in enumerate(calls)]
    for process in processes:
        process.start()
    start.wait()
    found = [Calls() for _ in calls]
    for _ in processes:
        index, latencies, errors, kinds = results.get()
        found[index] = Calls(seconds=latencies, errors=errors, kinds=kinds)
    for process in processes:
        process.join()
    return found
