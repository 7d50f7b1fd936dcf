"""The builtin Phase 0 plan (SPEC §6): set up, amend instructions, catalog, first analysis."""

from __future__ import annotations

from pathlib import Path

from multiverse.contracts import PlanContext, TasksPlan
from multiverse.models import PHASE0_STAGE, Task
from planner.builtin.sources import folder_files
from planner.validation import PHASE0_TASK_IDS, phase0_outputs, request_path

_NAMES = {
    "T00": (
        "Set up the run",
        "Create the run's db/ and workspace/ folders (one per phase) and its outputs/ folder.",
    ),
    "T02": (
        "Amend the central instructions",
        "Write the confirmed instructions to db/user_instructions.md as ACTIVE rows and mark "
        "the ones they replace SUPERSEDED.",
    ),
    "T03": (
        "Build the knowledge catalog",
        "Scan assets/ and guidelines/ into db/knowledge_base_catalog.md with a summary of each "
        "new or changed file.",
    ),
    "T04": (
        "First analysis",
        "Read the request and every source file and write a first analysis: what each source "
        "holds (headings, figures, key sentences) and what the request needs from it.",
    ),
}


def plan_phase0(context: PlanContext) -> TasksPlan:
    """Tasks T00, T02, T03, T04 of stage P0-S01; T04 also reads every file in assets/."""
    request = request_path(context.run_id)
    assets = folder_files(Path(context.home), "assets")
    outputs = phase0_outputs(context.run_id)
    tasks = []
    for order, task_id in enumerate(PHASE0_TASK_IDS, start=1):
        name, purpose = _NAMES[task_id]
        tasks.append(
            Task(
                task_id=task_id,
                run_id=context.run_id,
                stage_id=PHASE0_STAGE,
                task_name=name,
                task_purpose=purpose,
                related_references=[request, *assets] if task_id == "T04" else [request],
                output_path=outputs[task_id],
                execution_order=order,
            )
        )
    return TasksPlan(tasks=tasks)
