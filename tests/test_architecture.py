"""The layering of `shared/style.md`, checked on the source so it cannot drift."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_DOMAIN = (
    "django.http",
    "django.shortcuts",
    "django.template",
    "ninja",
    "memory_admin",
)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_domain_imports_no_interface_code():
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in _imports(path) if name.startswith(FORBIDDEN_IN_DOMAIN)
        )
        for path in _modules("streams")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_store_package_talks_to_pymongo():
    """bson ids are allowed in the documents and id helpers; pymongo only in streams/store."""
    offenders = []
    for package in ("streams", "memory_admin"):
        for path in _modules(package):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("streams/store/"):
                continue
            if any(name.split(".")[0] == "pymongo" for name in _imports(path)):
                offenders.append(relative)
    assert offenders == []


def test_interfaces_read_through_selectors_not_repositories():
    """The API and UI call `streams` functions (actions, services, selectors); no handler
    reaches into a repository (`store.jobs.get(...)`), so reads stay bounded and indexed
    in one place."""
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
    and schedules the jobs; handlers and views only parse, call and render."""
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
