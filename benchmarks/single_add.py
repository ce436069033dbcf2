"""Single adds as a caller gets them: `python -m benchmarks single_add`.

The production path: `gunicorn -c gunicorn.conf.py memory_admin.wsgi -w 1` (the
threaded envelope worker, its access log, DEBUG off), embedded defaults (no
MONGODB_URI: the web process starts and supervises its own store in a fresh
MEMORY_DATA_DIR), default settings (threshold consolidation on, the in-process job
pool), two group scopes. The requests come from a separate client process, one at a
time, either on a new connection each (as an agent that does not pool connections) or
on one keep-alive connection. BENCH_SINGLE_ADDS sets the adds per mode (default 300).

A second run serves the same requests under `benchmarks/profile_gunicorn.conf.py` (the
same config plus timing hooks) and prints where one add's time goes: client, gunicorn,
Django outside the view, each stage of the action, and each store command.

Long because: one benchmark's three views of the same adds (caller latency, server profile, per-
command rows) share its client process and its rows.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, _free_port, _wait_for_port, percentile, print_table
from benchmarks.seed import content

ADDS = int(os.environ.get("BENCH_SINGLE_ADDS", "300"))
AGENT = "bench-agent"
PRODUCTION_CONF = "gunicorn.conf.py"
PROFILE_CONF = "benchmarks/profile_gunicorn.conf.py"


@dataclass(frozen=True)
class Server:
    port: int
    api_key: str
    scope_ids: tuple[str, ...]
    pid: int
    data_dir: Path


@contextmanager
def production_server(
    config: str = PRODUCTION_CONF,
    extra_env: dict[str, str] | None = None,
    groups: tuple[str, ...] = ("bench-group-0", "bench-group-1"),
    root: Path = ROOT,
    workers: int | None = 1,
) -> Iterator[Server]:
    """gunicorn with `config` and `workers` workers (None: the config's own number) on
    embedded defaults in a fresh data dir, with an API key and a group scope per name of
    `groups`; the embedded store is stopped afterwards. `root`: the source tree to serve
    (another checkout, to compare)."""
    tree = root
    root = Path(tempfile.mkdtemp(prefix="bench-single-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "MEMORY_DATA_DIR": str(root / "data"),
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "bench-only-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    for name in ("MONGODB_URI", "MONGODB_DB", "OPENAI_API_KEY", "CELERY_BROKER_URL"):
        env.pop(name, None)
    (root / "data").mkdir(mode=0o700)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=tree, env=env, check=True)
    created = subprocess.run(
        [*manage, "create_api_key", "--name", "bench"],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    api_key = created.stdout.strip().splitlines()[-1]
    port = _free_port()
    env["GUNICORN_BIND"] = f"127.0.0.1:{port}"
    log = open(root / "gunicorn.log", "wb")  # noqa: SIM115 (closed below)
    count = ["-w", str(workers)] if workers is not None else []
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", config, "memory_admin.wsgi", *count],
        cwd=tree,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for_port(port)
        scopes = tuple(_create_scope(port, api_key, group) for group in groups)
        yield Server(
            port=port, api_key=api_key, scope_ids=scopes, pid=web.pid, data_dir=root / "data"
        )
    finally:
        # Past gunicorn's graceful_timeout (30 s: a job still running, say) it is killed;
        # the store is stopped either way (a timeout here once left it running).
        web.terminate()
        try:
            web.wait(timeout=40)
        except subprocess.TimeoutExpired:
            web.kill()
            web.wait(timeout=10)
        log.close()
        subprocess.run(
            [*manage, "stop_embedded_store"], cwd=tree, env=env, capture_output=True, check=False
        )
        shutil.rmtree(root, ignore_errors=True)


def _create_scope(port: int, api_key: str, group_id: str) -> str:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(
        "POST",
        f"/api/v1/agents/{AGENT}/scopes",
        json.dumps({"scope_type": "group", "group_id": group_id}),
        {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 201, (response.status, body[:300])
    return json.loads(body)["id"]


def run_client(
    server: Server, contents: list[str], modes: tuple[str, ...] = ("new", "keep-alive")
) -> dict[str, list[float]]:
    """Adds `contents` one request at a time from a separate process, the modes ("new":
    a new connection for the request, "keep-alive": one connection for all) in turn, the
    two scopes in turn; each mode's request latencies in seconds, as the client saw them."""
    return _client(
        {
            "port": server.port,
            "api_key": server.api_key,
            "scope_ids": list(server.scope_ids),
            "contents": contents,
            "modes": list(modes),
        }
    )


def run_client_batch(server: Server, scope_id: str, contents: list[str], key: str) -> float:
    """All `contents` in one batch request from a separate process; its latency (s)."""
    orders = {
        "port": server.port,
        "api_key": server.api_key,
        "scope_ids": [scope_id],
        "contents": contents,
        "batch": key,
    }
    return _client(orders)["batch"][0]


def _client(request: dict) -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.single_add_client"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:  # the client says which request failed, and its answer
        raise RuntimeError(f"the benchmark client failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)["latencies"]


def contents_for(n: int, salt: str) -> list[str]:
    rng = random.Random(salt)
    return [content(rng) for _ in range(n)]


def caller_rows(label: str, adds: int = ADDS) -> list[list[object]]:
    """The table rows of one production server: new connection each, then keep-alive."""
    with production_server() as server:
        run_client(server, contents_for(20, "warm"))  # the store started, imports done
        start = usage(server)
        latencies = run_client(server, contents_for(2 * adds, label))
        cost = usage(server, settled=True) - start
    return [
        _row(label, "new connection", latencies["new"], cost, 2 * adds),
        _row(label, "keep-alive", latencies["keep-alive"], cost, 2 * adds),
    ]


@dataclass(frozen=True)
class Usage:
    """What the server side spent: CPU seconds of gunicorn (master, worker) and the store
    process, and the store's commands (serverStatus opcounters). Load-independent: on a
    busy machine the latencies grow, these do not."""

    cpu: float = 0.0
    commands: int = 0

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.cpu - other.cpu, self.commands - other.commands)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.cpu + other.cpu, self.commands + other.commands)


