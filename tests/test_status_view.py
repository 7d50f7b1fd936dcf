"""The status views: the plain tree `status RUN` prints and the live tree `--watch` redraws."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from multiverse.status_view import live_tree, render_tree


def _data() -> dict[str, Any]:
    run = {
        "run_id": "run-20261121-000000-001",
        "user_request": "시장 분석 memo",
        "status": "PENDING",
        "current_phase_id": "P1",
        "current_stage_id": "P1-S01",
        "current_task_id": "P1-S01-T02",
    }
    stage = {"stage_id": "P1-S01", "phase_id": "P1", "stage_name": "Facts", "status": "PENDING"}
    tasks = [
        {
            "task_id": "P1-S01-T01",
            "stage_id": "P1-S01",
            "task_name": "Extract",
            "status": "COMPLETED",
        },
        {"task_id": "P1-S01-T02", "stage_id": "P1-S01", "task_name": "Chart", "status": "PENDING"},
    ]
    tool = {
        "tool_task_id": "P1-S01-T02-POST-01",
        "parent_task_id": "P1-S01-T02",
        "tool_type": "data_visualization",
        "status": "FAILED",
    }
    phases = [
        {"phase_id": "P0", "phase_name": "INSTRUCTION_AMENDMENT", "status": "COMPLETED"},
        {"phase_id": "P1", "phase_name": "ANALYZING", "status": "PENDING"},
    ]
    return {"run": run, "phases": phases, "stages": [stage], "tasks": tasks, "tool_tasks": [tool]}


def _label(node: Tree) -> Text:
    assert isinstance(node.label, Text)
    return node.label


def test_live_tree_nests_like_the_plain_tree() -> None:
    """Every line of the plain tree appears in the live tree, in the same order and nesting."""
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(live_tree(_data()))
    drawn = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    plain = render_tree(_data()).splitlines()
    assert len(drawn) == len(plain)
    for live_line, plain_line in zip(drawn, plain, strict=True):
        assert live_line.endswith(plain_line.strip())
    depth = [len(line) - len(line.lstrip(" │├└─")) for line in drawn]
    assert depth[0] < depth[1] == depth[2] < depth[3] < depth[4] == depth[5] < depth[6]


def test_live_tree_colours_statuses_and_bolds_the_current_work() -> None:
    """A failed tool task is red, a completed task green, the current task bold."""
    root = live_tree(_data())
    assert isinstance(root, Tree)
    stage = root.children[1].children[0]
    done, current = stage.children
    failed_tool = current.children[0]
    assert any("green" in str(span.style) for span in _label(done).spans)
    assert any("red" in str(span.style) for span in _label(failed_tool).spans)
    assert any(str(span.style) == "bold" for span in _label(current).spans)
    assert not any(str(span.style) == "bold" for span in _label(done).spans)
