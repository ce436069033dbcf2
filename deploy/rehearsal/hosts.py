"""The rehearsal's hosts: network namespaces on one bridge, and the processes on them.

Each host is a namespace (`ip netns`) with one address on the bridge `mar0`
(10.88.0.0/24); nginx and the clients stay on the machine's own namespace at
10.88.0.1, as a load balancer and callers outside the hosts would. Killing a host is
SIGKILL to every process in its namespace, as a host that loses power.
Needs root (network namespaces).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

BRIDGE = "mar0"
NET = "10.88.0"
GATEWAY = f"{NET}.1"
ADDRESSES = {"web1": 11, "web2": 12, "worker": 21, "redis": 31, "store": 41}


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def network_down() -> None:
    """Remove whatever an earlier run left (idempotent)."""
    for name in ADDRESSES:
        for pid in _pids(name):
            _kill(pid)
        sh("ip", "netns", "del", f"mar-{name}", check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def network_up() -> None:
    network_down()
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    for name, last in ADDRESSES.items():
        ns, veth = f"mar-{name}", f"marv-{name}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", veth, "master", BRIDGE, "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{NET}.{last}/24", "dev", "eth0")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", GATEWAY)


def _pids(name: str) -> list[int]:
    done = sh("ip", "netns", "pids", f"mar-{name}", check=False)
    return [int(p) for p in done.stdout.split()]


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@dataclass
class Host:
    """One namespace and the commands that make it what it is (started again after a kill)."""

    name: str
    logs: Path
    commands: list[tuple[list[str], dict[str, str]]] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"{NET}.{ADDRESSES[self.name]}"

    def run(self, argv: list[str], env: dict[str, str], *, keep: bool = True) -> None:
        """Start `argv` on this host; `keep` makes it part of what a restart starts again."""
        if keep:
            self.commands.append((argv, env))
        log = open(self.logs / f"{self.name}.log", "ab")  # noqa: SIM115 (owned by the child)
        self.processes.append(
            subprocess.Popen(
                ["ip", "netns", "exec", f"mar-{self.name}", *argv],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=Path(__file__).resolve().parents[2],
            )
        )

    def kill(self) -> None:
        """Power off: SIGKILL every process in the namespace."""
        for pid in _pids(self.name):
            _kill(pid)
        for process in self.processes:
            process.wait(10)
        self.processes.clear()

    def start(self) -> None:
        for argv, env in self.commands:
            self.run(argv, env, keep=False)

    def stop(self) -> None:
        for pid in _pids(self.name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while _pids(self.name) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.kill()
