"""No model request is built outside `streams/memory/requests.py` (issue 37, 8).

The dry run equals the real run because both get their `LLMRequest` from the one builder
per task; a second place that constructs one could drift from it unseen. So every
`LLMRequest(...)` call in the product code is found by its syntax, and a planted one is
shown to be found.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILDER = Path("streams/memory/requests.py")


def constructions(source: str) -> list[int]:
    """The lines of `source` that call `LLMRequest(...)` (by any import spelling)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "LLMRequest":
                found.append(node.lineno)
    return found


def test_only_the_builder_constructs_model_requests():
    outside = {
        str(path.relative_to(ROOT)): lines
        for package in ("streams", "memory_admin", "benchmarks")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.relative_to(ROOT) != BUILDER
        and (lines := constructions(path.read_text(encoding="utf-8")))
    }
    assert outside == {}
    assert constructions((ROOT / BUILDER).read_text(encoding="utf-8"))


def test_a_planted_construction_is_found():
    planted = (
        "from streams.llm import port\nr = port.LLMRequest('extraction', 'p', None, True, 'fast')\n"
    )
    assert constructions(planted) == [2]
