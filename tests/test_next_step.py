"""The Orchestrator's pure decision: from a run's tables and evidence to its next step."""

from __future__ import annotations

from dataclasses import replace

from multiverse.agent_package import KNOWN_ROUTES, POST_TOOLS
from multiverse.models import (
    AssetType,
    MajorStage,
    Phase,
    ProcessRun,
    Status,
    Task,
    Timing,
    ToolTask,
)
from multiverse.roles import ProducedFile, ResultSignal
from orchestrator.decide import (
    POST_TOOLS_NOT_HANDED_OFF,
    Decision,
    DecisionKind,
    HoldRecord,
    RunView,
    StepKind,
    next_step,
)

RUN = "run-20261121-101500-001"
DONE = Status.COMPLETED


def _run(status: Status = Status.PENDING) -> ProcessRun:
    return ProcessRun(run_id=RUN, user_request="write a memo", status=status)


def _task(
    task_id: str,
    stage: str,
    order: int,
    status: Status = Status.PENDING,
    pre: str = "",
    post: str = "",
) -> Task:
    return Task(
        task_id=task_id,
        run_id=RUN,
        stage_id=stage,
        task_name=task_id,
        related_references=[f"runs/{RUN}/request.md"],
        output_path="x.md",
        pre_tool_purpose=pre,
        post_tool_purpose=post,
        execution_order=order,
        status=status,
    )


def _phase0(status: Status = DONE) -> list[Task]:
    return [_task(t, "P0-S01", n, status) for n, t in enumerate(("T00", "T02", "T03", "T04"), 1)]


def _phases(*pending: str) -> list[Phase]:
    names = {
        "P1": "ANALYZING",
        "P2": "STRATEGIZING",
        "P3": "REFINING_CONTENT",
        "P4": "GENERATING_OUTPUT",
    }
    rows = [Phase(phase_id="P0", run_id=RUN, phase_name="INSTRUCTION_AMENDMENT", status=DONE)]
    rows += [
        Phase(phase_id=p, run_id=RUN, phase_name=n, status=Status.PENDING if p in pending else DONE)
        for p, n in names.items()
    ]
    return rows


def _stage(stage_id: str, order: int, status: Status = Status.PENDING) -> MajorStage:
    return MajorStage(
        stage_id=stage_id,
        run_id=RUN,
        phase_id=stage_id[:2],
        stage_name=stage_id,
        execution_order=order,
        status=status,
    )


def _view(**fields: object) -> RunView:
    base: dict[str, object] = {"run": _run(), "evidence": frozenset({"confirmed"})}
    base.update(fields)
    return RunView(**base)  # type: ignore[arg-type]


def test_a_new_run_plans_phase0_then_sets_up() -> None:
    """A run with no tasks plans Phase 0; with T00 pending it sets up its folders."""
    assert next_step(_view(evidence=frozenset())).kind is StepKind.PLAN_PHASE0
    assert next_step(_view(tasks=_phase0(Status.PENDING))).kind is StepKind.SET_UP_RUN


def test_the_amendment_proposes_asks_and_waits() -> None:
    """After set-up: propose revision 1, ask, then wait for the user's answer."""
    tasks = [
        _phase0()[0],
        *(_task(t, "P0-S01", n) for n, t in ((2, "T02"), (3, "T03"), (4, "T04"))),
    ]
    proposing = next_step(_view(tasks=tasks, evidence=frozenset()))
    assert (proposing.kind, proposing.revision) == (StepKind.PROPOSE, 1)
    asking = next_step(_view(tasks=tasks, evidence=frozenset({"proposal-1"})))
    assert (asking.kind, asking.revision) == (StepKind.ASK, 1)
    waiting = next_step(
        _view(
            run=_run(Status.AWAITING_CONFIRMATION),
            tasks=tasks,
            evidence=frozenset({"proposal-1", "asked-1"}),
        )
    )
    assert waiting.kind is StepKind.WAIT


