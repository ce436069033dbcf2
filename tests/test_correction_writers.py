"""Corrections are written by actions only, like audit entries (issue 38, item 5): a
correction is recorded in the transaction of the action that corrected, so a service
that wrote one could write it outside that transaction, twice, or differently for two
interfaces. Checked on the syntax tree of every module: a reference to the writer
(`streams.records.corrections.correction_record`, in any import form) outside
`streams/actions/` and `streams/records/`, and any `.corrections.insert_many(...)` outside
the writer's module, is found; planted ones show the check sees them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRITER = "correction_record"
ALLOWED = ("streams/actions/", "streams/records/")
WRITER_MODULE = "streams/records/corrections.py"


def correction_writers(root: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for package in ("streams", "memory_admin"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            lines = _references(ast.parse(path.read_text()), relative)
            if lines:
                found[relative] = lines
    return found


def _references(tree: ast.Module, relative: str) -> list[int]:
    names = {WRITER}
    lines: set[int] = set()
    outside = not relative.startswith(ALLOWED)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported = {a.asname or a.name for a in node.names if a.name == WRITER}
            names |= imported
            if imported and outside:
                lines.add(node.lineno)
    for node in ast.walk(tree):
        if outside:
            if isinstance(node, ast.Name) and node.id in names:
                lines.add(node.lineno)
            if isinstance(node, ast.Attribute) and node.attr == WRITER:
                lines.add(node.lineno)
        raw = (
            isinstance(node, ast.Attribute)
            and node.attr == "insert_many"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "corrections"
        )
        if raw and relative != WRITER_MODULE:
            lines.add(node.lineno)
    return sorted(lines)


def test_only_actions_write_corrections():
    assert correction_writers(ROOT) == {}


def test_a_planted_writer_is_found(tmp_path: Path):
    planted = {
        "streams/memory/planted.py": (
            "from streams.records.corrections import correction_record as note\n"
            "def f(store):\n    note(store=store, corrections=[], session=None)\n"
        ),
        "memory_admin/planted.py": "def g(store):\n    store.corrections.insert_many([])\n",
        "streams/actions/planted.py": (
            "from streams.records.corrections import correction_record\n"
            "def do_h(store):\n    correction_record(store=store, corrections=[], session=None)\n"
        ),
    }
    for relative, text in planted.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    assert correction_writers(tmp_path) == {
        "memory_admin/planted.py": [2],
        "streams/memory/planted.py": [1, 3],
    }
