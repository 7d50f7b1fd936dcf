"""What every document of the engine shares: the task it answers and its opening lines."""

from __future__ import annotations

from executor.builtin.evidence import BANNER, Digest
from executor.builtin.extract import Frozen
from executor.builtin.tabular import markdown_table
from executor.builtin.text import shorten


class DocContext(Frozen):
    """The task a document answers, as the document tells it."""

    run_id: str
    task_id: str
    task_name: str
    task_purpose: str
    phase_name: str
    request: str
    instructions: list[str]
    inputs: list[str]


def opening(context: DocContext, kind: str) -> list[str]:
    """The banner, the title and the task's identity lines of a workspace document."""
    inputs = ", ".join(f"`{path}`" for path in context.inputs) or "none"
    lines = [
        BANNER,
        "",
        f"# {kind}: {context.task_name}",
        "",
        f"- **Run:** `{context.run_id}` · **Task:** `{context.task_id}` ({context.phase_name})",
    ]
    if context.task_purpose:
        lines.append(f"- **Purpose:** {' '.join(context.task_purpose.split())}")
    lines += [
        f"- **Request:** {shorten(context.request, 300) or '(empty)'}",
        f"- **Inputs:** {inputs}",
        "",
    ]
    return lines


def sources_overview(digests: list[Digest]) -> list[str]:
    """A table of every source: kind, title and its basic facts."""
    rows = [[f"`{d.source}`", d.kind, d.title, "; ".join(d.facts)] for d in digests]
    return [markdown_table(["Source", "Kind", "Title", "Facts"], rows), ""]


def bullet_list(items: list[str], empty: str) -> list[str]:
    """Lines of a bullet list, or one line saying there is nothing to list."""
    return [*items, ""] if items else [f"_{empty}_", ""]
