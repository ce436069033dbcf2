"""The import graph's numbers and the map of docs/architecture.md.

`python -m benchmarks.import_graph [ROOT]` prints the figures; `python -m benchmarks
import_graph --write-docs` rewrites the package lists, the floors and the figures between
the markers of docs/architecture.md, and `--check-docs` exits 1 when they are stale (a
module missing from the lists, a floor or a figure changed); tests/test_architecture_map.py
fails when the lists miss a module or a contract misses a room.

Built with grimp (import-linter's graph), which sees imports inside functions too, so a
cycle hidden by a late import still counts. Printed for `streams/` (its modules, and its
units: a direct child of `streams`, a module or a whole package) and for upward edges
across the app:

- packages: subpackages of `streams`; units: direct children of `streams`;
- edges: distinct importer -> imported pairs (modules; units);
- layers: levels of the unit graph with each cycle drawn as one node;
- cycles: groups of modules (or units) that reach each other;
- upward: module pairs that import against benchmarks -> interfaces -> rest of memory_admin ->
  streams.actions -> capabilities -> streams.store / streams.llm -> the shared kernel.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from functools import partial
from pathlib import Path

import grimp

ROOTS = ("streams", "memory_admin", "benchmarks")
DOCS = Path("docs/architecture.md")
# Listed by the map: every module but package faces, migrations and caches.
UNLISTED_DIRS = {"__pycache__", "migrations", "data"}

KERNEL = ("documents", "documents_audit", "exceptions", "ids", "pagination", "core")
# HTTP-facing modules (views, handlers, URL maps, middleware, commands) and the app config
# that wires them
INTERFACES = ("ui", "api", "urls", "management", "templatetags", "web", "apps")
INTERFACE_MODULES: tuple[str, ...] = ()


def rank(module: str) -> int:
    parts = module.split(".")
    child = parts[1] if len(parts) > 1 else ""
    if parts[0] == "benchmarks":
        return 7
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


def build(root: Path) -> grimp.ImportGraph:
    sys.path.insert(0, str(root))
    return grimp.build_graph(*ROOTS, cache_dir=None)


def pairs_of(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    return {
        (a, b) for a in graph.modules for b in graph.find_modules_directly_imported_by(a) if a != b
    }


def main(root: Path | None = None) -> None:
    root = root or Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    graph = build(root)
    pairs = pairs_of(graph)
    for label, value in streams_rows(graph, pairs):
        print(f"| {label:<42} | {value:>4} |")
    figures = house_figures(graph, pairs, layers_of(root))
    for package, counts in figures.items():
        print(f"{package}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for a, b in upward_pairs(pairs, layers_of(root)):
        print(f"upward: {a} -> {b}")


def streams_rows(graph: grimp.ImportGraph, pairs: set[tuple[str, str]]) -> list[tuple[str, int]]:
    """The streams table the earlier waves measured (docs/architecture.md, the history)."""
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
    upward = [(a, b) for a, b in pairs if rank(a) < rank(b)]
    return [
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


def layers_of(root: Path) -> list[list[list[str]]]:
    """The floors of each `layers` contract in pyproject.toml, top first, as full module
    names (a floor's `a | b` are siblings on one floor)."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = []
    for contract in config["contracts"]:
        if contract["type"] != "layers":
            continue
        containers = contract.get("containers") or [""]
        for container in containers:
            prefix = f"{container}." if container else ""
            contracts.append(
                [
                    [prefix + name.strip() for name in re.split(r"[|:]", floor)]
                    for floor in contract["layers"]
                ]
            )
    return contracts


def floor_in(module: str, floors: list[list[str]]) -> int | None:
    for index, floor in enumerate(floors):
        if any(module == name or module.startswith(name + ".") for name in floor):
            return index
    return None


def upward_pairs(
    pairs: set[tuple[str, str]], contracts: list[list[list[str]]]
) -> list[tuple[str, str]]:
    """Module pairs whose importer stands on a lower floor than what it imports, in any
    layers contract (floors are listed top first)."""
    upward = set()
    for floors in contracts:
        for a, b in pairs:
            fa, fb = floor_in(a, floors), floor_in(b, floors)
            if fa is not None and fb is not None and fb < fa:
                upward.add((a, b))
    return sorted(upward)


def _figures(nodes, edges, units, unit_edges, upward, packages) -> dict[str, int]:
    return {
        "modules": len(nodes),
        "packages": len(packages),
        "units": len(units),
        "module edges": len(edges),
        "unit edges": len(unit_edges),
        "floors": levels(units, unit_edges),
        "module cycles": sum(1 for g in strongly_connected(nodes, edges) if len(g) > 1),
        "unit cycles": sum(1 for g in strongly_connected(units, unit_edges) if len(g) > 1),
        "upward": len(upward),
    }


def house_figures(graph, pairs, contracts) -> dict[str, dict[str, int]]:
    """Per root package and for the whole house: modules (files, not package faces),
    packages, units (direct children), edges, floors of the unit graph, cycles, upward."""
    leaves = {m for m in graph.modules if not graph.find_children(m)}
    upward = upward_pairs(pairs, contracts)
    figures = {}
    for top in ROOTS:
        inside = {m for m in graph.modules if m.startswith(top + ".")}
        nodes = inside & leaves
        edges = {(a, b) for a, b in pairs if a in nodes and b in nodes}
        units = {".".join(m.split(".")[:2]) for m in inside}
        unit_edges = {
            (unit(a), unit(b))
            for a, b in pairs
            if a in inside and b in inside and unit(a) != unit(b)
        }
        packages = inside - leaves
        mine = [(a, b) for a, b in upward if a.startswith(top + ".")]
        figures[top] = _figures(nodes, edges, units, unit_edges, mine, packages)
    nodes = {m for m in leaves if m.split(".")[0] in ROOTS}
    edges = {(a, b) for a, b in pairs if a in nodes and b in nodes}
    root_edges = {
        (a.split(".")[0], b.split(".")[0])
        for a, b in pairs
        if a.split(".")[0] in ROOTS
        and b.split(".")[0] in ROOTS
        and a.split(".")[0] != b.split(".")[0]
    }
    packages = {m for m in graph.modules if m.split(".")[0] in ROOTS} - leaves
    figures["whole house"] = _figures(nodes, edges, set(ROOTS), root_edges, upward, packages)
    return figures


def listed_modules(root: Path) -> dict[str, list[str]]:
    """Package folder -> the module names in it (package faces, migrations left out)."""
    listing: dict[str, list[str]] = {}
    for top in ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root)
            if UNLISTED_DIRS & set(rel.parts[:-1]) or path.name == "__init__.py":
                continue
            listing.setdefault(rel.parent.as_posix() + "/", []).append(
                path.name.removesuffix(".py")
            )
    return dict(sorted(listing.items()))


