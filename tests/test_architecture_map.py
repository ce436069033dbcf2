"""The map in docs/architecture.md cannot go stale: its package lists name every module,
and every room of the house stands on a floor of a `layers` contract.

The lists are written by `python -m benchmarks import_graph --write-docs`; this test
fails when a module was added, moved or removed without rewriting them, and when a new
direct child of `streams` or `memory_admin` was left off the contracts' floors (the
contracts would then not check it). Shown to fail on a module planted in a copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks.import_graph import (
    DOCS,
    floor_in,
    layers_of,
    listed_modules,
    marked,
    missing_from_map,
    render_packages,
)

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `python -m benchmarks import_graph --write-docs`"


def test_the_map_names_every_module():
    assert missing_from_map(ROOT) == [], REGENERATE


def test_the_map_names_no_module_that_is_gone():
    found = marked("packages").search((ROOT / DOCS).read_text())
    assert found is not None, f"{DOCS} lost its package-list markers"
    assert found.group(2) == render_packages(ROOT) + "\n", REGENERATE


def test_every_room_stands_on_a_floor():
    """Each direct child of `streams` is on a floor of the `layers` contract, each of
    `memory_admin` on a floor of `rooms`: a new room joins the layering when it is made."""
    contracts = layers_of(ROOT)
    unplaced = []
    for package in ("streams", "memory_admin"):
        for child in sorted((ROOT / package).iterdir()):
            if child.name.startswith(("_", ".")) or not (child.is_dir() or child.suffix == ".py"):
                continue
            if child.is_dir() and not (child / "__init__.py").exists():
                continue
            module = f"{package}.{child.name.removesuffix('.py')}"
            placed = [
                floor_in(module, floors)
                for floors in contracts
                if any(name.startswith(f"{package}.") for floor in floors for name in floor)
            ]
            if not any(index is not None for index in placed):
                unplaced.append(module)
    assert unplaced == []


def test_a_planted_module_is_missed(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / DOCS, tmp_path / DOCS)
    for package in ("streams", "memory_admin", "benchmarks"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    assert missing_from_map(tmp_path) == []
    (tmp_path / "memory_admin/jobs/planted.py").write_text('"""Not on the map."""\n')
    assert missing_from_map(tmp_path) == ["memory_admin/jobs/planted.py"]
    assert "planted" in listed_modules(tmp_path)["memory_admin/jobs/"]
