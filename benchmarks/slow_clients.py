"""Slow clients facing gunicorn alone (issue 44): 24 connections each sending a request
body at 200 bytes every 5 s, while a probe asks `GET /api/v1/health` every 2 s; before
(the threaded worker that reads a request on its thread) and after (the worker that
buffers each request whole on its event loop first), in one run.

Loopback only, bounded: BENCH_SECONDS (default 30) of slow clients per variant, 3
workers x 4 threads (the shipped defaults). The figure: probe requests answered within
10 s, and their worst latency."""

from __future__ import annotations

import os
import select
import socket
import threading
import time

from benchmarks.harness import embedded_server, print_table, web_process

SLOW_CLIENTS = 24
CHUNK = 200
EVERY = 5.0
BODY = 20_000  # announced; never all sent within the phase
PROBE_EVERY = 2.0
PROBE_TIMEOUT = 10.0
PROBE_REQUEST = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
VARIANTS = {
    "before: read on the thread": "memory_admin.runtime.gunicorn_worker.UnbufferedThreadWorker",
    "after: buffered first": "memory_admin.runtime.gunicorn_worker.EnvelopeThreadWorker",
}


FAILURES: list[str] = []
CUT: dict[str, int] = {}  # how the slow clients' requests ended, before the phase did


def _slow_client(port: int, key: str, until: float, n: int) -> None:
    head = (
        f"POST /api/v1/agents/a1/sessions/slow-{n}/messages HTTP/1.1\r\n"
        "Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {BODY}\r\n\r\n"
    ).encode()
    while time.monotonic() < until:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=EVERY * 3) as sock:
                sock.sendall(head)
                while time.monotonic() < until:
                    sock.sendall(b" " * CHUNK)
                    time.sleep(EVERY)
                    readable, _, _ = select.select([sock], [], [], 0)
                    if readable:  # the server answered (or closed) before the body was in
                        line = sock.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                        CUT[line or "closed"] = CUT.get(line or "closed", 0) + 1
                        break
        except OSError:
            time.sleep(0.5)  # cut off: come back, as a patient attacker does


def _probe(port: int) -> float | None:
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PROBE_TIMEOUT) as sock:
            sock.sendall(
                b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    return None
                answer += chunk
        return time.monotonic() - started if answer.startswith(b"HTTP/1.1 200") else None
    except OSError as exc:
        FAILURES.append(f"{type(exc).__name__}: {exc}")
        return None


def _run(uri: str, worker_class: str, seconds: float) -> list[object]:
    env = {"GUNICORN_CMD_ARGS": f"--worker-class {worker_class}"}
    with web_process(uri, f"slow_{int(time.time())}", workers=3, threads=4, extra_env=env) as web:
        for _ in range(6):  # every worker warmed up (its first request loads the app)
            _probe(web.port)
        until = time.monotonic() + seconds
        slow = [
            threading.Thread(
                target=_slow_client, args=(web.port, web.api_key, until, n), daemon=True
            )
            for n in range(SLOW_CLIENTS)
        ]
        for thread in slow:
            thread.start()
        time.sleep(1.0)  # the slow clients have their connections
        latencies: list[float | None] = []
        while time.monotonic() < until:
            began = time.monotonic()
            latencies.append(_probe(web.port))
            time.sleep(max(0.0, PROBE_EVERY - (time.monotonic() - began)))
        for thread in slow:
            thread.join(timeout=EVERY * 4)
    answered = [x for x in latencies if x is not None]
    shown = ", ".join("-" if x is None else f"{x:.1f}" for x in latencies)
    name = worker_class.rsplit(".", 1)[-1]
    print(f"{name}: probe seconds in order: {shown}; slow requests ended: {CUT}", flush=True)
    CUT.clear()
    worst = f"{max(answered) * 1000:.0f}" if answered else "-"
    return [f"{len(answered)} of {len(latencies)}", worst]


def main() -> None:
    seconds = float(os.environ.get("BENCH_SECONDS", "30"))
    rows = []
    with embedded_server() as server:
        for name, worker_class in VARIANTS.items():
            rows.append([name, *_run(server.uri, worker_class, seconds)])
    print_table(
        f"Slow clients, gunicorn alone: {SLOW_CLIENTS} connections sending a body at "
        f"{CHUNK} bytes every {EVERY:.0f} s for {seconds:.0f} s; a health probe every "
        f"{PROBE_EVERY:.0f} s (answered within {PROBE_TIMEOUT:.0f} s)",
        ["worker", "probes answered", "worst probe ms"],
        rows,
    )
    if FAILURES:
        print("unanswered probes:", "; ".join(FAILURES[:10]))


if __name__ == "__main__":
    main()
