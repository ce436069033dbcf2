"""The multi-host rehearsal's short version (docs/rehearsal.md): 30 s of load from 8
clients through nginx to two web hosts, a worker host, Redis and the store, each in its
own network namespace, with Redis killed once (it keeps nothing) and started again.

What a caller was promised must hold: every acknowledged write there exactly once (or
deleted, if its client deleted it), no formation job left unfinished (the worker
outlives the broker's restart: tests/integration/test_broker_restart.py), and no context
or search answer holding text deleted before it was asked. About two minutes with its
set-up; the full run (`make rehearsal`, all four hosts killed, the rate limit across
hosts) is about six and stays out of CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import needs_rehearsal

ROOT = Path(__file__).resolve().parents[2]


@needs_rehearsal
@pytest.mark.redis
@pytest.mark.nginx
def test_a_short_rehearsal_with_redis_killed_keeps_every_promise(tmp_path):
    work = tmp_path / "rehearsal"
    argv = [sys.executable, str(ROOT / "deploy/rehearsal/rehearse.py"), "--seconds", "30"]
    argv += ["--clients", "8", "--faults", "redis", "--no-rate-limit", "--settle", "60"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "PYTEST_"))}
    done = subprocess.run(
        [*argv, "--work", str(work)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = (work / "report.md").read_text() if (work / "report.md").exists() else ""
    assert done.returncode == 0, f"{report}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    checked = json.loads((work / "checked.json").read_text())
    assert checked["acked"] > 0, report  # the load wrote, and its writes were checked
    assert checked["lost"] == [] and checked["duplicated"] == [], report
    assert checked["stuck"] == {} and checked["failed_jobs"] == 0, report
    assert checked["removed_seen"] == [], report
    assert [fault["host"] for fault in checked["faults"]] == ["redis"], report
    assert "| kill redis |" in report
