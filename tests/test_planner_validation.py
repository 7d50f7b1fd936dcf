"""Tests of plan validation (planner.validation): each defect is caught with a helpful message."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_planner_support import RUN_ID, context, make_home, write_request

from multiverse.models import InstructionStatus, MajorStage, Status, Timing, UserInstruction
from multiverse.roles import (
    PlanContext,
    Proposal,
    ProposedInstruction,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from planner.builtin import BuiltinPlanner
from planner.validation import (
    validate_phase0,
    validate_proposal,
    validate_stages,
    validate_tasks,
    validate_tool_tasks,
)

REQUEST = "Write a market-entry memo with a chart of the revenue figures"
FOLDER = f"runs/{RUN_ID}/workspace/ANALYZING"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with assets, a style guide and the run's request."""
    make_home(tmp_path)
    write_request(tmp_path, REQUEST)
    return tmp_path


def stage(stage_id: str, order: int = 1) -> MajorStage:
    """A PENDING stage of RUN_ID."""
    return MajorStage(
        stage_id=stage_id,
        run_id=RUN_ID,
        phase_id=stage_id[:2],
        stage_name="s",
        stage_goal="g",
        execution_order=order,
    )


def stage_context(home: Path, stage_id: str = "P1-S01") -> PlanContext:
    """The context of a task plan for a stage, with all template stages of its phase."""
    base = context(home, REQUEST)
    phase = next(p for p in base.phases if p.phase_id == stage_id[:2])
    stages = BuiltinPlanner().plan_stages(base.model_copy(update={"phase": phase})).stages
    current = next(s for s in stages if s.stage_id == stage_id)
    return base.model_copy(update={"phase": phase, "stages": stages, "stage": current})


def task_plan(home: Path, stage_id: str = "P1-S01") -> tuple[TasksPlan, PlanContext]:
    """A valid builtin task plan and its context."""
    ctx = stage_context(home, stage_id)
    return BuiltinPlanner().plan_tasks(ctx), ctx


def edit(plan: TasksPlan, index: int, **changes: object) -> TasksPlan:
    """The plan with one task changed (bypassing the row model's own checks)."""
    tasks = list(plan.tasks)
    tasks[index] = tasks[index].model_copy(update=changes)
    return plan.model_copy(update={"tasks": tasks})


def one_error(errors: list[str], *fragments: str) -> None:
    """Exactly one error, containing every fragment."""
    assert len(errors) == 1, errors
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def test_builtin_task_plan_is_valid(home: Path) -> None:
    """The reference plan used below passes validation."""
    plan, ctx = task_plan(home)
    assert validate_tasks(plan, ctx) == []


def test_invented_reference(home: Path) -> None:
    """A reference to a file that is neither catalogued nor on disk is refused, with examples."""
    plan, ctx = task_plan(home)
    errors = validate_tasks(edit(plan, 0, related_references=["assets/q9.md"]), ctx)
    one_error(errors, "P1-S01-T01", "'assets/q9.md'", "no such file", "known files: assets/")


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("../../etc/passwd", "must stay inside the home"),
        ("/etc/passwd", "absolute paths are refused"),
        ("C:/secrets.txt", "absolute paths are refused"),
        ("assets\\q1.md", "forward slashes"),
        (".multiverse/cache.json", "hidden files"),
        ("assets/./q1.md", "must stay inside the home"),
        ("assets/q1.md\x00", "control characters"),
    ],
)
def test_references_that_leave_the_home(home: Path, reference: str, problem: str) -> None:
    """Absolute, climbing, hidden and backslash paths are refused as references."""
    plan, ctx = task_plan(home)
    errors = validate_tasks(edit(plan, 0, related_references=[reference]), ctx)
    one_error(errors, repr(reference), problem)


