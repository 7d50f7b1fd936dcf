"""The times in `status RUN`: each line's elapsed time, the step in flight with a spinner."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from app.status_view import live_tree, render_tree


def _timed() -> dict[str, Any]:
    run = {
        "run_id": "run-20261121-000000-001",
        "user_request": "memo",
        "status": "PENDING",
        "current_phase_id": "P1",
        "current_stage_id": None,
        "current_task_id": "T2",
        "in_flight": {
            "step": "EXECUTE_TASK",
            "target": "T2",
            "started_at": "2026-11-21T00:00:00.000Z",
            "seconds": 12.4,
        },
    }
    return {
        "run": run,
        "phases": [
            {
                "phase_id": "P1",
                "phase_name": "ANALYZING",
                "status": "PENDING",
                "elapsed_seconds": 72.0,
            }
        ],
        "stages": [
            {
                "stage_id": "S1",
                "phase_id": "P1",
                "stage_name": "Facts",
                "status": "PENDING",
                "elapsed_seconds": 72.0,
            }
        ],
        "tasks": [
            {
                "task_id": "T1",
                "stage_id": "S1",
                "task_name": "Extract",
                "status": "COMPLETED",
                "elapsed_seconds": 0.4,
            },
            {
                "task_id": "T2",
                "stage_id": "S1",
                "task_name": "Chart",
                "status": "PENDING",
                "elapsed_seconds": None,
            },
        ],
        "tool_tasks": [],
    }


def test_the_tree_shows_elapsed_times_and_the_step_in_flight() -> None:
    """Each line with a known time ends with it; the step in flight is said under the run."""
    lines = render_tree(_timed()).splitlines()
    assert lines[1] == "  in flight: EXECUTE_TASK T2 · 12s"
    assert lines[2] == "  · P1 ANALYZING  1m 12s" and lines[4] == "      ✓ T1 Extract  0.4s"
    assert lines[5] == "      · T2 Chart"


def test_the_live_tree_spins_on_the_step_in_flight() -> None:
    """`--watch` draws a spinner before the step in flight and its elapsed seconds."""
    console = Console(record=True, width=100, color_system=None)
    console.print(live_tree(_timed()))
    drawn = console.export_text()
    flight = next(line for line in drawn.splitlines() if "EXECUTE_TASK T2 · 12s" in line)
    assert flight.split("EXECUTE_TASK")[0].strip() != ""  # the spinner's frame
    assert "T1 Extract  0.4s" in drawn
