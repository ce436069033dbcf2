"""The layering of docs/architecture.md, checked on the import graph so it cannot drift.

The contracts live in pyproject.toml (`[tool.importlinter]`) and `lint-imports` checks
them on every import, those inside functions included. Each contract is shown to fail
on a violation planted in a temporary copy of the code, so a contract that stopped
seeing anything would fail here. Two checks import-linter cannot express stay as
syntax checks: handlers call no repository method, and import no job or audit writer
by name.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# contract id -> (file to add in the copy, its text): one planted violation each
PLANTED: dict[str, list[tuple[str, str]]] = {
    "layers": [
        ("streams/store/planted.py", "from streams.memory import scopes\n"),
        ("streams/context/planted.py", "from streams.actions.sessions import do_messages_ingest\n"),
        ("streams/core/planted.py", "def late():\n    from streams.store import MemoryStore\n"),
        ("streams/actions/planted.py", "import memory_admin.jobs.tasks\n"),
        ("memory_admin/planted.py", "def late():\n    from benchmarks import harness\n"),
    ],
    "rooms": [
        # the arrow issue 41 removed: a view in accounts took the actor from the UI
        ("memory_admin/accounts/planted.py", "from memory_admin.ui.common import actor\n"),
        ("memory_admin/runtime/planted.py", "def late():\n    import memory_admin.jobs.tasks\n"),
        ("memory_admin/api/planted.py", "from memory_admin.ui import common\n"),  # independent
        ("memory_admin/ui/planted.py", "from memory_admin.web.login_throttle import client_ip\n"),
    ],
    "no-django-in-streams": [
        ("streams/memory/planted.py", "from django import http\n"),
        ("streams/search/planted.py", "import memory_admin.stores\n"),
    ],
    "pymongo-only-in-store": [
        ("streams/memory/planted.py", "from pymongo import ReturnDocument\n"),
        ("memory_admin/ui/planted.py", "import pymongo\n"),
    ],
    "interfaces-call-actions": [
        ("memory_admin/ui/planted.py", "from streams.store.jobs import JobRepository\n"),
        ("memory_admin/api/planted.py", "from memory_admin.jobs.tasks import dispatch_now\n"),
        ("memory_admin/ui/planted.py", "from streams.records.audit import audit_record\n"),
    ],
    "acyclic": [
        # the shape of the cycles issue 29 broke: a late import back into the importer
        (
            "streams/memory/consolidation_jobs.py",
            "def late():\n    from streams.memory import consolidation\n",
        ),
        ("streams/search/planted.py", "def late():\n    from streams.memory import scopes\n"),
    ],
    "acyclic-rooms": [
        # inside one room: the pool reaching back for the runner that imports it
        ("memory_admin/jobs/inprocess.py", "def late():\n    import memory_admin.jobs.runner\n"),
        # the shape of the benchmarks' cycles issue 41 broke
        ("benchmarks/locomo.py", "def late():\n    from benchmarks import retrieval_quality\n"),
        ("benchmarks/seed.py", "def late():\n    from benchmarks import write_throughput\n"),
    ],
}


def _lint_imports(cwd: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    args = [str(LINT_IMPORTS), "--no-cache", "--no-logo"]
    for contract in contracts:
        args += ["--contract", contract]
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)


def test_the_import_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_contract_is_planted_a_violation():
    configured = set()
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("id = "):
            configured.add(line.split('"')[1])
    assert configured == set(PLANTED)


@pytest.mark.parametrize(
    ("contract", "path", "text"),
    [(contract, path, text) for contract, plants in PLANTED.items() for path, text in plants],
)
def test_a_planted_violation_breaks_its_contract(tmp_path, contract, path, text):
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("streams", "memory_admin", "benchmarks"):
        shutil.copytree(ROOT / package, copy / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    assert _lint_imports(copy, contract).returncode == 0  # the copy keeps it

    target = copy / path
    target.write_text((target.read_text() if target.exists() else "") + text)
    result = _lint_imports(copy, contract)
    assert result.returncode != 0, result.stdout
    assert "BROKEN" in result.stdout and "1 broken" in result.stdout


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_interfaces_read_through_selectors_not_repositories():
    """The API and UI call `streams` functions (actions, services, selectors); no handler
    reaches into a repository (`store.jobs.get(...)`), so reads stay bounded and indexed
    in one place. (The contracts keep `streams.store` out of their imports; this keeps the
    handle they do hold from being used as one.)"""
    offenders = []
    for package in ("memory_admin/api", "memory_admin/ui"):
        for path in _modules(package):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                owner = node.func.value
                if isinstance(owner, ast.Attribute) and _is_store(owner.value):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_interfaces_record_no_audit_entry_and_enqueue_no_job_themselves():
    """One write path per action: the domain action (`streams/actions`) records the entry
    and schedules the jobs; handlers and views only parse, call and render. By name, so a
    re-export from a module the contracts allow is caught too."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name
            for name in _names(path)
            if name in ("audit_record", "enqueue", "enqueue_all", "api_audit")
        )
        for package in ("memory_admin/api", "memory_admin/ui")
        for path in _modules(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def _is_store(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "store"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "get_store"
    )


def _names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {alias.name for alias in node.names}
    return names
