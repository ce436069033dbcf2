"""What one observation add costs: `python -m benchmarks write_throughput [--sizes 1000,10000]`.

First, what a caller gets (`benchmarks/single_add.py`, issue 32): the production
config (`gunicorn -c gunicorn.conf.py -w 1`: the threaded envelope worker, its access
log), embedded defaults in a fresh data dir, default settings (threshold consolidation
on, the in-process job pool), sequential adds from a separate client process, a new
connection per request and keep-alive, interleaved.

The tables after it measure the server-side cost of an add under controlled conditions,
not a caller's latency: they once reported 11 ms for what callers saw as 40 ms,
because they ran a sync worker without the production config (no access log, no
threads), sent every request on one keep-alive connection from this process, seeded
the scope and turned consolidation off (so no consolidation job competed for the store
and no add met the write conflicts and the extra threshold reads a running job causes).

For each size N, one scope is seeded with N observations (indexed for search), then
observations are added to that scope over HTTP (one gunicorn sync worker, embedded
defaults) one per request, and in batches of 100 (`{"items": [...]}`). Per mode:
observations/s, request p50/p95, CPU per observation of the store server and of the
web worker (utime+stime from /proc/<pid>/stat), the store's operations (serverStatus
opcounters) and the bytes the server wrote to disk (/proc/<pid>/io) per observation.
A second table breaks one add down by store command (measured in this process with a
command listener, on the same domain functions the handler calls). A third reports
the store's files after the run: documents and indexes, oplog, journal, per
observation. The oplog bounds are the embedded defaults unless
MEMORY_STORE_OPLOG_SECONDS / MEMORY_STORE_OPLOG_ENTRIES are set.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bson
from pymongo import MongoClient, monitoring

from benchmarks.harness import (
    WebProcess,
    embedded_server,
    print_row,
    print_table,
    summary_ms,
    web_process,
)
from benchmarks.seed import content, seed
from memory_admin.runtime.embedded_store import oplog_args
from streams.memory.observation_batch import BatchItem, observation_batch_add
from streams.memory.observations import observation_add
from streams.store import MemoryStore

SIZES = [1_000, 10_000]  # the issue asks for 100,000 too: a shared 2-core machine here
SINGLES = 150
BATCHES = 8
BATCH = 100
AGENT = "bench-agent"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its reaped children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12)) / TICK


def tree_cpu_seconds(pid: int) -> float:
    """A process and its live children (the gunicorn master and its worker)."""
    total = cpu_seconds(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        total += sum(cpu_seconds(int(c)) for c in children)
    return total


def disk_written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


@dataclass
class Sample:
    store_cpu: float
    web_cpu: float
    disk: int
    ops: int
    at: float


def sample(client: MongoClient, store_pid: int, web_pid: int) -> Sample:
    counters = client.admin.command("serverStatus")["opcounters"]
    return Sample(
        store_cpu=cpu_seconds(store_pid),
        web_cpu=tree_cpu_seconds(web_pid),
        disk=disk_written(store_pid),
        ops=sum(v for k, v in counters.items() if k != "command") + counters.get("command", 0),
        at=time.perf_counter(),
    )


class ByteCounter(monitoring.CommandListener):
    """Commands and the bytes of each command sent, by command and collection."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self.micros: dict[str, int] = {}
        self._names: dict[int, str] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        collection = event.command.get(event.command_name)
        name = f"{event.command_name} {collection if isinstance(collection, str) else ''}"
        self._names[event.request_id] = name
        self.calls[name] = self.calls.get(name, 0) + 1
        self.bytes[name] = self.bytes.get(name, 0) + len(bson.encode(event.command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        name = self._names.pop(event.request_id, event.command_name)
        self.micros[name] = self.micros.get(name, 0) + event.duration_micros

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._names.pop(event.request_id, None)


def run(sizes: list[int] | None = None) -> None:
    from benchmarks.single_add import ADDS, CALLER_HEADERS, caller_rows

    print_table(
        f"What a caller gets: sequential single adds from a separate client process ({ADDS} "
        "per mode, interleaved; gunicorn -c gunicorn.conf.py -w 1, embedded defaults, fresh "
        "data dir, threshold consolidation on)",
        CALLER_HEADERS,
        caller_rows("production config"),
    )
    rows: list[list[object]] = []
    breakdown: list[list[object]] = []
    footprint: list[list[object]] = []
    print(f"oplog bounds: {' '.join(oplog_args())}", flush=True)
    with embedded_server() as server:
        storage = _storage_dir(server.pid)
        for size in sizes or SIZES:
            db = f"bench_write_{size}"
            client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
            store = MemoryStore(client, db)
            seed(store, agent_id=AGENT, scopes=1, observations=size)
            scope_doc = store.seeding.find_one("scopes", {"user_id": "bench-user-0"})
            assert scope_doc is not None, "seeded above"
            scope_id = str(scope_doc["_id"])
            with web_process(server.uri, db) as web:
                for mode, requests, per in (
                    ("single", SINGLES, 1),
                    (f"batch of {BATCH}", BATCHES, BATCH),
                ):
                    _no_consolidation(store, scope_doc["_id"])
                    row = _http(client, server.pid, web, scope_id, mode, requests, per, size)
                    rows.append(row)
                    print_row(row)
            _no_consolidation(store, scope_doc["_id"])
            breakdown += _breakdown(server.uri, store, scope_id, size)
            stats = client[db].command("dbStats")
            count = store.seeding.count("observations", {"scope_id": scope_doc["_id"]})
            footprint.append(_footprint(size, count, stats, storage))
            print_row(footprint[-1])
            client.close()
    _print_tables(rows, breakdown, footprint)


THROUGHPUT_HEADERS = [
    "N in scope",
    "mode",
    "obs",
    "obs/s",
    "req p50 ms",
    "req p95 ms",
    "store CPU ms/obs",
    "web CPU ms/obs",
    "store ops/obs",
    "disk written KB/obs",
]
BREAKDOWN_HEADERS = [
    "N in scope",
    "mode",
    "command",
    "calls/obs",
    "KB sent/obs",
    "ms/obs (round trip)",
]
FOOTPRINT_HEADERS = [
    "N in scope",
    "observations in db",
    "db data+index KB",
    "db bytes/obs",
    "oplog file MiB",
    "journal MiB",
    "all files MiB",
]


def _print_tables(
    rows: list[list[object]], breakdown: list[list[object]], footprint: list[list[object]]
) -> None:
    print_table(
        "Server-side cost: adds over HTTP into one scope of N observations (1 gunicorn sync "
        "worker, one keep-alive connection from this process, consolidation off, embedded "
        "store, shared 2-core machine): not a caller's latency, see the table above",
        THROUGHPUT_HEADERS,
        rows,
    )
    print_table(
        "One add broken down by store command (in-process, the handler's domain calls; "
        "per observation)",
        BREAKDOWN_HEADERS,
        breakdown,
    )
    print_table(
        "Store footprint after each size (the server holds every size run so far)",
        FOOTPRINT_HEADERS,
        footprint,
    )


def _no_consolidation(store: MemoryStore, scope_id: bson.ObjectId) -> None:
    """No consolidation during a phase (it would measure the LLM path, not the add), and
    an empty pending list at its start: with consolidation on, the list never outgrows
    the threshold (10), while here it would grow by every add of the run."""
    store.seeding.update_one(
        "scopes",
        {"_id": scope_id},
        {"$set": {"consolidation_threshold": 10**9, "pending_observation_ids": []}},
    )


def _http(
    client: MongoClient,
    store_pid: int,
    web: WebProcess,
    scope_id: str,
    mode: str,
    requests: int,
    per: int,
    size: int,
) -> list[object]:
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=120)
    headers = {"Authorization": f"Bearer {web.api_key}", "Content-Type": "application/json"}
    path = f"/api/v1/scopes/{scope_id}/observations"

    rng = random.Random(size)

    def body(n: int) -> str:
        if per == 1:
            return json.dumps({"content": content(rng)})
        items = [{"client_id": f"{mode}-{n}-{i}", "content": content(rng)} for i in range(per)]
        return json.dumps({"items": items})

    for n in range(3):  # warm-up: imports, connections, caches
        conn.request("POST", path, body(-1 - n), headers)
        conn.getresponse().read()
    latencies: list[float] = []
    before = sample(client, store_pid, web.pid)
    for n in range(requests):
        t0 = time.perf_counter()
        conn.request("POST", path, body(n), headers)
        response = conn.getresponse()
        response.read()
        latencies.append(time.perf_counter() - t0)
        assert response.status == 201, (response.status, response.read())
    after = sample(client, store_pid, web.pid)
    conn.close()
    added = requests * per
    p50, p95, _ = summary_ms(latencies)
    return [
        f"{size:,}",
        mode,
        added,
        f"{added / (after.at - before.at):.1f}",
        f"{p50:.1f}",
        f"{p95:.1f}",
        f"{(after.store_cpu - before.store_cpu) * 1000 / added:.1f}",
        f"{(after.web_cpu - before.web_cpu) * 1000 / added:.1f}",
        f"{(after.ops - before.ops) / added:.1f}",
        f"{(after.disk - before.disk) / 1024 / added:.1f}",
    ]


def _breakdown(uri: str, store: MemoryStore, scope_id: str, size: int) -> list[list[object]]:
    rows: list[list[object]] = []
    rng = random.Random(-size)
    for mode, rounds, per in (("single", 20, 1), (f"batch of {BATCH}", 2, BATCH)):
        counter = ByteCounter()
        listened: MongoClient[dict[str, Any]] = MongoClient(
            uri, tz_aware=True, event_listeners=[counter]
        )
        listened_store = MemoryStore(listened, store.name)
        scope = listened_store.scopes.get(bson.ObjectId(scope_id))
        assert scope is not None
        counter.calls.clear()
        counter.bytes.clear()
        counter.micros.clear()
        for n in range(rounds):
            scope = listened_store.scopes.get(bson.ObjectId(scope_id))  # as the handler does
            assert scope is not None
            if per == 1:
                observation_add(
                    store=listened_store, scope=scope, content=content(rng), actor="api:bench"
                )
            else:
                items = [
                    BatchItem(content=content(rng), client_id=f"bd-{n}-{i}") for i in range(per)
                ]
                observation_batch_add(
                    store=listened_store, scope=scope, items=items, actor="api:bench"
                )
        added = rounds * per
        for name in sorted(counter.calls, key=lambda k: -counter.micros.get(k, 0)):
            rows.append(
                [
                    f"{size:,}",
                    mode,
                    name,
                    f"{counter.calls[name] / added:.2f}",
                    f"{counter.bytes[name] / 1024 / added:.2f}",
                    f"{counter.micros.get(name, 0) / 1000 / added:.2f}",
                ]
            )
        listened.close()
    return rows


def _storage_dir(pid: int) -> Path:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return Path(args[args.index("--storage-path") + 1])


def _footprint(size: int, count: int, stats: dict, storage: Path) -> list[object]:
    files = {p.name: p.stat().st_size for p in storage.iterdir() if p.is_file()}
    oplog = sum(v for k, v in files.items() if k.startswith("secantus_oplog"))
    journal = sum(v for k, v in files.items() if k.startswith("WiredTigerLog"))
    total = stats.get("totalSize", stats.get("dataSize", 0) + stats.get("indexSize", 0))
    mib = 1024 * 1024
    return [
        f"{size:,}",
        count,
        f"{total / 1024:.0f}",
        f"{total / max(count, 1):.0f}",
        f"{oplog / mib:.1f}",
        f"{journal / mib:.1f}",
        f"{sum(files.values()) / mib:.1f}",
    ]
