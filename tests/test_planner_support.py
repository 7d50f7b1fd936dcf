"""Builders shared by the planner tests: a real home under tmp_path and realistic PlanContexts.

No tests here; the helpers walk a run the way the Orchestrator and the Executor would (plan,
write the output file, register it in the catalog), so plans are checked against real state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from multiverse.home import Home, init_home
from multiverse.models import AssetType, CatalogEntry, MajorStage, Phase, Task, Timing
from multiverse.roles import PlanContext
from multiverse.store import parse_table_text
from planner.builtin import BuiltinPlanner

RUN_ID = "run-20260301-090000-001"
TOOL_TYPES = ["web_search", "data_visualization"]
ASSETS = {
    "assets/q1.md": "# Q1\n\nRevenue was 120 million KRW, up 12%.\n",
    "assets/q2.md": "# Q2\n\nRevenue was 131 million KRW.\n",
    "assets/q3.md": "# Q3\n\nRevenue was 150 million KRW; churn fell to 3%.\n",
    "assets/competitors.md": "# Competitors\n\nAcme holds 40% of the market.\n",
    "assets/시장_보고서.md": "# 시장 보고서\n\n시장 규모는 2조 원이다.\n",
}
PHASE_TYPES = {
    "ANALYZING": AssetType.ANALYSIS_REPORT,
    "STRATEGIZING": AssetType.STRATEGY_DOC,
    "REFINING_CONTENT": AssetType.REFINED_CONTENT,
}


def make_home(root: Path, assets: dict[str, str] | None = None, style: bool = True) -> Path:
    """An initialised home (shipped mcp_list.md included) with assets and a style guide."""
    init_home(Home(root))
    for relative, text in (ASSETS if assets is None else assets).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    if style:
        (root / "guidelines/style.md").write_text("# Style\n\nShort sentences.\n", "utf-8")
    return root


def write_request(home: Path, text: str, run_id: str = RUN_ID) -> None:
    """Write the run's request.md as the Orchestrator does at the run's entry."""
    path = home / "runs" / run_id / "request.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def scanned_catalog(home: Path) -> list[CatalogEntry]:
    """The catalog rows T03 would write for assets/ and guidelines/."""
    entries = []
    for folder, kind in (
        ("assets", AssetType.ORIGINAL_INPUT),
        ("guidelines", AssetType.GUIDELINE_DOC),
    ):
        for path in sorted((home / folder).rglob("*")):
            if path.is_file():
                relative = path.relative_to(home).as_posix()
                entries.append(CatalogEntry(file_path=relative, asset_type=kind, summary="x"))
    return entries


def template_phases(home: Path, run_id: str = RUN_ID) -> list[Phase]:
    """P1–P4 rows from the home's shipped db/templates/default_phases.md."""
    path = home / "db/templates/default_phases.md"
    columns = ("phase_id", "phase_name", "phase_purpose")
    table = parse_table_text(path.read_text("utf-8"), path, columns)
    return [
        Phase(phase_id=pid, run_id=run_id, phase_name=name, phase_purpose=purpose)
        for pid, name, purpose in table.rows
    ]


def context(home: Path, request: str, **changes: object) -> PlanContext:
    """A PlanContext for RUN_ID with the scanned catalog, template phases and tool types."""
    base: dict[str, object] = {
        "home": str(home),
        "run_id": RUN_ID,
        "request": request,
        "catalog": scanned_catalog(home),
        "phases": template_phases(home),
        "tool_types": TOOL_TYPES,
    }
    base.update(changes)
    return PlanContext.model_validate(base)


@dataclass
class Walk:
    """The record of a whole run walked through the builtin planner."""

    catalog: list[CatalogEntry]
    stages: list[MajorStage] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    tool_plans: dict[str, list[str]] = field(default_factory=dict)


def produce(home: Path, walk: Walk, path: str, kind: AssetType, source: str) -> None:
    """Write a file and register it in the catalog, as the Executor and Orchestrator would."""
    (home / path).parent.mkdir(parents=True, exist_ok=True)
    (home / path).write_text(f"# {source}\n\nMade offline.\n", encoding="utf-8")
    walk.catalog.append(
        CatalogEntry(
            file_path=path, run_id=RUN_ID, asset_type=kind, source_task_id=source, summary="x"
        )
    )


def walk_run(home: Path, request: str) -> Walk:
    """Plan Phase 0 and every phase, stage, task and tool task of a run, executing nothing."""
    planner = BuiltinPlanner()
    write_request(home, request)
    walk = Walk(catalog=scanned_catalog(home))
    phases = template_phases(home)
    base = context(home, request)
    phase0 = planner.plan_phase0(base)
    produce(home, walk, phase0.tasks[-1].output_path, AssetType.ANALYSIS_REPORT, "T04")
    for phase in phases:
        ctx = base.model_copy(update={"catalog": list(walk.catalog), "phase": phase})
        stages = planner.plan_stages(ctx.model_copy(update={"stages": list(walk.stages)}))
        walk.stages += stages.stages
        for stage in stages.stages:
            _walk_stage(home, walk, planner, ctx, phase, stage)
    return walk


def _walk_stage(
    home: Path,
    walk: Walk,
    planner: BuiltinPlanner,
    ctx: PlanContext,
    phase: Phase,
    stage: MajorStage,
) -> None:
    update = {"catalog": list(walk.catalog), "stages": list(walk.stages), "stage": stage}
    plan = planner.plan_tasks(ctx.model_copy(update=update | {"tasks": list(walk.tasks)}))
    walk.tasks += plan.tasks
    for task in plan.tasks:
        for timing, wanted in (
            (Timing.PRE, task.pre_tool_purpose),
            (Timing.POST, task.post_tool_purpose),
        ):
            if not wanted:
                continue
            tool_ctx = ctx.model_copy(update={"catalog": list(walk.catalog), "task": task})
            tools = planner.plan_tools(tool_ctx, timing).tool_tasks
            walk.tool_plans[tools[0].tool_task_id.rsplit("-", 1)[0]] = [t.tool_type for t in tools]
            if timing is Timing.PRE:
                folder = f"runs/{RUN_ID}/workspace/{phase.phase_name}"
                produce(
                    home,
                    walk,
                    f"{folder}/web_{task.task_id}.md",
                    AssetType.TOOL_OUTPUT,
                    task.task_id,
                )
        if task.output_path.startswith("outputs/"):
            kind = AssetType.FINAL_OUTPUT
        elif phase.phase_name == "GENERATING_OUTPUT":
            kind = AssetType.ASSEMBLY_PLAN
        else:
            kind = PHASE_TYPES[phase.phase_name]
        produce(home, walk, task.output_path, kind, task.task_id)
