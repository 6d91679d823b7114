"""The layout of ``src/``, read from the source with ``ast`` (nothing is imported).

* No import loop between modules. Every import counts: at module level, inside a
  function or under ``TYPE_CHECKING``; ``from package import module`` is an import of
  that module.
* No import from a lower layer to a higher one. The layers, lowest first: ``domain``
  (pure rules), ``application`` (handlers, ports, the store), ``projections`` (read
  models), ``api`` (Litestar: routes, wire structs, auth, error mapping) and
  ``entrypoints`` (the command, the ASGI factory, the composition root). A module imports
  from its own layer or lower ones only; ``domain`` and ``application`` do not import
  Litestar either.
* No import loop between the packages of a layer either: ``application`` is grouped by
  capability (``store``, ``config``, ``access``, ``wallet``, ``rounds``, ``inventory``,
  ``audit``, and ``games.<game>``, one package a game), with only ``platform``, ``errors``,
  ``clock`` and ``wire`` at its top, and these packages import each other one way only.
* No module over ``MAX_LINES`` lines, but for the exceptions named (with the reason) in
  ``LONGER``.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
LAYERS = ("domain", "application", "projections", "api", "entrypoints")
FRAMEWORK = {"litestar": "application"}  # the web framework: not below this layer
MAX_LINES = 400
LONGER: dict[str, str] = {}  # "package/module.py": why it is longer
GROUPS = {"application.games": 3}  # a package whose subpackages are the units (one a game)
APPLICATION_TOP = {
    "application",
    "application.platform",
    "application.errors",
    "application.clock",
    "application.wire",
}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every Python file of the layers."""
    found = {}
    for layer in LAYERS:
        for path in sorted((SRC / layer).rglob("*.py")):
            parts = list(path.relative_to(SRC).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(imported name, line) of every import in the file; ``from a import b`` gives
    ``a.b`` when that is a module of ours, else ``a``. Relative imports are resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                dotted = f"{base}.{alias.name}"
                found.append((dotted if dotted in MODULES else base, node.lineno))
    return found


def _ours(imported: str) -> str | None:
    """The module of ours an imported name is (or is in), or None (not ours)."""
    while imported:
        if imported in MODULES:
            return imported
        imported = imported.rpartition(".")[0]
    return None


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for imported, _ in _imports(name, path):
            target = _ours(imported)
            if target is not None and target != name:
                graph[name].add(target)
    return graph


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(loops)


def _package(module: str) -> str:
    """The package a module counts in for the package graph: the first package under its
    layer (``application.store``), a game's own package under ``application.games``, or
    the module itself when it stands at the top of its layer."""
    parts = module.split(".")
    depth = GROUPS.get(".".join(parts[:2]), 2)
    is_package = MODULES[module].name == "__init__.py"
    if len(parts) <= depth - (0 if is_package else 1):
        return module
    return ".".join(parts[:depth])


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {_package(name): set() for name in MODULES}
    for name, targets in _graph().items():
        for target in targets:
            if _package(target) != _package(name):
                graph[_package(name)].add(_package(target))
    return graph


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_the_scan_sees_every_layer_and_their_imports() -> None:
    assert {name.split(".")[0] for name in MODULES} == set(LAYERS)
    graph = _graph()
    assert "entrypoints.cli_audit" in graph["entrypoints.cli"]
    assert "application.errors" in graph["api.errors"]
    assert "domain.hash_chain" in graph["projections.hash_chain"]


def test_the_loop_finder_finds_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _loops(graph) == [["a", "b", "c"]]


def test_no_import_loop_between_modules() -> None:
    assert _loops(_graph()) == []


def test_the_package_graph_groups_modules_by_package() -> None:
    assert _package("application.store.sql") == "application.store"
    assert _package("application.store") == "application.store"
    assert _package("application.games.upgrader.quote") == "application.games.upgrader"
    assert _package("application.games") == "application.games"
    assert _package("application.platform") == "application.platform"
    graph = _package_graph()
    assert "application.store" in graph["application.platform"]
    assert "application.rounds" in graph["application.games.upgrader"]


def test_application_is_grouped_by_capability() -> None:
    top = {name for name in MODULES if name.count(".") <= 1 and name.startswith("application")}
    loose = {name for name in top if MODULES[name].name != "__init__.py"}
    assert loose == APPLICATION_TOP - {"application"}


def test_no_import_loop_between_packages() -> None:
    assert _loops(_package_graph()) == []


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    upward = []
    for name, path in MODULES.items():
        for imported, line in _imports(name, path):
            target = _ours(imported)
            where = f"{path.relative_to(SRC)}:{line}"
            if target is not None and _layer(target) > _layer(name):
                upward.append(f"{where} imports {target}")
            top = imported.split(".")[0]
            if top in FRAMEWORK and _layer(name) <= LAYERS.index(FRAMEWORK[top]):
                upward.append(f"{where} imports {imported}")
    assert upward == []


def test_no_module_over_the_line_limit() -> None:
    longer = {}
    for path in sorted(SRC.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        key = str(path.relative_to(SRC))
        if lines > MAX_LINES and key not in LONGER:
            longer[key] = lines
    assert longer == {}
    assert all((SRC / key).is_file() for key in LONGER)  # no stale exception