def usage(server: Server, *, settled: bool = False) -> Usage:
    """The server's CPU and commands so far; `settled`: first wait (up to 15 s) until
    its CPU stops moving, so work written behind or queued by the adds is counted."""
    store_pid = json.loads((server.data_dir / "secantus-server.json").read_text())["pid"]

    def cpu() -> float:
        return sum(_cpu_seconds(pid) for pid in _descendants(server.pid) | {store_pid})

    if settled:
        last, deadline = cpu(), time.monotonic() + 15
        while time.monotonic() < deadline:
            time.sleep(1.5)
            now = cpu()
            if now - last < 0.02:
                break
            last = now
    from pymongo import MongoClient

    from memory_admin.runtime.embedded_store import embedded_server_uri

    client: MongoClient[dict[str, Any]] = MongoClient(embedded_server_uri(data_dir=server.data_dir))
    with client:
        counters = client.admin.command("serverStatus")["opcounters"]
    return Usage(cpu=cpu(), commands=sum(counters.values()))


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process and of its children that ended (cutime, cstime)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def _descendants(pid: int) -> set[int]:
    """A process and its live descendants: gunicorn's master, its worker, the worker's
    job-runner child (MEMORY_INPROCESS_ISOLATION=process) and the store it started."""
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except FileNotFoundError:
                continue
    return found


def _row(
    label: str, mode: str, latencies: list[float], cost: Usage | None = None, adds: int = 0
) -> list[object]:
    """`cost` covers `adds` adds of both modes (interleaved request by request)."""
    ms = [s * 1000 for s in latencies]
    per_add = [
        f"{cost.cpu * 1000 / adds:.1f}" if cost and adds else "-",
        f"{cost.commands / adds:.1f}" if cost and adds else "-",
    ]
    return [
        label,
        mode,
        len(ms),
        f"{len(ms) / sum(latencies):.1f}",
        f"{percentile(ms, 50):.1f}",
        f"{percentile(ms, 95):.1f}",
        f"{percentile(ms, 99):.1f}",
        f"{statistics.fmean(ms):.1f}",
        *per_add,
    ]