def test_an_answer_is_handled_and_modify_asks_for_a_new_revision() -> None:
    """An answer is handled; a recorded MODIFY leads to proposal revision 2."""
    tasks = [_phase0()[0], _task("T02", "P0-S01", 2)]
    answer = Decision(kind=DecisionKind.MODIFY, text="add a chart")
    handling = next_step(
        _view(
            run=_run(Status.AWAITING_CONFIRMATION),
            tasks=tasks,
            evidence=frozenset({"proposal-1"}),
            response=answer,
        )
    )
    assert handling.kind is StepKind.HANDLE_RESPONSE and handling.decision == answer
    revising = next_step(_view(tasks=tasks, evidence=frozenset({"proposal-1", "modify-2"})))
    assert (revising.kind, revising.revision) == (StepKind.PROPOSE, 2)


def test_confirmed_phase0_runs_t02_t03_t04_then_completes() -> None:
    """Once confirmed, T02, T03 and T04 run in order, then Phase 0 completes."""
    tasks = _phase0(Status.PENDING)
    tasks[0] = _phase0()[0]
    assert next_step(_view(tasks=tasks)).kind is StepKind.WRITE_INSTRUCTIONS
    tasks[1] = _phase0()[1]
    assert next_step(_view(tasks=tasks)).kind is StepKind.BUILD_CATALOG
    tasks[2] = _phase0()[2]
    assert next_step(_view(tasks=tasks)).kind is StepKind.FIRST_ANALYSIS
    assert next_step(_view(tasks=_phase0())).kind is StepKind.COMPLETE_PHASE0


def test_the_master_loop_plans_stages_then_tasks() -> None:
    """The first pending phase gets stages planned, then its first stage gets tasks."""
    step = next_step(_view(tasks=_phase0(), phases=_phases("P1", "P2", "P3", "P4")))
    assert (step.kind, step.phase_id) == (StepKind.PLAN_STAGES, "P1")
    stages = [_stage("P1-S02", 2), _stage("P1-S01", 1)]
    step = next_step(_view(tasks=_phase0(), phases=_phases("P1"), stages=stages))
    assert (step.kind, step.stage_id) == (StepKind.PLAN_TASKS, "P1-S01")


def test_a_task_runs_pre_tools_core_post_tools_then_completes() -> None:
    """PRE tools are planned and run, then the core, then POST tools, then completion."""
    stages = [_stage("P1-S01", 1)]
    task = _task("P1-S01-T01", "P1-S01", 1, pre="search the web", post="chart it")
    base = {"tasks": [*_phase0(), task], "phases": _phases("P1"), "stages": stages}
    assert next_step(_view(**base)).kind is StepKind.PLAN_TOOLS
    pre = ToolTask(
        tool_task_id="P1-S01-T01-PRE-01",
        run_id=RUN,
        parent_task_id="P1-S01-T01",
        timing=Timing.PRE,
        tool_type="web_search",
        tool_task_name="s",
        execution_order=1,
    )
    step = next_step(_view(**base, tool_tasks=[pre]))
    assert (step.kind, step.tool_task_id) == (StepKind.EXECUTE_TOOL_TASK, "P1-S01-T01-PRE-01")
    done_pre = pre.model_copy(update={"status": DONE})
    assert next_step(_view(**base, tool_tasks=[done_pre])).kind is StepKind.EXECUTE_TASK
    signal = ResultSignal(
        status="COMPLETED",
        post_tool_required=True,
        outputs=[ProducedFile(path="a.md", asset_type=AssetType.ANALYSIS_REPORT, summary="s")],
    )
    step = next_step(_view(**base, tool_tasks=[done_pre], signals={"P1-S01-T01": signal}))
    assert (step.kind, step.timing) == (StepKind.PLAN_TOOLS, Timing.POST)
    post = ToolTask(
        tool_task_id="P1-S01-T01-POST-01",
        run_id=RUN,
        parent_task_id="P1-S01-T01",
        timing=Timing.POST,
        tool_type="data_visualization",
        tool_task_name="c",
        execution_order=1,
        status=DONE,
    )
    step = next_step(_view(**base, tool_tasks=[done_pre, post], signals={"P1-S01-T01": signal}))
    assert step.kind is StepKind.COMPLETE_TASK


