"""Loopback HTTP clients for the fairness and load benchmarks: one connection per thread."""

from __future__ import annotations

import http.client
import json
import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.harness import WebProcess

AGENT = "bench-agent"


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, seconds: float, status: int) -> None:
        with self.lock:
            self.latencies.append(seconds)
            self.statuses[status] = self.statuses.get(status, 0) + 1

    @property
    def errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 400 or status == 0)


class Client:
    def __init__(self, web: WebProcess) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=120)
        self.headers = {
            "Authorization": f"Bearer {web.api_key}",
            "Content-Type": "application/json",
        }

    def post(self, path: str, body: dict) -> tuple[float, int]:
        data = json.dumps(body)
        t0 = time.perf_counter()
        try:
            self.conn.request("POST", path, data, self.headers)
            response = self.conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            status = 0
        return time.perf_counter() - t0, status


def context_body(n: int) -> dict:
    return {
        "user_id": f"bench-user-{n % 50}",
        "user_name": f"User {n % 50}",
        "groups": [{"id": "g1", "name": "Eden Team"}],
        "session_id": f"ctx-{n % 50}",
        "message": "What did I tell you about short answers and Friday deploys?",
    }


def context_call(client: Client, n: int) -> tuple[float, int]:
    return client.post(f"/api/v1/agents/{AGENT}/context", context_body(n))


def ingest_call(client: Client, session: str, turn: int, *, size: int, count: int):
    body = {
        "user_id": f"sender-{session}",
        "user_name": "Sender",
        "messages": [
            {
                "id": f"t{turn}-m{i}",
                "role": "user",
                "content": ("I prefer short answers. Our team deploys on Fridays. " * 700)[:size],
            }
            for i in range(count)
        ],
    }
    return client.post(f"/api/v1/agents/{AGENT}/sessions/{session}/messages", body)


def drive(
    web: WebProcess, seconds: float, loops: list[Callable[[Client, int], tuple[float, int]]]
) -> list[Tally]:
    """Run each loop in its own process and connection for `seconds`; one tally per loop.

    Processes, not threads: callers are separate programs, and one client process's
    threads would share its GIL, so a sender's work would show up in another caller's
    latency without the server having anything to do with it.
    """
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    stop = time.monotonic() + seconds  # CLOCK_MONOTONIC is system-wide: children share it

    def worker(index: int, loop: Callable[[Client, int], tuple[float, int]]) -> None:
        client = Client(web)
        tally = Tally()
        n = 0
        while time.monotonic() < stop:
            tally.add(*loop(client, n))
            n += 1
        results.put((index, tally.latencies, tally.statuses))

    processes = [
        context.Process(target=worker, args=(index, loop)) for index, loop in enumerate(loops)
    ]
    for process in processes:
        process.start()
    tallies = [Tally() for _ in loops]
    for _ in processes:
        index, latencies, statuses = results.get()
        tallies[index].latencies.extend(latencies)
        tallies[index].statuses.update(statuses)
    for process in processes:
        process.join()
    return tallies
