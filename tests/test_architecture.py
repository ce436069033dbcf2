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