def test_post_tools_follow_the_executors_card() -> None:
    """A result asking for POST tools plans them only while the Executor's card hands them to
    the Planner; without that route the task completes, saying why."""
    stages = [_stage("P1-S01", 1)]
    task = _task("P1-S01-T01", "P1-S01", 1, post="chart it")
    signal = ResultSignal(status="COMPLETED", post_tool_required=True)
    base = {"tasks": [*_phase0(), task], "phases": _phases("P1"), "stages": stages,
            "signals": {"P1-S01-T01": signal}}  # fmt: skip
    assert next_step(_view(**base)).kind is StepKind.PLAN_TOOLS
    step = next_step(_view(**base, routes=KNOWN_ROUTES - {POST_TOOLS}))
    assert (step.kind, step.reason) == (StepKind.COMPLETE_TASK, POST_TOOLS_NOT_HANDED_OFF)


def test_completion_climbs_stage_phase_run() -> None:
    """Finished tasks complete their stage, finished stages their phase, then the run."""
    stages = [_stage("P1-S01", 1)]
    tasks = [*_phase0(), _task("P1-S01-T01", "P1-S01", 1, DONE)]
    step = next_step(_view(tasks=tasks, phases=_phases("P1"), stages=stages))
    assert step.kind is StepKind.COMPLETE_STAGE
    step = next_step(_view(tasks=tasks, phases=_phases("P1"), stages=[_stage("P1-S01", 1, DONE)]))
    assert step.kind is StepKind.COMPLETE_PHASE
    assert next_step(_view(tasks=_phase0(), phases=_phases())).kind is StepKind.COMPLETE_RUN


def test_any_failure_fails_the_run_and_a_final_run_is_idle() -> None:
    """A FAILED row or an unreadable table fails the run; a final run has nothing to do."""
    tasks = [*_phase0(), _task("P1-S01-T01", "P1-S01", 1, Status.FAILED)]
    assert next_step(_view(tasks=tasks)).kind is StepKind.FAIL_RUN
    assert next_step(_view(load_error="tasks.md:7: broken")).kind is StepKind.FAIL_RUN
    for status in (Status.COMPLETED, Status.FAILED, Status.CANCELLED):
        assert next_step(_view(run=_run(status))).kind is StepKind.IDLE


def test_a_failed_run_waits_for_a_retry_and_reopens_once() -> None:
    """FAILED: an answer is handled; `retry-N` reopens until the failure is history (SPEC §8)."""
    failed = _run(Status.FAILED)
    retry = Decision(kind=DecisionKind.RETRY)
    step = next_step(RunView(run=failed, response=retry, evidence=frozenset({"failure"})))
    assert (step.kind, step.revision) == (StepKind.HANDLE_RETRY, 1)
    asked = frozenset({"failure", "retry-1"})
    step = next_step(RunView(run=failed, evidence=asked))
    assert (step.kind, step.revision) == (StepKind.REOPEN, 1)
    # Half-way through the reopening (the failure moved aside): go on reopening.
    moved = RunView(run=failed, evidence=frozenset({"retry-1"}), history=frozenset({"failure-1"}))
    assert next_step(moved).kind is StepKind.REOPEN
    # Failed again after the retry: final until the next RETRY.
    again = RunView(run=failed, evidence=asked, history=frozenset({"failure-1"}))
    assert next_step(again).kind is StepKind.IDLE
    step = next_step(
        RunView(run=failed, evidence=asked, history=frozenset({"failure-1"}), response=retry)
    )
    assert (step.kind, step.revision) == (StepKind.HANDLE_RETRY, 2)


def _planned(**fields: object) -> RunView:
    """Phase 0 done, stage P1-S01 planned with two untouched tasks; `fields` override."""
    tasks = [*_phase0(), _task("P1-S01-T01", "P1-S01", 1), _task("P1-S01-T02", "P1-S01", 2)]
    base: dict[str, object] = {"tasks": tasks, "phases": _phases("P1"),
                               "stages": [_stage("P1-S01", 1)]}  # fmt: skip
    base.update(fields)
    return _view(**base)


