"""Concurrent clients side by side with mem0: `python -m benchmarks concurrency`.

Levels of 1, 4, 16 and 64 concurrent clients, each level running four operations in
turn for `--seconds` each (default 10), ours and mem0 one after the other (which goes
first alternates per operation, so both meet the same machine):
  - ours: the production config (`gunicorn -c gunicorn.conf.py`, its default 3 workers
    × 4 threads, embedded defaults: the web process starts the store's server, fresh
    data dir, threshold consolidation on); every client a process of its own with one
    keep-alive connection and a group scope of its own, all of one agent
    (`benchmarks/concurrency_clients.py`): single adds, batch adds of 10, context for
    the client's user and group, search in the group;
  - mem0 (mem0ai 2.2.1, `.venv-mem0`, as `versus_mem0`): N threads of the runner
    process (`benchmarks/mem0_runner.py`), its default local store (Qdrant on disk,
    SQLite history), thread t as user t: `add([turn], infer=False)`, `add(10 turns,
    infer=False)`, and `search(top_k=10)` for both context (mem0 has no context call;
    an agent searches with the message) and search.
The texts are LoCoMo dev turns (as `versus_mem0`). Per cell: successful calls per
second, p50 and p95 of the calls, and the calls that failed (not 2xx / raised).

`--quick` (or CI set): levels 1 and 2, 1 s each, ours only (mem0 is skipped with a
message, as it is when `.venv-mem0` is missing). `--levels 16 --seconds 45
--operations "single add" --ours-only` is one sustained cell of ours, for an A/B of a
setting (docs/benchmarks.md, "Open transactions").
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.concurrency_clients import BATCH, OPERATIONS, Call, Calls, drive, operation
from benchmarks.harness import percentile, print_row, print_table
from benchmarks.single_add import Server, production_server
from benchmarks.versus_mem0 import DATA, MEM0_VENV, Mem0, mem0_python, sessions

LEVELS = (1, 4, 16, 64)
QUICK_LEVELS = (1, 2)
MEM0_OPERATION = {"single add": "single", "batch add": "batch", "context": "search"}


def run(sizes: list[int] | None = None, argv: list[str] | None = None) -> dict:
    """The measured cells, by (level, operation, system): (calls/s, p50 ms, p95 ms, errors)."""
    del sizes
    args = _arguments(argv or [])
    quick = args.quick or bool(os.environ.get("CI"))
    levels = QUICK_LEVELS if quick else tuple(args.levels)
    seconds = 1.0 if quick else args.seconds
    texts = _texts()
    queries = [" ".join(t.split()[1:9]) for t in texts[::7]] or ["What did they say?"]
    operations = tuple(args.operations)
    python = None if quick or args.ours_only else mem0_python()
    if quick or args.ours_only:
        print("concurrency: ours only, mem0 skipped (--quick, CI or --ours-only)")
    elif python is None:
        print(
            f"concurrency: mem0 skipped: no mem0 environment ({MEM0_VENV / 'bin' / 'python'}). "
            "Build it with `make mem0-venv`, then run this again."
        )
    _load("at start")
    groups = tuple(f"conc-{n}" for n in range(max(*levels, 3)))
    cells: dict[tuple[int, str, str], tuple[float, float, float, int]] = {}
    failures: dict[tuple[int, str, str], dict[str, int]] = {}
    rows: list[list[object]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp,
        production_server(groups=groups, workers=None) as server,
    ):
        mem0 = Mem0(python, Path(tmp)) if python is not None else None
        try:
            for name in operations:  # every worker's imports and first reads, not measured
                warm = [_ours(server, name, c, texts, queries, "warm") for c in range(3)]
                drive(server, 0.5 if quick else 2.0, warm)
            for level in levels:
                for k, name in enumerate(operations):
                    first = (k + level) % 2 == 0
                    for system in ("ours", "mem0") if first else ("mem0", "ours"):
                        calls = _measure(system, server, mem0, name, level, seconds, texts, queries)
                        if calls is not None:
                            cells[level, name, system] = _cell(calls, seconds)
                            failures[level, name, system] = _kinds(calls)
                    rows.append(_row(cells, level, name))
                    print_row(rows[-1])
        finally:
            if mem0 is not None:
                mem0.close()
    load = os.getloadavg()
    print_table(
        f"Concurrent clients, {seconds:g} s per cell (batch: {BATCH} items a call; load "
        f"average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores)",
        HEADERS,
        rows,
    )
    _failures(failures)
    _goals(cells)
    return cells


HEADERS = [
    "clients",
    "operation",
    "ours calls/s",
    "ours p50 ms",
    "ours p95 ms",
    "ours errors",
    "mem0 calls/s",
    "mem0 p50 ms",
    "mem0 p95 ms",
    "mem0 errors",
    "ours/mem0",
]


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks concurrency")
    parser.add_argument("--quick", action="store_true", help="levels 1 and 2, ours only")
    parser.add_argument("--seconds", type=float, default=10.0, help="per cell (default 10)")
    parser.add_argument(
        "--levels", type=lambda s: [int(x) for x in s.split(",")], default=list(LEVELS)
    )
    parser.add_argument(
        "--operations",
        type=_operations,
        default=list(OPERATIONS),
        help=f"comma-separated, of: {', '.join(OPERATIONS)} (default all)",
    )
    parser.add_argument("--ours-only", action="store_true", help="skip mem0 (an A/B of ours)")
    return parser.parse_args(argv)


def _operations(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in OPERATIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"operations are of: {', '.join(OPERATIONS)}")
    return names


def _texts() -> list[str]:
    """LoCoMo dev turns, or made-up sentences when the conversations are not here."""
    files = sorted(DATA.glob("conv-*.json"))
    turns = [t for f in files[:3] for s in sessions(f, None) for t in s]
    return turns or [f"Speaker: I went hiking on day {n} and painted a lake." for n in range(200)]


def _ours(
    server: Server, name: str, client: int, texts: list[str], queries: list[str], salt: str
) -> Call:
    scope_id = server.scope_ids[client]
    return operation(
        name, client=client, scope_id=scope_id, texts=texts, queries=queries, salt=salt
    )


def _measure(
    system: str,
    server: Server,
    mem0: Mem0 | None,
    name: str,
    level: int,
    seconds: float,
    texts: list[str],
    queries: list[str],
) -> list[Calls] | None:
    """One cell's calls: `level` clients of `system` doing `name` for `seconds` (None:
    no mem0)."""
    if system == "ours":
        loops = [_ours(server, name, c, texts, queries, f"L{level}") for c in range(level)]
        return drive(server, seconds, loops)
    if mem0 is None:
        return None
    return _mem0(mem0, name, level, seconds, texts, queries)


def _mem0(
    mem0: Mem0, name: str, level: int, seconds: float, texts: list[str], queries: list[str]
) -> list[Calls]:
    answer = mem0.load(
        {
            "mode": "load",
            "op": MEM0_OPERATION.get(name, "search"),
            "threads": level,
            "seconds": seconds,
            "user_prefix": "conc",
            "texts": texts,
            "batch": BATCH,
            "queries": queries,
        }
    )
    kinds = answer.get("kinds") or {}
    return [Calls(seconds=answer["seconds"], errors=answer["errors"], kinds=kinds)]


def _kinds(calls: list[Calls]) -> dict[str, int]:
    found: dict[str, int] = {}
    for c in calls:
        for kind, n in c.kinds.items():
            found[kind] = found.get(kind, 0) + n
    return found


def _failures(failures: dict[tuple[int, str, str], dict[str, int]]) -> None:
    """What the failed calls were, per cell that had any (a status, or what mem0 raised)."""
    for (level, name, system), kinds in sorted(failures.items()):
        if kinds:
            listed = "; ".join(f"{n} × {kind}" for kind, n in sorted(kinds.items()))
            print(f"failed, {level} clients, {name}, {system}: {listed}")


def _cell(calls: list[Calls], seconds: float) -> tuple[float, float, float, int]:
    latencies = [s * 1000 for c in calls for s in c.seconds]
    errors = sum(c.errors for c in calls)
    if not latencies:
        return 0.0, 0.0, 0.0, errors
    ok = len(latencies) - errors
    return ok / seconds, percentile(latencies, 50), percentile(latencies, 95), errors


def _row(cells: dict, level: int, name: str) -> list[object]:
    ours = cells[level, name, "ours"]
    mem0 = cells.get((level, name, "mem0"))
    theirs: list[object] = (
        [f"{mem0[0]:.1f}", f"{mem0[1]:.1f}", f"{mem0[2]:.1f}", mem0[3]] if mem0 else ["-"] * 4
    )
    ratio = f"{ours[0] / mem0[0]:.2f}x" if mem0 and mem0[0] else "-"
    return [level, name, f"{ours[0]:.1f}", f"{ours[1]:.1f}", f"{ours[2]:.1f}", ours[3], *theirs,
            ratio]  # fmt: skip


def _goals(cells: dict) -> None:
    """Issue 43's goals at 16 clients, where measured."""
    ours, mem0 = cells.get((16, "single add", "ours")), cells.get((16, "single add", "mem0"))
    if ours and mem0 and mem0[0]:
        ratio = ours[0] / mem0[0]
        print(f"goal, 16 clients: single adds >= 3x mem0's: {ratio:.2f}x "
              f"({'met' if ratio >= 3 else 'not met'})")  # fmt: skip
    context = cells.get((16, "context", "ours"))
    if context:
        print(f"goal, 16 clients: context p95 <= 50 ms: {context[2]:.1f} ms "
              f"({'met' if context[2] <= 50 else 'not met'})")  # fmt: skip


def _load(when: str) -> None:
    load = os.getloadavg()
    print(f"load average {when}: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
