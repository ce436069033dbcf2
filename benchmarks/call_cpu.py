"""CPU per call, by process: `python -m benchmarks call_cpu [--calls N] [--quick]`.

One client calls the production server (`gunicorn -c gunicorn.conf.py`, one worker, embedded
defaults, fresh data dir) in turn: context, search, single add, batch add. Before them it
makes 200 single adds in its group scope, as `concurrency`'s cells do before they read, so
the threshold consolidation has written the group a consolidation to show. For each
operation: the wall time per call and the CPU seconds per call of the web process (the
worker and the job runners it starts), of the store's server and of the client, read
from /proc. Throughput on a machine is bound by the sum of those CPU times over its cores,
so this says which process to make cheaper (issue 43: context p95 at 16 clients).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from benchmarks.concurrency import _texts
from benchmarks.concurrency_clients import Call, Connection, operation
from benchmarks.harness import print_row, print_table
from benchmarks.single_add import Server, production_server
from memory_admin.runtime.embedded_store import STATE_FILE

OPERATIONS = ("context", "search", "single add", "batch add")
SEED_ADDS = 200
HEADERS = [
    "operation",
    "calls",
    "wall ms/call",
    "web CPU ms/call",
    "store CPU ms/call",
    "client CPU ms/call",
]


def run(sizes: list[int] | None = None, argv: list[str] | None = None) -> dict:
    """The rows, by operation: (wall, web, store, client) milliseconds per call."""
    del sizes
    args = _arguments(argv or [])
    quick = args.quick or bool(os.environ.get("CI"))
    calls = 30 if quick else args.calls
    texts = _texts()
    queries = [" ".join(t.split()[1:9]) for t in texts[::7]] or ["What did they say?"]
    measured: dict[str, tuple[float, float, float, float]] = {}
    rows: list[list[object]] = []
    with production_server(groups=("conc-0",), workers=1) as server:
        conn = Connection(server)
        seed = _call(server, "single add", texts, queries, "seed")
        for n in range(20 if quick else SEED_ADDS):
            seed(conn, n)
        for name in OPERATIONS:
            call = _call(server, name, texts, queries, "cpu")
            time.sleep(0.5 if quick else 3.0)  # the adds' consolidations and folds settle
            # Imports and first reads, not measured; the first also opens the connection
            # again (gunicorn's keep-alive closed it while the work settled).
            for n in range(5 if quick else 30):
                call(conn, n)
            measured[name] = _measure(server, conn, call, calls)
            rows.append([name, calls, *(f"{v:.2f}" for v in measured[name])])
            print_row(rows[-1])
    print_table(
        f"CPU per call by process, one client ({os.cpu_count()} cores; load average at end "
        f"{os.getloadavg()[0]:.2f})",
        HEADERS,
        rows,
    )
    return measured


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks call_cpu")
    parser.add_argument("--calls", type=int, default=400, help="per operation (default 400)")
    parser.add_argument("--quick", action="store_true", help="30 calls, a short seed")
    return parser.parse_args(argv)


def _call(server: Server, name: str, texts: list[str], queries: list[str], salt: str) -> Call:
    return operation(
        name, client=0, scope_id=server.scope_ids[0], texts=texts, queries=queries, salt=salt
    )


def _measure(
    server: Server, conn: Connection, call: Call, calls: int
) -> tuple[float, float, float, float]:
    store_pid = json.loads((server.data_dir / STATE_FILE).read_text())["pid"]
    web0, store0 = tree_cpu(server.pid, but=store_pid), process_cpu(store_pid)
    wall0, client0 = time.perf_counter(), time.process_time()
    for n in range(calls):
        status = call(conn, n)
        if not 200 <= status < 300:
            raise RuntimeError(f"call {n} answered {status} {conn.last_error}")
    wall, client = time.perf_counter() - wall0, time.process_time() - client0
    web = tree_cpu(server.pid, but=store_pid) - web0
    store = process_cpu(store_pid) - store0
    return (1000 * wall / calls, 1000 * web / calls, 1000 * store / calls, 1000 * client / calls)


def process_cpu(pid: int) -> float:
    """User and system CPU seconds of `pid` so far, its children that ended and were
    waited for included (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int, *, but: int | None = None) -> float:
    """`process_cpu` of `root` and of every live process below it, except `but`'s (a
    child that ended is in its parent's figure, so none is counted twice)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid == but:
            continue
        total += process_cpu(pid)
        todo.extend(children.get(pid, []))
    return total