TASKS_HOLD = HoldRecord(reason="plan:tasks:P1-S01", table=f"runs/{RUN}/db/tasks.md")


def test_a_written_plan_holds_only_where_pause_before_says() -> None:
    """pause_before: tasks holds after a task plan; stages after a stage plan; none runs on."""
    assert next_step(_planned()).kind is StepKind.EXECUTE_TASK
    step = next_step(_planned(pause_before=frozenset({"tasks"})))
    assert (step.kind, step.stage_id, step.reason) == (
        StepKind.HOLD, "P1-S01", "plan:tasks:P1-S01"
    )  # fmt: skip
    stages_only = next_step(_planned(pause_before=frozenset({"stages"})))
    assert stages_only.kind is StepKind.EXECUTE_TASK  # its tasks exist: past the stage plan
    unplanned = _view(tasks=_phase0(), phases=_phases("P1"), stages=[_stage("P1-S01", 1)])
    step = next_step(replace(unplanned, pause_before=frozenset({"stages"})))
    assert (step.kind, step.phase_id, step.reason) == (StepKind.HOLD, "P1", "plan:stages:P1")


def test_a_plan_whose_work_began_does_not_hold() -> None:
    """Only an untouched plan holds: a finished task or a result already there means no hold."""
    pause = frozenset({"tasks"})
    tasks = [*_phase0(), _task("P1-S01-T01", "P1-S01", 1, DONE), _task("P1-S01-T02", "P1-S01", 2)]
    assert next_step(_planned(tasks=tasks, pause_before=pause)).kind is StepKind.EXECUTE_TASK
    evidence = frozenset({"confirmed", "P1-S01-T01"})
    step = next_step(_planned(evidence=evidence, pause_before=pause))
    assert step.kind is not StepKind.HOLD


def test_a_held_run_waits_for_resume_and_takes_cancel() -> None:
    """Held: WAIT with no answer, ANSWER_HOLD for RESUME (or a refused word), CANCEL cancels."""
    held = {"run": _run(Status.AWAITING_CONFIRMATION), "holds": (TASKS_HOLD,),
            "evidence": frozenset({"confirmed", "hold-plan-tasks-P1-S01"})}  # fmt: skip
    waiting = next_step(_planned(**held))
    assert waiting.kind is StepKind.WAIT and "task plan of stage P1-S01" in waiting.reason
    for kind, expected in (
        (DecisionKind.RESUME, StepKind.ANSWER_HOLD),
        (DecisionKind.CONFIRM, StepKind.ANSWER_HOLD),  # refused by the step, with the reason
    ):
        step = next_step(_planned(**held, response=Decision(kind=kind)))
        assert (step.kind, step.decision) == (expected, Decision(kind=kind))
    cancelled = next_step(_planned(**held, response=Decision(kind=DecisionKind.CANCEL)))
    assert cancelled.kind is StepKind.CANCEL


def test_a_released_plan_runs_and_never_holds_again() -> None:
    """With its release recorded, the plan runs, though pause_before still names its level."""
    evidence = frozenset({"confirmed", "hold-plan-tasks-P1-S01", "release-plan-tasks-P1-S01"})
    step = next_step(_planned(evidence=evidence, pause_before=frozenset({"tasks"})))
    assert step.kind is StepKind.EXECUTE_TASK


def test_an_open_hold_is_restored_and_a_broken_off_release_finished() -> None:
    """A hold whose row says PENDING is held again; a released run still waiting goes on."""
    evidence = frozenset({"confirmed", "hold-plan-tasks-P1-S01"})
    step = next_step(_planned(evidence=evidence, holds=(TASKS_HOLD,)))  # pause_before gone
    assert (step.kind, step.reason) == (StepKind.HOLD, "plan:tasks:P1-S01")
    released = evidence | {"release-plan-tasks-P1-S01"}
    finishing = next_step(_planned(run=_run(Status.AWAITING_CONFIRMATION), evidence=released))
    assert (finishing.kind, finishing.decision) == (StepKind.ANSWER_HOLD, None)
    confirm = Decision(kind=DecisionKind.CONFIRM)  # a confirmation a crash left unhandled
    redo = next_step(_planned(run=_run(Status.AWAITING_CONFIRMATION), response=confirm))
    assert redo.kind is StepKind.HANDLE_RESPONSE