CALLER_HEADERS = [
    "run",
    "connection",
    "adds",
    "adds/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "mean ms",
    "server CPU ms/add",
    "store cmds/add",
]


def profile(adds: int = 200) -> list[list[object]]:
    """Per stage, the median over `adds` sequential adds (new connection each)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.jsonl"
        with production_server(PROFILE_CONF, {"BENCH_PROFILE_FILE": str(out)}) as server:
            run_client(server, contents_for(20, "warm"))
            out.unlink(missing_ok=True)
            latencies = run_client(server, contents_for(adds, "profile"), ("new",))["new"]
        lines = [json.loads(line) for line in out.read_text().splitlines()]
    return profile_rows(latencies, lines)


def profile_rows(latencies: list[float], lines: list[dict]) -> list[list[object]]:
    n = len(lines)

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}" if values else "-"

    def p95(values: list[float]) -> str:
        return f"{percentile(values, 95):.2f}" if values else "-"

    def per_request(pick: Callable[[Any], float]) -> list[float]:
        return [pick(line) for line in lines]

    def named_ms(part: str, name: str) -> list[float]:
        """Per request: the milliseconds its `part` ("stages", "commands") spent in `name`."""
        return [sum(ms for s, _, ms in line[part] if s == name) for line in lines]

    client = [s * 1000 for s in latencies]
    wsgi = per_request(lambda line: line["wsgi_ms"])
    rows: list[list[object]] = [
        ["client: request to response read", "1", med(client), p95(client)],
        [
            "outside the WSGI app (connect, gunicorn parse/write, access log, loopback)",
            "1",
            f"{statistics.median(client) - statistics.median(wsgi):.2f}",
            "",
        ],
        ["WSGI app (Django middleware + view)", "1", med(wsgi), p95(wsgi)],
    ]
    names: list[str] = []
    for line in lines:
        for name, _, _ in line["stages"]:
            if name not in names:
                names.append(name)
    for name in names:
        totals = named_ms("stages", name)
        calls = sum(1 for line in lines for s, _, _ in line["stages"] if s == name) / n
        rows.append([f"  {name}", f"{calls:.2f}", med(totals), p95(totals)])
    ninja = per_request(
        lambda line: sum(ms for s, _, ms in line["stages"] if s.startswith("ninja"))
    )
    rows.append(
        [
            "  Django outside ninja's operation (middleware, URL resolve, response)",
            "1",
            f"{statistics.median(wsgi) - statistics.median(ninja):.2f}",
            "",
        ]
    )
    commands: list[str] = []
    for line in lines:
        for name, _, _ in line["commands"]:
            if name not in commands:
                commands.append(name)
    for name in commands:
        totals = named_ms("commands", name)
        calls = sum(1 for line in lines for c, _, _ in line["commands"] if c == name) / n
        rows.append([f"    store: {name}", f"{calls:.2f}", med(totals), p95(totals)])
    store_all = per_request(lambda line: sum(ms for _, _, ms in line["commands"]))
    count = per_request(lambda line: len(line["commands"]))
    rows.append(
        ["  store commands, all", f"{statistics.fmean(count):.2f}", med(store_all), p95(store_all)]
    )
    return rows


PROFILE_HEADERS = ["stage", "calls/add", "median ms", "p95 ms"]


CHUNK = 25


def compare(before: Path, adds: int = ADDS) -> tuple[list[list[object]], list[list[object]]]:
    """This tree against `before` (another checkout), both served at once and measured in
    turns of CHUNK adds, so that both see the same load: the caller rows of each, then
    the profile of each (the same, under the profiling config)."""
    rows: list[list[object]] = []
    trees = (("before", before), ("after", ROOT))
    with (
        production_server(root=before) as first,
        production_server() as second,
    ):
        servers = {"before": first, "after": second}
        latencies: dict[str, dict[str, list[float]]] = {}
        costs: dict[str, Usage] = {}
        for label, server in servers.items():
            run_client(server, contents_for(20, "warm"))
            latencies[label] = {"new": [], "keep-alive": []}
            costs[label] = Usage()
        for n, start in enumerate(range(0, 2 * adds, 2 * CHUNK)):
            contents = contents_for(2 * CHUNK, f"chunk-{start}")
            for label, _ in trees if n % 2 == 0 else trees[::-1]:
                # Each tree's turn settles before the other's starts: its CPU is its own.
                begin = usage(servers[label])
                for mode, values in run_client(servers[label], contents).items():
                    latencies[label][mode] += values
                costs[label] += usage(servers[label], settled=True) - begin
    for label, _ in trees:
        total = len(latencies[label]["new"]) + len(latencies[label]["keep-alive"])
        for mode, name in (("new", "new connection"), ("keep-alive", "keep-alive")):
            rows.append(_row(label, name, latencies[label][mode], costs[label], total))
    profiles: list[list[object]] = []
    if not PROFILE_ADDS:
        return rows, profiles
    with tempfile.TemporaryDirectory() as tmp:
        outs = {label: Path(tmp) / f"{label}.jsonl" for label, _ in trees}
        with (
            production_server(
                PROFILE_CONF, {"BENCH_PROFILE_FILE": str(outs["before"])}, root=before
            ) as first,
            production_server(PROFILE_CONF, {"BENCH_PROFILE_FILE": str(outs["after"])}) as second,
        ):
            servers = {"before": first, "after": second}
            client: dict[str, list[float]] = {}
            for label, server in servers.items():
                run_client(server, contents_for(20, "warm"))
                outs[label].unlink(missing_ok=True)
                client[label] = []
            for n, start in enumerate(range(0, PROFILE_ADDS, CHUNK)):
                contents = contents_for(CHUNK, f"profile-{start}")
                for label, _ in trees if n % 2 == 0 else trees[::-1]:
                    client[label] += run_client(servers[label], contents, ("new",))["new"]
        for label, _ in trees:
            lines = [json.loads(line) for line in outs[label].read_text().splitlines()]
            profiles += [[label, *row] for row in profile_rows(client[label], lines)]
    return rows, profiles


# Adds per tree of the profile (BENCH_PROFILE_ADDS; 0: the caller's table only).
PROFILE_ADDS = int(os.environ.get("BENCH_PROFILE_ADDS", "200"))


def run(sizes: list[int] | None = None) -> None:
    del sizes  # one size: two fresh scopes
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    before = os.environ.get("BENCH_BEFORE_TREE")
    if before:
        rows, profiles = compare(Path(before))
        print_table(
            f"Sequential single adds, before ({before}) and after (this tree), served at once "
            f"and measured in turns of {CHUNK} ({ADDS} per mode and tree; production config)",
            CALLER_HEADERS,
            rows,
        )
        if profiles:
            print_table(
                f"Where one add's time goes, before and after (median and p95 over "
                f"{PROFILE_ADDS} adds each, new connection each, in turns; production config "
                "plus timing hooks)",
                ["tree", *PROFILE_HEADERS],
                profiles,
            )
        load = os.getloadavg()
        print(f"\nload average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        return
    rows = caller_rows("production config")
    print_table(
        f"Sequential single adds from a separate client process ({ADDS} per mode; "
        "gunicorn -c gunicorn.conf.py -w 1, embedded defaults, fresh data dir, "
        "threshold consolidation on)",
        CALLER_HEADERS,
        rows,
    )
    if PROFILE_ADDS:
        print_table(
            f"Where one add's time goes (median and p95 over {PROFILE_ADDS} sequential adds, "
            "new connection each; production config plus timing hooks)",
            PROFILE_HEADERS,
            profile(PROFILE_ADDS),
        )
    load = os.getloadavg()
    print(f"\nload average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
