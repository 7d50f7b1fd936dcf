"""Instant roles behind the real interfaces, so a benchmark times only orchestration.

They plan a fixed shape (4 phases × STAGES stages × TASKS tasks, or the stages and tasks a
NoopPlanner is given) and "execute" without work.
"""

from __future__ import annotations

from pathlib import Path

from multiverse.models import AssetType, MajorStage, Task, Timing
from multiverse.roles import (
    Message,
    Mode,
    ModeDecision,
    PlanContext,
    ProducedFile,
    Proposal,
    ProposedInstruction,
    ResultSignal,
    StagesPlan,
    TaskAssignment,
    TasksPlan,
    ToolAssignment,
    ToolTasksPlan,
)

STAGES = 3
TASKS = 4


class NoopPlanner:
    """Plans the fixed shape instantly: `stages` stages per phase, `tasks` tasks per stage."""

    def __init__(self, stages: int = STAGES, tasks: int = TASKS) -> None:
        self.stages = stages
        self.tasks = tasks

    def decide_mode(
        self, request: str, has_past_runs: bool, pending_ledger: str | None = None
    ) -> ModeDecision:
        """A structured run."""
        mode = Mode.CONTINUOUS_RUN if has_past_runs else Mode.INITIAL_RUN
        return ModeDecision(mode=mode, reason="benchmark")

    def plan_phase0(self, context: PlanContext) -> TasksPlan:
        """T00, T02, T03, T04."""
        request = f"runs/{context.run_id}/request.md"
        outputs = {
            "T00": f"runs/{context.run_id}/workspace",
            "T02": "db/user_instructions.md",
            "T03": "db/knowledge_base_catalog.md",
            "T04": f"runs/{context.run_id}/workspace/ANALYZING/first_analysis.md",
        }
        return TasksPlan(
            tasks=[
                Task(
                    task_id=task_id,
                    run_id=context.run_id,
                    stage_id="P0-S01",
                    task_name=task_id,
                    related_references=[request],
                    output_path=output,
                    execution_order=order,
                )
                for order, (task_id, output) in enumerate(outputs.items(), start=1)
            ]
        )

    def propose(self, context: PlanContext) -> Proposal:
        """One instruction."""
        return Proposal(
            understanding="benchmark",
            instructions=[
                ProposedInstruction(instruction_type="GOAL", content=context.request[:80])
            ],
        )

    def plan_stages(self, context: PlanContext) -> StagesPlan:
        """`stages` stages."""
        assert context.phase is not None
        phase = context.phase.phase_id
        return StagesPlan(
            stages=[
                MajorStage(
                    stage_id=f"{phase}-S{n:02d}",
                    run_id=context.run_id,
                    phase_id=phase,
                    stage_name=f"stage {n}",
                    execution_order=n,
                )
                for n in range(1, self.stages + 1)
            ]
        )

    def plan_tasks(self, context: PlanContext) -> TasksPlan:
        """`tasks` tasks."""
        assert context.stage is not None and context.phase is not None
        stage = context.stage.stage_id
        folder = f"runs/{context.run_id}/workspace/{context.phase.phase_name}"
        return TasksPlan(
            tasks=[
                Task(
                    task_id=f"{stage}-T{n:02d}",
                    run_id=context.run_id,
                    stage_id=stage,
                    task_name=f"task {n}",
                    related_references=[f"runs/{context.run_id}/request.md"],
                    output_path=f"{folder}/{stage}-T{n:02d}.md",
                    execution_order=n,
                )
                for n in range(1, self.tasks + 1)
            ]
        )

    def plan_tools(self, context: PlanContext, timing: Timing) -> ToolTasksPlan:
        """Never asked: the plans set no tool purposes."""
        raise AssertionError("no tool tasks in the benchmark shape")


class NoopExecutor:
    """Reports success at once, naming the output it would have written."""

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """COMPLETED with the planned output registered."""
        return ResultSignal(
            status="COMPLETED",
            outputs=[
                ProducedFile(
                    path=assignment.task.output_path,
                    asset_type=AssetType.ANALYSIS_REPORT,
                    summary="benchmark output",
                )
            ],
        )

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        """COMPLETED."""
        return ResultSignal(status="COMPLETED")

    def summarize(self, path: Path) -> str:
        """A fixed summary."""
        return "benchmark input"

    def simple_task(self, request: str, home: Path) -> str:
        """A fixed reply."""
        return "benchmark reply"


class SilentCommunicator:
    """Composes nothing worth printing."""

    def compose(self, message: Message) -> str:
        """An empty text."""
        return ""
