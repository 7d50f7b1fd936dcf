"""The layers import downwards only: app → orchestrator → roles → offline rules → kernel; each
subsystem is entered through its public face; no module imports itself back in a circle.

Read from the source with `ast`, lazy imports inside functions included for the layers and the
faces; the cycle check follows module-level imports (what runs when a module is loaded).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROLES = ("planner", "executor", "communicator")
PACKAGES = ("multiverse", "offline", "orchestrator", *ROLES, "app")
# What each package may not import.
FORBIDDEN = {
    "multiverse": ("app", "orchestrator", "offline", *ROLES),
    "offline": ("app", "orchestrator", *ROLES),
    "orchestrator": ("app", "offline"),
    **{
        role: ("app", "orchestrator", *(other for other in ROLES if other != role))
        for role in ROLES
    },
    "app": ("offline",),
}
# The offline engine's language rules serve the builtin roles only.
OFFLINE_USERS = ("planner.builtin", "executor.builtin", "offline")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()
SUBPACKAGES = sorted(
    name for name, path in MODULES.items() if path.name == "__init__.py" and "." in name
)


def _imports(path: Path, module_level: bool = False) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) of each absolute `import`/`from … import` in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if module_level else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module, [alias.name for alias in node.names]


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_below_it(package: str) -> None:
    """The kernel imports no role, the roles no orchestrator, nothing imports the app."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for module, path in MODULES.items()
        if _inside(module, package)
        for line, name, _ in _imports(path)
        if name.split(".")[0] in FORBIDDEN[package]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_offline_rules_serve_only_the_builtin_roles() -> None:
    """Only the builtin Planner and Executor read requests with the offline engine's rules."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for module, path in MODULES.items()
        for line, name, _ in _imports(path)
        if name.split(".")[0] == "offline"
        and not any(_inside(module, user) for user in OFFLINE_USERS)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_subsystem_is_entered_through_its_public_face() -> None:
    """Outside a subpackage, code imports its `__init__`, never one of its private modules."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for module, path in MODULES.items()
        for line, name, _ in _imports(path)
        for package in SUBPACKAGES
        if name.startswith(package + ".") and not _inside(module, package)
    ]
    assert not wrong, "\n".join(wrong)


def test_every_face_says_what_it_offers() -> None:
    """Each subpackage's face lists its public names in `__all__`, and each is importable."""
    for package in SUBPACKAGES:
        tree = ast.parse(MODULES[package].read_text(encoding="utf-8"))
        exported = [
            node
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ]
        assert ast.get_docstring(tree), f"{package} has no docstring"
        imported = {
            alias.asname or alias.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        if imported:
            assert exported, f"{package} re-exports names without __all__"


def _edges() -> dict[str, set[str]]:
    """Module-level imports between the project's modules (a submodule imported through its
    package counts as an import of the submodule)."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module, path in MODULES.items():
        for _, name, names in _imports(path, module_level=True):
            for alias in names or [""]:
                target = f"{name}.{alias}" if f"{name}.{alias}" in MODULES else name
                if target in MODULES:
                    graph[module].add(target)
            parts = name.split(".")
            for k in range(1, len(parts)):  # importing a module loads its packages first
                parent = ".".join(parts[:k])
                if parent in MODULES and not _inside(module, parent):
                    graph[module].add(parent)
        graph[module].discard(module)
    return graph


def test_no_module_imports_itself_back() -> None:
    """The module-level imports form no cycle (a cycle is a module loaded half-way)."""
    graph = _edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, "\n".join(" ⇄ ".join(cycle) for cycle in cycles)
