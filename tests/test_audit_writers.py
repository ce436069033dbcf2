"""Audit entries are written by actions (and the records package that holds the writer),
never by a service: checked on the syntax tree of every module, so it cannot drift.

An action (`streams/actions/`, `ActionTx.audit`) writes its entry in its one
transaction; a service that wrote its own entry could write it outside that
transaction, or twice, or differently for two interfaces. A reference to the writer
(`streams.records.audit.audit_record`) counts in every form: imported under another name,
called through its module, passed along as a value; so does the maker of a system
action's sink (`streams.actions.base.system_audit`). A service that writes an entry is
handed a sink (`streams.records.audit.AuditSink`) by the action that runs it: the add by
`ActionTx.audit`, propagation by `do_propagation_run`, the lifecycle sweeps by
`streams/actions/sweeps.py`. No module is left outside (`STILL_WRITING` is empty, and a
listed module that no longer writes fails). A planted violation shows the check sees one.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRITERS = frozenset({"audit_record", "system_audit"})
ALLOWED = ("streams/actions/", "streams/records/")
# module -> why it still writes its own entry (each inside the transaction of its write).
STILL_WRITING: dict[str, str] = {}


def audit_writers(root: Path) -> dict[str, list[int]]:
    """Every module under `root` (streams/, memory_admin/) that refers to the audit
    writer, outside the allowed packages: its path and the lines."""
    found: dict[str, list[int]] = {}
    for package in ("streams", "memory_admin"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith(ALLOWED):
                continue
            lines = _references(ast.parse(path.read_text(), filename=relative))
            if lines:
                found[relative] = lines
    return found


def _references(tree: ast.Module) -> list[int]:
    names = set(WRITERS)
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in WRITERS:
                    names.add(alias.asname or alias.name)
                    lines.add(node.lineno)
    for node in ast.walk(tree):
        named = isinstance(node, ast.Name) and node.id in names
        if named or (isinstance(node, ast.Attribute) and node.attr in WRITERS):
            lines.add(node.lineno)
    return sorted(lines)


def test_only_actions_and_records_write_audit_entries():
    found = audit_writers(ROOT)
    outside = {path: lines for path, lines in found.items() if path not in STILL_WRITING}
    assert outside == {}, "an audit entry written outside streams/actions (record it there)"
    gone = sorted(set(STILL_WRITING) - set(found))
    assert gone == [], f"no longer writes its own entry: take it off STILL_WRITING: {gone}"


def test_a_planted_writer_is_found(tmp_path: Path):
    """A service that calls the writer under another name, one that calls it through its
    module, one that makes a system sink, and an action (allowed): the first three are
    found, the fourth is not."""
    planted = {
        "streams/memory/planted.py": (
            "from streams.records.audit import audit_record as note\n"
            "def f(store):\n    note(store=store, actor='x', action='a', object_type='t',"
            " object_id=None)\n"
        ),
        "memory_admin/planted.py": (
            "from streams.records import audit\n"
            "def g(store):\n    audit.audit_record(store=store)\n"
        ),
        "streams/memory/planted_sink.py": (
            "from streams.actions import base\n"
            "def s(store):\n    base.system_audit(store, 'system')(action='a')\n"
        ),
        "streams/actions/planted.py": (
            "from streams.records.audit import audit_record\n"
            "def do_h(store):\n    audit_record(store=store)\n"
        ),
    }
    for relative, text in planted.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    assert audit_writers(tmp_path) == {
        "memory_admin/planted.py": [3],
        "streams/memory/planted.py": [1, 3],
        "streams/memory/planted_sink.py": [3],
    }
