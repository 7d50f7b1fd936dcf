"""The master loop closes a stage and its phase in the step that finishes their last task."""

from __future__ import annotations

import os

from multiverse.config import load_runtime_mapping
from multiverse.home import Home
from multiverse.models import PHASE0_ID, Status
from multiverse.team import build_crew
from orchestrator.crew import Crew
from orchestrator.runner import StepRunner
from orchestrator.steps import StepKind

from journey import copy_assets
from stepping import confirmed_run, steps_until_settled


def _crew(home: Home) -> Crew:
    return build_crew(home, load_runtime_mapping(home.root), os.environ, console=lambda t: None)


def test_stages_and_phases_close_without_steps_of_their_own(home: Home) -> None:
    """A whole run takes no COMPLETE_STAGE or COMPLETE_PHASE step, yet every row ends COMPLETED."""
    copy_assets(home, "market_report_2024.md")
    crew = _crew(home)
    run_id, runner = confirmed_run(crew)
    kinds = steps_until_settled(runner, run_id)
    assert StepKind.COMPLETE_RUN in kinds
    assert StepKind.COMPLETE_STAGE not in kinds and StepKind.COMPLETE_PHASE not in kinds
    tables = crew.run(run_id)
    assert {s.status for s in tables.stages.rows()} == {Status.COMPLETED}
    assert {p.status for p in tables.phases.rows()} == {Status.COMPLETED}
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED


def test_a_stage_left_open_by_a_crash_is_closed_by_its_own_step(home: Home) -> None:
    """Tasks written COMPLETED but the stage and phase not (the process died between the writes)."""
    copy_assets(home, "market_report_2024.md")
    crew = _crew(home)
    run_id, runner = confirmed_run(crew)
    tables = crew.run(run_id)
    for _ in range(100):
        runner.advance(run_id)
        phase = next((p for p in tables.phases.rows() if p.phase_id != PHASE0_ID), None)
        if phase is not None and phase.status is Status.COMPLETED:
            break
    else:
        raise AssertionError("the first phase never completed")
    # Undo what the finishing step closed, as if it had died right after the task's write.
    stages = [s for s in tables.stages.rows() if s.phase_id == phase.phase_id]
    tables.stages.update(stages[-1].stage_id, status=Status.PENDING)
    tables.phases.update(phase.phase_id, status=Status.PENDING)
    crew.flush_behind()  # only the closing writes are lost here (catalog repair is tested apart)

    reborn = _crew(home)
    runner = StepRunner(reborn)
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is StepKind.COMPLETE_STAGE
    assert decided[1].stage_id == stages[-1].stage_id
    runner.perform(*decided)
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is StepKind.COMPLETE_PHASE
    runner.perform(*decided)
    steps_until_settled(runner, run_id)
    run = reborn.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED
