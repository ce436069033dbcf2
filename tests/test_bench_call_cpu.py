"""`python -m benchmarks call_cpu --quick`: every operation measured on the production
server, and the process-tree CPU it reads counts a busy child, or leaves it out."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks import call_cpu


def test_the_quick_mode_measures_every_operation(capsys) -> None:
    measured = call_cpu.run(argv=["--quick"])

    assert set(measured) == set(call_cpu.OPERATIONS)
    for name, (wall, web, store, client) in measured.items():
        assert wall > 0 and min(web, store, client) >= 0, name
    assert sum(web for _, web, _, _ in measured.values()) > 0  # the worker did the work
    assert "| operation" in capsys.readouterr().out


def test_the_tree_counts_a_busy_child_unless_told_to_leave_it_out() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 10
        while call_cpu.process_cpu(busy.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        child = call_cpu.process_cpu(busy.pid)
        assert child >= 0.3
        with_it = call_cpu.tree_cpu(os.getpid())
        without = call_cpu.tree_cpu(os.getpid(), but=busy.pid)
        assert with_it >= call_cpu.process_cpu(os.getpid()) + child
        assert with_it - without >= child - 0.1  # the rest of the tree moved on a little
    finally:
        busy.kill()
        busy.wait()
