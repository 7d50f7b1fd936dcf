"""A Planner that plans a phase's stages with their tasks in one answer: the Orchestrator
records both, asks no task plan for a stage that has its tasks, asks one for a stage left
without, and refuses a task that belongs to no planned stage."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.commands import answer_run, drop_request
from app.team import build_collaborators
from multiverse.config import DaemonConfig, OnceGate, load_runtime_mapping
from multiverse.home import Home
from multiverse.models import Status
from multiverse.roles import PlanContext, StagesPlan, TasksPlan
from multiverse.store import MAJOR_STAGES, PROCESS_RUNS, TASKS, TableStore
from orchestrator.daemon import Daemon
from planner.builtin import BuiltinPlanner

from journey import copy_assets


class PhasePlanner(BuiltinPlanner):
    """The builtin plans, each phase's stages returned with the tasks of all but its last
    stage (as if a stop had come before the rest); `stray` adds a task of no planned stage."""

    def __init__(self, home: Path, stray: bool = False) -> None:
        super().__init__(home)
        self.stray = stray
        self.asked: list[str] = []

    def plan_stages(self, context: PlanContext) -> StagesPlan:
        plan = super().plan_stages(context)
        staged = context.model_copy(update={"stages": [*context.stages, *plan.stages]})
        tasks = []
        for stage in plan.stages[:-1]:
            here = staged.model_copy(update={"stage": stage, "tasks": [*context.tasks, *tasks]})
            tasks += super().plan_tasks(here).tasks
        if self.stray and tasks:
            stray = {"stage_id": "P9-S01", "task_id": "P9-S01-T01"}
            tasks.append(tasks[0].model_copy(update=stray))
        return plan.model_copy(update={"tasks": tasks})

    def plan_tasks(self, context: PlanContext) -> TasksPlan:
        assert context.stage is not None
        self.asked.append(context.stage.stage_id)
        return super().plan_tasks(context)


def run_through(home: Home, planner: PhasePlanner) -> Any:
    """Submit, confirm and serve one offline run with `planner`; its process_runs row."""
    crew = build_collaborators(home, load_runtime_mapping(home.root), os.environ,
                               lambda said: None, lambda said: None, OnceGate())  # fmt: skip
    crew.planner = planner
    daemon = Daemon(crew, DaemonConfig(inbox_settle_ms=0))
    drop_request(home, "Write a memo on the e-bike market from the report.", None)
    daemon.run(once=True)
    (row,) = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    answer_run(str(home.root), row.run_id, "CONFIRM")
    daemon.run(once=True)
    (row,) = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    return row


def test_tasks_planned_with_their_stages_are_not_planned_again(home: Home) -> None:
    """Every stage with tasks from the phase's answer runs them; only the stages left
    without any are asked for a task plan; the run completes."""
    copy_assets(home, "market_report_2024.md")
    planner = PhasePlanner(home.root)
    row = run_through(home, planner)
    assert row.status is Status.COMPLETED
    db = home.run(row.run_id).db
    stages = TableStore().table(MAJOR_STAGES, db / MAJOR_STAGES.filename).rows()
    tasks = TableStore().table(TASKS, db / TASKS.filename).rows()
    last = {}
    for stage in stages:
        last[stage.phase_id] = max(last.get(stage.phase_id, 0), stage.execution_order)
    unplanned = [s.stage_id for s in stages if s.execution_order == last[s.phase_id]
                 and s.phase_id != "P0"]  # fmt: skip
    assert sorted(planner.asked) == sorted(unplanned)
    assert len(stages) > len(unplanned)  # some stage's tasks came with the phase's answer
    assert all(task.status is Status.COMPLETED for task in tasks)


def test_a_task_of_no_planned_stage_fails_the_plan(home: Home) -> None:
    """A phase answer carrying a task of a stage it did not plan is an invalid plan: the run
    fails saying so, and none of the answer's tasks is recorded."""
    copy_assets(home, "market_report_2024.md")
    row = run_through(home, PhasePlanner(home.root, stray=True))
    assert row.status is Status.FAILED
    tasks = TableStore().table(TASKS, home.run(row.run_id).db / TASKS.filename).rows()
    assert not [task for task in tasks if task.task_id.startswith("P9")]
    said = home.run(row.run_id).messages.read_text(encoding="utf-8")
    assert "P9-S01-T01" in said
