"""The layers import downwards only (issue 15): app → orchestrator → roles → kernel.

Read from the source with `ast`, lazy imports inside functions included: the kernel
(`multiverse/`) imports no role, no orchestrator and no app; a role imports neither the
orchestrator nor the app (nor another role's package); the orchestrator does not import the app.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROLES = ("planner", "executor", "communicator")
# What each package may not import.
FORBIDDEN = {
    "multiverse": ("app", "orchestrator", *ROLES),
    "orchestrator": ("app",),
    **{
        role: ("app", "orchestrator", *(other for other in ROLES if other != role))
        for role in ROLES
    },
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_below_it(package: str) -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, name in _imports(path)
        if name.split(".")[0] in FORBIDDEN[package]
    ]
    assert not wrong, "\n".join(wrong)
