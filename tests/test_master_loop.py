"""The master loop closes a stage and its phase in the step that finishes their last task.

A crash between those writes leaves finished stages open; steps of their own close them.
"""

from __future__ import annotations

from multiverse.home import Home
from multiverse.models import PHASE0_ID, MajorStage, Phase, Status
from multiverse.store import MAJOR_STAGES, PHASES, TableStore
from orchestrator.crew import Collaborators
from orchestrator.decide import StepKind
from orchestrator.perform import StepRunner

from journey import copy_assets
from stepping import builtin_collaborators, confirmed_run, steps_until_settled


def _until_first_phase_closes(crew: Collaborators, runner: StepRunner, run_id: str) -> str:
    """Advance until the first master-loop phase is COMPLETED on disk; returns its id."""
    for _ in range(200):
        runner.advance(run_id)
        closed = [
            p.phase_id
            for p in crew.run(run_id).phases.rows()
            if p.phase_id != PHASE0_ID and p.status is Status.COMPLETED
        ]
        if closed:
            return closed[0]
    raise AssertionError("the first phase never closed")


def test_stages_and_phases_close_without_steps_of_their_own(home: Home) -> None:
    """A whole run takes no COMPLETE_STAGE or COMPLETE_PHASE step, yet every row ends COMPLETED."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    kinds = steps_until_settled(runner, run_id)
    assert StepKind.COMPLETE_RUN in kinds
    assert StepKind.COMPLETE_STAGE not in kinds and StepKind.COMPLETE_PHASE not in kinds
    tables = crew.run(run_id)
    assert {s.status for s in tables.stages.rows()} == {Status.COMPLETED}
    assert {p.status for p in tables.phases.rows()} == {Status.COMPLETED}
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED


def test_the_closing_step_writes_the_closes_and_the_next_decision_moves_on(home: Home) -> None:
    """The step that finishes a phase's last task leaves its stages and the phase COMPLETED."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    phase_id = _until_first_phase_closes(crew, runner, run_id)
    fresh = TableStore()  # what another process reads: the files themselves
    paths = crew.home.run(run_id)
    phase = fresh.table(PHASES, paths.db / PHASES.filename).get(phase_id)
    assert phase is not None and phase.status is Status.COMPLETED
    stages = fresh.table(MAJOR_STAGES, paths.db / MAJOR_STAGES.filename).rows()
    assert {s.status for s in stages if s.phase_id == phase_id} == {Status.COMPLETED}
    decided = runner.decide(run_id)
    assert decided is not None
    assert decided[1].kind is StepKind.PLAN_STAGES and decided[1].phase_id != phase_id


def test_closes_lost_in_a_crash_are_made_by_steps_of_their_own(home: Home) -> None:
    """A new process finds the finished stages open, closes them and the phase, and goes on."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    phase_id = _until_first_phase_closes(crew, runner, run_id)
    # The files as a crash right after the last task's write leaves them: closes not written.
    paths = crew.home.run(run_id)
    other = TableStore()
    stages_table = other.table(MAJOR_STAGES, paths.db / MAJOR_STAGES.filename)
    stages = [s.stage_id for s in stages_table.rows() if s.phase_id == phase_id]

    def reopen_stages(rows: list[MajorStage]) -> list[MajorStage]:
        return [
            r.model_copy(update={"status": Status.PENDING}) if r.stage_id in stages else r
            for r in rows
        ]

    def reopen_phase(rows: list[Phase]) -> list[Phase]:
        return [
            r.model_copy(update={"status": Status.PENDING}) if r.phase_id == phase_id else r
            for r in rows
        ]

    other.modify(MAJOR_STAGES, stages_table.path, reopen_stages)
    other.modify(PHASES, paths.db / PHASES.filename, reopen_phase)

    reborn = builtin_collaborators(home)
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
