"""The import graph's numbers (docs/architecture.md): `python -m benchmarks.import_graph [ROOT]`.

Built with grimp (import-linter's graph), which sees imports inside functions too, so a
cycle hidden by a late import still counts. Printed for `streams/` (its modules, and its
units: a direct child of `streams`, a module or a whole package) and for upward edges
across the app:

- packages: subpackages of `streams`; units: direct children of `streams`;
- edges: distinct importer -> imported pairs (modules; units);
- layers: levels of the unit graph with each cycle drawn as one node;
- cycles: groups of modules (or units) that reach each other;
- upward: module pairs that import against interfaces -> rest of memory_admin ->
  streams.actions -> capabilities -> streams.store / streams.llm -> the shared kernel.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

KERNEL = ("documents", "documents_audit", "exceptions", "ids", "pagination", "core")
# HTTP-facing modules (views, handlers, URL maps, middleware, commands) and the app config
# that wires them
INTERFACES = (
    "ui",
    "api",
    "urls",
    "management",
    "templatetags",
    "middleware",
    "large_requests",
    "apps",
)
INTERFACE_MODULES = ("memory_admin.accounts.password",)


def rank(module: str) -> int:
    parts = module.split(".")
    child = parts[1] if len(parts) > 1 else ""
    if parts[0] == "memory_admin":
        return 6 if child in INTERFACES or module in INTERFACE_MODULES else 5
    if child == "actions":
        return 4
    if child in ("store", "llm"):
        return 1
    if child in KERNEL:
        return 0
    return 2


def unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def strongly_connected(nodes: set[str], edges: set[tuple[str, str]]) -> list[set[str]]:
    """Tarjan's algorithm (iterative)."""
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        out[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(out[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(out[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def levels(nodes: set[str], edges: set[tuple[str, str]]) -> int:
    """Levels of the condensed graph: its longest path, counted in nodes."""
    groups = strongly_connected(nodes, edges)
    group_of = {n: i for i, g in enumerate(groups) for n in g}
    dag = {(group_of[a], group_of[b]) for a, b in edges if group_of[a] != group_of[b]}
    depth: dict[int, int] = {}

    def longest(g: int) -> int:
        if g not in depth:
            depth[g] = 1 + max((longest(b) for a, b in dag if a == g), default=0)
        return depth[g]

    sys.setrecursionlimit(10_000)
    return max((longest(g) for g in range(len(groups))), default=0)


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    sys.path.insert(0, str(root))
    graph = grimp.build_graph("streams", "memory_admin", cache_dir=None)
    pairs = {
        (a, b) for a in graph.modules for b in graph.find_modules_directly_imported_by(a) if a != b
    }
    streams_modules = {m for m in graph.modules if m.startswith("streams.")}
    modules = {m for m in streams_modules if not graph.find_children(m)}
    packages = {m for m in streams_modules if graph.find_children(m)}
    module_edges = {(a, b) for a, b in pairs if a in modules and b in modules}
    units = {unit(m) for m in streams_modules}
    unit_edges = {
        (unit(a), unit(b))
        for a, b in pairs
        if a.startswith("streams.") and b.startswith("streams.") and unit(a) != unit(b)
    }
    module_cycles = [g for g in strongly_connected(modules, module_edges) if len(g) > 1]
    unit_cycles = [g for g in strongly_connected(units, unit_edges) if len(g) > 1]
    upward = sorted((a, b) for a, b in pairs if rank(a) < rank(b))
    rows = [
        ("streams modules (.py files, not packages)", len(modules)),
        ("streams packages", len(packages)),
        ("streams units (root modules + packages)", len(units)),
        ("import edges between streams modules", len(module_edges)),
        ("import edges between streams units", len(unit_edges)),
        ("layers of the unit graph", levels(units, unit_edges)),
        ("module cycles", len(module_cycles)),
        ("unit cycles", len(unit_cycles)),
        ("upward edges (module pairs)", len(upward)),
    ]
    for label, value in rows:
        print(f"| {label:<42} | {value:>4} |")
    for group in module_cycles:
        print("module cycle:", " <-> ".join(sorted(group)))
    for group in unit_cycles:
        print("unit cycle:", " <-> ".join(sorted(group)))
    for a, b in upward:
        print(f"upward: {a} -> {b}")


if __name__ == "__main__":
    main()
