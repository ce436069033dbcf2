"""Sizes a tool keeps (issue 41, item 5): long functions are counted, long files give a
reason, and the domain's tests mirror its packages.

- at most MAX_LONG_FUNCTIONS functions over LONG_FUNCTION lines outside `tests/` and the
  migrations (a new long function means splitting an old one first);
- every non-test module over LONG_FILE lines says why in its module docstring, on a line
  `Long because: <reason>`;
- `tests/streams/<package>/` exists, with tests, for every `streams/<package>/`, and no test
  module sits loose in `tests/streams/` (docs/testing.md).

`python -m pytest tests/test_sizes.py -rA` prints the lists when a rule fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LONG_FUNCTION = 60  # lines, decorators not counted (def to last line)
LONG_FILE = 400  # lines
MAX_LONG_FUNCTIONS = 25
# Not the project's code: virtualenvs, caches, generated and served files, migrations.
SKIPPED = {"tests", "migrations", "static", "var", "build", "test-artifacts", "node_modules"}


def project_modules(root: Path = ROOT) -> list[Path]:
    """The project's non-test Python files."""
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if not any(
            part in SKIPPED or part.startswith(".") or part.endswith(".egg-info")
            for part in path.relative_to(root).parts[:-1]
        )
    ]


def long_functions(source: str, limit: int = LONG_FUNCTION) -> list[tuple[str, int]]:
    """(name, lines) of each function or method over `limit` lines, nested ones included."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def long_file_reason(source: str) -> str | None:
    """The reason a long module gives, from a `Long because: ...` line of its docstring."""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    for line in docstring.splitlines():
        if line.startswith("Long because:") and line.removeprefix("Long because:").strip():
            return line.removeprefix("Long because:").strip()
    return None


def _lines(source: str) -> int:
    return source.count("\n")


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in project_modules()}


def test_few_functions_are_long():
    found = sorted(
        (lines, f"{path} {name}")
        for path, source in _sources().items()
        for name, lines in long_functions(source)
    )
    listed = "\n".join(f"{lines:4} {where}" for lines, where in reversed(found))
    assert len(found) <= MAX_LONG_FUNCTIONS, (
        f"{len(found)} functions over {LONG_FUNCTION} lines (at most {MAX_LONG_FUNCTIONS}); "
        f"split one before adding one:\n{listed}"
    )


def test_every_long_file_says_why():
    unexplained = [
        f"{path} ({_lines(source)} lines)"
        for path, source in _sources().items()
        if _lines(source) > LONG_FILE and long_file_reason(source) is None
    ]
    assert unexplained == [], (
        f"over {LONG_FILE} lines without a `Long because: <reason>` line in the module "
        "docstring (split the file, or say why it is one):\n" + "\n".join(unexplained)
    )


def test_the_domain_tests_mirror_its_packages():
    packages = {p.parent.name for p in (ROOT / "streams").glob("*/__init__.py")}
    tests = ROOT / "tests" / "streams"
    mirrored = {p.name for p in tests.iterdir() if any(p.glob("test_*.py"))}
    assert packages - mirrored == set(), "streams/<package>/ without tests/streams/<package>/"
    assert mirrored - packages == set(), "tests/streams/<folder>/ for no streams/ package"
    assert sorted(p.name for p in tests.glob("test_*.py")) == [], "loose in tests/streams/"


@pytest.mark.parametrize(
    ("source", "long"),
    [
        ("def f():\n" + "    x = 1\n" * 60, [("f", 61)]),
        ("def f():\n" + "    x = 1\n" * 59, []),
        ("class A:\n    async def g(self):\n" + "        x = 1\n" * 70, [("g", 71)]),
        (
            "def outer():\n    def inner():\n" + "        x = 1\n" * 61,
            [("outer", 63), ("inner", 62)],
        ),
    ],
)
def test_a_long_function_is_counted(source, long):
    assert long_functions(source) == long


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ('"""The rooms.\n\nLong because: one table per kind.\n"""\n', "one table per kind."),
        ('"""Long because: the steps read in order."""\n', "the steps read in order."),
        ('"""The rooms.\n\nLong because:\n"""\n', None),  # no reason given
        ('"""The rooms; long because it is."""\n', None),
        ("# Long because: a comment is not the docstring\nx = 1\n", None),
    ],
)
def test_a_long_file_reason_is_read_from_the_docstring(source, reason):
    assert long_file_reason(source) == reason


def test_the_scan_skips_tests_and_migrations(tmp_path: Path):
    for name in ("app/views.py", "tests/test_x.py", "app/migrations/0001.py", ".venv/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert [p.relative_to(tmp_path).as_posix() for p in project_modules(tmp_path)] == [
        "app/views.py"
    ]
