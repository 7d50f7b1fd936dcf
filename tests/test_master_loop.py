"""The master loop closes a stage and its phase in the step that finishes their last task.

The closes are written behind (orchestrator/closing.py); a crash that loses them is repaired.
"""

from __future__ import annotations

from multiverse.home import Home
from multiverse.models import PHASE0_ID, Status
from orchestrator.closing import Level
from orchestrator.crew import Crew
from orchestrator.runner import StepRunner
from orchestrator.steps import StepKind

from journey import copy_assets
from stepping import builtin_crew, confirmed_run, steps_until_settled


def _until_first_phase_closes(crew: Crew, runner: StepRunner, run_id: str) -> str:
    """Advance until the first master-loop phase is closed (queued); returns its id."""
    for _ in range(200):
        runner.advance(run_id)
        closed = [key for key in crew.closes.behind.pending() if key[1] is Level.PHASE]
        if closed:
            return closed[0][2]
    raise AssertionError("the first phase never closed")


def test_stages_and_phases_close_without_steps_of_their_own(home: Home) -> None:
    """A whole run takes no COMPLETE_STAGE or COMPLETE_PHASE step, yet every row ends COMPLETED."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_crew(home, held=True)
    run_id, runner = confirmed_run(crew)
    kinds = steps_until_settled(runner, run_id)
    assert StepKind.COMPLETE_RUN in kinds
    assert StepKind.COMPLETE_STAGE not in kinds and StepKind.COMPLETE_PHASE not in kinds
    tables = crew.run(run_id)
    assert {s.status for s in tables.stages.rows()} == {Status.COMPLETED}
    assert {p.status for p in tables.phases.rows()} == {Status.COMPLETED}
    assert crew.closes.behind.pending() == {}
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED


def test_closes_are_written_behind_and_decisions_see_them_at_once(home: Home) -> None:
    """The file says PENDING until the flush; the next decision already works on the next phase."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_crew(home, held=True)
    run_id, runner = confirmed_run(crew)
    phase_id = _until_first_phase_closes(crew, runner, run_id)
    tables = crew.run(run_id)
    on_disk = {p.phase_id: p.status for p in tables.phases.rows()}
    assert on_disk[phase_id] is Status.PENDING
    decided = runner.decide(run_id)
    assert decided is not None
    assert decided[1].kind is StepKind.PLAN_STAGES and decided[1].phase_id != phase_id

    crew.closes.flush()
    phase = tables.phases.get(phase_id)
    assert phase is not None and phase.status is Status.COMPLETED
    stages = [s for s in tables.stages.rows() if s.phase_id == phase_id]
    assert stages and {s.status for s in stages} == {Status.COMPLETED}


def test_closes_lost_in_a_crash_are_made_by_steps_of_their_own(home: Home) -> None:
    """A new process finds the finished stages open, closes them and the phase, and goes on."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_crew(home, held=True)
    run_id, runner = confirmed_run(crew)
    phase_id = _until_first_phase_closes(crew, runner, run_id)
    crew.pending_catalog.flush()  # only the closes are lost here (catalog repair is tested apart)
    stages = [s.stage_id for s in crew.run(run_id).stages.rows() if s.phase_id == phase_id]

    # The process dies with its closes queued. A new one starts.
    reborn = builtin_crew(home)
    runner = StepRunner(reborn)
    repairs = []
    for _ in range(len(stages) + 1):
        decided = runner.decide(run_id)
        assert decided is not None
        repairs.append((decided[1].kind, decided[1].stage_id or decided[1].phase_id))
        runner.perform(*decided)
    assert repairs == [(StepKind.COMPLETE_STAGE, stage) for stage in stages] + [
        (StepKind.COMPLETE_PHASE, phase_id)
    ]
    steps_until_settled(runner, run_id)
    run = reborn.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED
    assert {p.status for p in reborn.run(run_id).phases.rows() if p.phase_id != PHASE0_ID} == {
        Status.COMPLETED
    }