def test_symlink_out_of_the_home(home: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A symlink to a file outside the home is refused as a reference and never planned."""
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("secret", "utf-8")
    (home / "assets/link.md").symlink_to(outside)
    plan, ctx = task_plan(home)
    assert all("assets/link.md" not in task.related_references for task in plan.tasks)
    errors = validate_tasks(edit(plan, 0, related_references=["assets/link.md"]), ctx)
    one_error(errors, "resolves outside the home")


def test_task_without_reference(home: Path) -> None:
    """A task with no reference is invalid."""
    plan, ctx = task_plan(home)
    one_error(
        validate_tasks(edit(plan, 0, related_references=[]), ctx), "related_references is empty"
    )


def test_output_outside_the_phase_folder(home: Path) -> None:
    """An output in another phase's folder is refused, naming the allowed folder."""
    plan, ctx = task_plan(home)
    bad = f"runs/{RUN_ID}/workspace/STRATEGIZING/facts.md"
    one_error(
        validate_tasks(edit(plan, 0, output_path=bad), ctx), "outside the allowed folder", FOLDER
    )


def test_outputs_folder_in_a_non_final_stage(home: Path) -> None:
    """outputs/<run_id>/ is refused outside the last stage of GENERATING_OUTPUT."""
    plan, ctx = task_plan(home, "P4-S01")
    errors = validate_tasks(edit(plan, 0, output_path=f"outputs/{RUN_ID}/report.md"), ctx)
    one_error(errors, "only for the last stage of GENERATING_OUTPUT")


def test_outputs_folder_in_the_publishing_stage(home: Path) -> None:
    """The publishing stage may write into outputs/<run_id>/ but not into another run's folder."""
    plan, ctx = task_plan(home, "P4-S02")
    assert plan.tasks[0].output_path == f"outputs/{RUN_ID}/report.md"
    other = "outputs/run-20250101-000000-001/report.md"
    one_error(validate_tasks(edit(plan, 0, output_path=other), ctx), f"outputs/{RUN_ID}/")


def test_output_that_exists_or_repeats(home: Path) -> None:
    """An output must be a new file, written by one task only."""
    plan, ctx = task_plan(home)
    existing = home / FOLDER / "facts_01.md"
    existing.parent.mkdir(parents=True)
    existing.write_text("old", "utf-8")
    one_error(validate_tasks(plan, ctx), "already exists")
    existing.unlink()
    twice = edit(plan, 1, output_path=plan.tasks[0].output_path)
    assert any("output of 2 tasks" in error for error in validate_tasks(twice, ctx))


def test_duplicate_and_bad_ids(home: Path) -> None:
    """Task ids must be unique and of the form <stage_id>-TNN."""
    plan, ctx = task_plan(home)
    duplicate = edit(plan, 1, task_id="P1-S01-T01")
    assert any("used 2 times" in error for error in validate_tasks(duplicate, ctx))
    one_error(validate_tasks(edit(plan, 0, task_id="P1-S01-T1"), ctx), "P1-S01-T01", "form")


def test_wrong_parent_stage(home: Path) -> None:
    """A task id or stage_id of another stage is refused."""
    plan, ctx = task_plan(home)
    errors = validate_tasks(edit(plan, 0, task_id="P2-S01-T01", stage_id="P2-S01"), ctx)
    assert len(errors) == 2
    assert "'P2-S01-T01' is not of the form P1-S01-T01" in errors[0]
    assert "stage_id 'P2-S01' must be 'P1-S01'" in errors[1]


def test_order_gaps(home: Path) -> None:
    """Execution orders must be exactly 1..n."""
    plan, ctx = task_plan(home)
    one_error(validate_tasks(edit(plan, 1, execution_order=3), ctx), "P1-S01-T02=3", "exactly 1..2")


def test_status_and_run_id(home: Path) -> None:
    """A new plan is PENDING and belongs to the context's run."""
    plan, ctx = task_plan(home)
    errors = validate_tasks(
        edit(plan, 0, status=Status.COMPLETED, run_id="run-20250101-000000-001"), ctx
    )
    assert len(errors) == 2
    assert any("must be PENDING" in error for error in errors)


def test_chained_reference_to_an_earlier_output(home: Path) -> None:
    """A task may read the output of an earlier task of the same plan, not a later one."""
    plan, ctx = task_plan(home)
    first, second = plan.tasks[0].output_path, plan.tasks[1].output_path
    assert validate_tasks(edit(plan, 1, related_references=[first]), ctx) == []
    one_error(validate_tasks(edit(plan, 0, related_references=[second]), ctx), "no such file")


def test_stages(home: Path) -> None:
    """Stage ids start with the phase id, orders are 1..n, ids are new, goals are given."""
    ctx = stage_context(home)
    plan = StagesPlan(stages=[stage("P1-S01"), stage("P1-S02", 2)])
    assert validate_stages(plan, ctx.model_copy(update={"stages": []})) == []
    errors = validate_stages(plan, ctx)
    assert errors[0] == "stage P1-S01: this id already exists in major_stages.md"
    bad = StagesPlan(stages=[stage("P2-S01"), stage("P1-S02", 3)])
    errors = validate_stages(bad, ctx.model_copy(update={"stages": []}))
    assert any("'P2-S01' is not of the form P1-S01" in error for error in errors)
    assert any("phase_id 'P2' must be 'P1'" in error for error in errors)
    assert any("exactly 1..2" in error for error in errors)
    empty_goal = StagesPlan(stages=[stage("P1-S01").model_copy(update={"stage_goal": " "})])
    one_error(
        validate_stages(empty_goal, ctx.model_copy(update={"stages": []})), "stage_goal is empty"
    )


def tool_context(home: Path) -> PlanContext:
    """The context of a POST tool plan for the publishing task."""
    plan, ctx = task_plan(home, "P4-S02")
    return ctx.model_copy(update={"task": plan.tasks[0]})


def test_tool_tasks(home: Path) -> None:
    """Tool types must be available; parent, timing and ids must match the task."""
    ctx = tool_context(home)
    plan = BuiltinPlanner().plan_tools(ctx, Timing.POST)
    assert validate_tool_tasks(plan, ctx, Timing.POST) == []
    tools = list(plan.tool_tasks)
    tools[0] = tools[0].model_copy(update={"tool_type": "paint_program"})
    one_error(
        validate_tool_tasks(ToolTasksPlan(tool_tasks=tools), ctx, Timing.POST),
        "'paint_program' is not available",
        "web_search, data_visualization",
    )
    tools = [plan.tool_tasks[0].model_copy(update={"parent_task_id": "P4-S01-T01"})]
    one_error(
        validate_tool_tasks(ToolTasksPlan(tool_tasks=tools), ctx, Timing.POST), "parent_task_id"
    )
    errors = validate_tool_tasks(plan, ctx, Timing.PRE)
    assert any("P4-S02-T01-PRE-01" in error for error in errors)
    assert any("timing POST must be PRE" in error for error in errors)


def test_phase0(home: Path) -> None:
    """Phase 0 is exactly T00, T02, T03, T04 with the fixed outputs."""
    ctx = context(home, REQUEST)
    plan = BuiltinPlanner().plan_phase0(ctx)
    assert validate_phase0(plan, ctx) == []
    short = TasksPlan(tasks=list(plan.tasks[:3]))
    assert any("exactly T00, T02, T03, T04" in error for error in validate_phase0(short, ctx))
    moved = edit(plan, 3, output_path=f"runs/{RUN_ID}/workspace/ANALYZING/other.md")
    one_error(validate_phase0(moved, ctx), "T04", "first_analysis.md")
    one_error(validate_phase0(edit(plan, 0, stage_id="P1-S01"), ctx), "must be P0-S01")


def past(
    instruction_id: str, status: InstructionStatus = InstructionStatus.ACTIVE
) -> UserInstruction:
    """An instruction of an earlier run."""
    return UserInstruction(
        instruction_id=instruction_id,
        run_id="run-20250101-000000-001",
        instruction_type="LANGUAGE",
        content="Write in English.",
        status=status,
    )


def test_proposal_supersedes(home: Path) -> None:
    """A proposal may supersede only known ACTIVE instructions, each at most once."""
    ctx = context(
        home,
        REQUEST,
        past_instructions=[past("I0001"), past("I0002", InstructionStatus.SUPERSEDED)],
    )

    def proposal(*supersedes: list[str], kind: str = "LANGUAGE") -> Proposal:
        items = [
            ProposedInstruction(
                instruction_type=kind, content="Korean", justification="j", supersedes=s
            )
            for s in supersedes
        ]
        return Proposal(understanding="u", instructions=items)

    assert validate_proposal(proposal(["I0001"]), ctx) == []
    one_error(
        validate_proposal(proposal(["I0009"]), ctx), "unknown instruction 'I0009'", "allowed: I0001"
    )
    one_error(validate_proposal(proposal(["I0002"]), ctx), "not ACTIVE")
    one_error(validate_proposal(proposal(["I0001"], ["I0001"]), ctx), "at most one")
    one_error(validate_proposal(proposal([], kind="language"), ctx), "UPPER_CASE")
