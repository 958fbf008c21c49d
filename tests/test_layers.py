"""The layers of src/jiyi, read with ``ast``: no module imports itself back at run time (a cycle),
and none imports a layer above its own. Run-time imports are those at module level and those in
functions (they run too); the ones under ``if TYPE_CHECKING:`` never run and do not count."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "jiyi"

# A layer may import its own rank and the ranks below it; importing a higher rank is upward. The
# key is the first name under jiyi ("jiyi" for the package's own __init__).
RANKS: dict[str, int] = {
    "jiyi": 0, "errors": 0, "records": 0, "git_head": 0, "toml_flat": 0, "config": 0, "session_link": 0,
    "analysis": 1,
    "project": 2,
    "store": 3, "writing": 3, "transfer": 3,
    "ranking": 4, "query": 4, "shapes": 4, "tools": 4,
    "capture": 5, "session": 5, "memory": 5,
    "mcp_server": 6, "team": 6, "diagnosis": 6, "ui": 6,
    "cli": 7, "__main__": 7,
}  # fmt: skip

# Cycles and upward imports accepted for now, subtracted from what the test reports: none. An entry
# that is no longer found fails the test, so the list can only shrink.
_KNOWN_TODAY: set[str] = set()


@dataclass(frozen=True)
class Import:
    importer: str  # dotted, under jiyi: "store.sqlite.store" ("jiyi" for jiyi/__init__.py)
    imported: str
    path: Path
    line: int
    implied: bool = False  # a package around the module named, loaded with it


def short(module: str) -> str:
    """``jiyi.store.base`` -> ``store.base``; the package itself stays ``jiyi``."""
    return module.removeprefix("jiyi.") if module != "jiyi" else module


def modules() -> dict[str, Path]:
    """Every module of src/jiyi by its dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:`` (the name may be a local ``False``)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements under ``node`` that run: everywhere but the body of ``if TYPE_CHECKING``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:  # the else branch does run
                yield from _run_time_imports(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from _run_time_imports(child)


def _resolve(name: str, known: dict[str, Path]) -> str:
    """The module ``name`` stands for: itself, or the longest known module it is inside
    (``jiyi.store.base.Store`` -> ``jiyi.store.base``)."""
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


def _targets(module: str, statement: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The jiyi modules one import statement loads: a submodule, or the module a name is taken from."""
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
    else:
        base = statement.module or ""
        if statement.level:
            package = module if known[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(statement.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        # `from .x import name`: name may be a submodule of .x (`from . import outbox`).
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in statement.names]
    return sorted({_resolve(name, known) for name in names if name == "jiyi" or name.startswith("jiyi.")})


def imports() -> list[Import]:
    """Every run-time import of one jiyi module by another. Importing a submodule imports the
    packages around it too, unless the importer is inside them already (they are then loaded)."""
    known = modules()
    found: list[Import] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement in _run_time_imports(tree):
            for target in _targets(module, statement, known):
                parts = target.split(".")
                for end in range(1, len(parts) + 1):
                    imported = ".".join(parts[:end])
                    if imported != module and not module.startswith(imported + "."):
                        implied = end < len(parts)
                        found.append(Import(short(module), short(imported), path, statement.lineno, implied))
    return found


def rank(module: str) -> int:
    layer = module.split(".")[0]
    assert layer in RANKS, f"{module}: no rank for {layer!r}; add it to RANKS in {Path(__file__).name}"
    return RANKS[layer]


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Every elementary cycle of the graph, each once, starting at its smallest module."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found: list[list[str]] = []
    for start in sorted(graph):
        # Only modules above `start` may follow it: a cycle through a smaller one was found from there.
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        while stack and len(found) < 100:
            node, path = stack.pop()
            for following in sorted(graph.get(node, ()), reverse=True):
                if following == start:
                    found.append([*path, start])
                elif following > start and following not in path:
                    stack.append((following, [*path, following]))
    return found


def where(found: list[Import], importer: str, imported: str) -> str:
    """file:line of each import of ``imported`` by ``importer``."""
    places = {(i.path, i.line) for i in found if (i.importer, i.imported) == (importer, imported)}
    return ", ".join(f"{path.relative_to(SRC.parent)}:{line}" for path, line in sorted(places))


def test_no_import_cycle_and_no_layer_imported_upward() -> None:
    unranked = sorted({short(module).split(".")[0] for module in modules()} - RANKS.keys())
    assert not unranked, f"no rank in RANKS for {unranked}"
    found = imports()
    edges = {(i.importer, i.imported) for i in found}
    problems: dict[str, str] = {}
    for cycle in cycles(edges):
        steps = "; ".join(where(found, a, b) for a, b in pairwise(cycle))
        problems["cycle " + " -> ".join(cycle)] = f"import cycle {' -> '.join(cycle)} ({steps})"
    # A package around the imported module is of its layer: the module names the upward import.
    for a, b in sorted({(i.importer, i.imported) for i in found if not i.implied}):
        if rank(b) > rank(a):
            problems[f"upward {a} -> {b}"] = (
                f"{where(found, a, b)}: {a} (rank {rank(a)}) imports {b} (rank {rank(b)}), a layer above its own"
            )
    new = sorted(problems[key] for key in problems.keys() - _KNOWN_TODAY)
    gone = sorted(_KNOWN_TODAY - problems.keys())
    report = []
    if new:
        report += ["run-time imports against the layers:", *new]
    if gone:
        report += ["in _KNOWN_TODAY but no longer found (remove them):", *gone]
    assert not report, "\n".join(report)


def test_subpackages_init_files_import_nothing() -> None:
    """A subpackage's __init__.py is its docstring: importing one module of it loads no other."""
    holding: list[str] = []
    for path in sorted(PACKAGE.rglob("__init__.py")):
        if path.parent in (PACKAGE, PACKAGE / "cli"):
            continue  # the library's lazy names and the command's entry
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        holding += [
            f"{path.relative_to(SRC.parent)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
    assert not holding, "imports in a subpackage's __init__.py:\n" + "\n".join(holding)
