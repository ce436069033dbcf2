"""The first hour (issue 40 item 5): one set-up process for `make run`, and a start-up
that does not pay for what a management command does not use."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from memory_admin.demo.data import AGENTS

ROOT = Path(__file__).resolve().parent.parent

# What a management command's start-up (settings, apps, URLconf for the system checks)
# must not import: the `openai` SDK and numpy were about half a second each of every start
# on a 2-core machine (`python -X importtime manage.py help`); they load on first use.
NOT_AT_START_UP = ("openai", "numpy")


@pytest.mark.django_db
def test_prepare_runs_every_set_up_step_in_one_process_and_again_does_nothing(
    store, settings, tmp_path, capsys
):
    settings.MEMORY_DATA_DIR = tmp_path
    call_command("prepare", url="http://127.0.0.1:8765/")
    first = capsys.readouterr().out
    assert "indexes in place" in first and "Seeded 3 agents" in first
    assert re.search(r"Log in at http://127\.0\.0\.1:8765/ .* password: \S+$", first.strip())
    before = store.agents.get(AGENTS[0]).observation_count
    call_command("prepare", url="http://127.0.0.1:8765/")
    second = capsys.readouterr().out
    assert "Demo data already present" in second
    assert second.strip().rsplit(" ", 1)[-1] == first.strip().rsplit(" ", 1)[-1]  # same login
    assert store.agents.get(AGENTS[0]).observation_count == before


def test_make_run_sets_up_in_one_manage_py_process_then_serves():
    """Each `manage.py` process starts Django again: the second `make run` was four of them
    before the server (58 s on a loaded machine); now one, then runserver."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    steps = [line.split("manage.py", 1)[1].split()[0] for line in recipe.splitlines()[1:]]
    assert steps == ["prepare", "runserver"]


def test_a_management_command_starts_without_the_model_sdk(tmp_path):
    probe = (
        "import django, sys\n"
        "django.setup()\n"
        "from django.urls import get_resolver\n"
        "get_resolver().url_patterns\n"
        f"print([m for m in {NOT_AT_START_UP!r} if m in sys.modules])\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_admin.settings",
        "MEMORY_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
