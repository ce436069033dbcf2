"""ruff is part of the suite, so CI fails on a lint or format problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_and_format_are_clean():
    ruff = [sys.executable, "-m", "ruff"]
    check = subprocess.run([*ruff, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run(
        [*ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stdout