def test_resume_is_no_answer_to_a_proposal() -> None:
    """RESUME written while the proposal waits is refused like any word that is not an answer."""
    step = next_step(
        _view(
            run=_run(Status.AWAITING_CONFIRMATION),
            tasks=[_phase0()[0], _task("T02", "P0-S01", 2)],
            evidence=frozenset({"proposal-1", "asked-1"}),
            response=Decision(kind=DecisionKind.RESUME),
        )
    )
    assert (step.kind, step.decision) == (
        StepKind.HANDLE_RESPONSE, Decision(kind=DecisionKind.INVALID, text="RESUME")
    )  # fmt: skip


def test_cancel_is_taken_at_any_time_and_a_begun_cancel_is_finished() -> None:
    """CANCEL ends a run wherever it is (proposal, mid-phase, approval, held); a `cancelled`
    record finishes it after a crash without the answer; a final run stays idle."""
    cancel = Decision(kind=DecisionKind.CANCEL)
    asking = [_phase0()[0], _task("T02", "P0-S01", 2)]
    for view in (
        _view(run=_run(Status.AWAITING_CONFIRMATION), tasks=asking,
              evidence=frozenset({"proposal-1", "asked-1"}), response=cancel),
        _planned(response=cancel),  # confirmed, a task next
        _planned(tasks=[*_phase0(), _task("P1-S01-T01", "P1-S01", 1, Status.FAILED)],
                 response=cancel),  # cancelled rather than failed
    ):  # fmt: skip
        assert next_step(view).kind is StepKind.CANCEL
    begun = _planned(evidence=frozenset({"confirmed", "cancelled"}))
    assert next_step(begun).kind is StepKind.CANCEL
    for status in (Status.COMPLETED, Status.CANCELLED):
        final = _planned(run=_run(status), response=cancel, evidence=frozenset({"cancelled"}))
        assert next_step(final).kind is StepKind.IDLE


def test_pause_holds_a_confirmed_run_before_its_next_step() -> None:
    """PAUSE holds with the next user reason (each pause its own record); an open pause
    whose row says PENDING is held again; PAUSE is no answer to a proposal."""
    pause = Decision(kind=DecisionKind.PAUSE)
    step = next_step(_planned(response=pause))
    assert (step.kind, step.reason) == (StepKind.HOLD, "user:1")
    again = _planned(response=pause, evidence=frozenset(
        {"confirmed", "hold-user-1", "release-user-1"}))  # fmt: skip
    assert next_step(again).reason == "user:2"
    record = HoldRecord(reason="user:1")
    restored = next_step(_planned(evidence=frozenset({"confirmed", "hold-user-1"}),
                                  holds=(record,)))  # fmt: skip
    assert (restored.kind, restored.reason) == (StepKind.HOLD, "user:1")
    held = _planned(run=_run(Status.AWAITING_CONFIRMATION), holds=(record,),
                    evidence=frozenset({"confirmed", "hold-user-1"}))  # fmt: skip
    waiting = next_step(held)
    assert waiting.kind is StepKind.WAIT and "pause you asked for" in waiting.reason
    asking = [_phase0()[0], _task("T02", "P0-S01", 2)]
    proposal = _view(run=_run(Status.AWAITING_CONFIRMATION), tasks=asking,
                     evidence=frozenset({"proposal-1", "asked-1"}), response=pause)  # fmt: skip
    refused = next_step(proposal)
    assert refused.kind is StepKind.HANDLE_RESPONSE
    assert refused.decision == Decision(kind=DecisionKind.INVALID, text="PAUSE")