def render_packages(root: Path) -> str:
    rows = ["| package | its modules |", "| --- | --- |"]
    for folder, names in listed_modules(root).items():
        rows.append(f"| `{folder}` | {', '.join(f'`{n}`' for n in names)} |")
    return "\n".join(rows)


def render_figures(root: Path) -> str:
    graph = build(root)
    pairs = pairs_of(graph)
    contracts = layers_of(root)
    figures = house_figures(graph, pairs, contracts)
    rows = ["| | " + " | ".join(figures) + " |", "| --- |" + " ---: |" * len(figures)]
    for key in next(iter(figures.values())):
        rows.append(f"| {key} | " + " | ".join(str(f[key]) for f in figures.values()) + " |")
    floors = ["", "Floors, top first, as the `layers` contracts of pyproject.toml set them:", ""]
    for floors_of in contracts:
        line = " → ".join(" \\| ".join(f"`{n}`" for n in floor) for floor in floors_of)
        floors.append(f"- {line}")
    return "\n".join(rows + floors)


def marked(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {name}\b[^>]*-->\n)(.*?)(^<!-- end: {name} -->)", re.S | re.M
    )


def docs_blocks(root: Path) -> dict[str, str]:
    return {"packages": render_packages(root) + "\n", "figures": render_figures(root) + "\n"}


def missing_from_map(root: Path) -> list[str]:
    """Module files the docs' package lists do not name (what the map test asks)."""
    found = marked("packages").search((root / DOCS).read_text())
    text = found.group(2) if found else ""
    named = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.strip("|").split("|")]
        if len(parts) == 2 and parts[0].startswith("`"):
            named[parts[0].strip("`")] = {n.strip(" `") for n in parts[1].split(",")}
    return [
        f"{folder}{name}.py"
        for folder, names in listed_modules(root).items()
        for name in names
        if name not in named.get(folder, set())
    ]


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks import_graph")
    parser.add_argument("root", nargs="?", default=".")
    parser.add_argument("--write-docs", action="store_true", help="rewrite the map's blocks")
    parser.add_argument("--check-docs", action="store_true", help="exit 1 when they are stale")
    args = parser.parse_args(argv or [])
    root = Path(args.root).resolve()
    if not (args.write_docs or args.check_docs):
        main(root)
        return 0
    text = (root / DOCS).read_text()
    stale = []
    for name, block in docs_blocks(root).items():
        pattern = marked(name)
        found = pattern.search(text)
        if found is None:
            print(f"{DOCS}: no '<!-- generated: {name} -->' ... '<!-- end: {name} -->' markers")
            return 1
        if found.group(2) != block:
            stale.append(name)
            text = pattern.sub(partial(_framed, block), text)
    if args.write_docs:
        (root / DOCS).write_text(text)
        print(f"{DOCS}: rewrote {', '.join(stale) or 'nothing (already current)'}")
        return 0
    for path in missing_from_map(root):
        print(f"not on the map: {path}")
    if stale:
        fix = "python -m benchmarks import_graph --write-docs"
        print(f"{DOCS}: stale {', '.join(stale)}; run `{fix}`")
    return 1 if stale else 0


def _framed(block: str, match: re.Match[str]) -> str:
    """A marked block's new body between its unchanged markers."""
    return match.group(1) + block + match.group(3)


if __name__ == "__main__":
    if any(a.startswith("--") for a in sys.argv[1:]):
        raise SystemExit(run(sys.argv[1:]))
    main()
